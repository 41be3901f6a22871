"""What the official side of a parity run said about one answer: its outcome and why, for CVDP's
official runner (:mod:`cvdp_gym.benchmarks.cvdp.official`) and the other benchmarks' own scripts
(:mod:`cvdp_gym.parity.benchmarks`) alike. A failure of the machine (``MACHINE``) or no result
(``MISSING``) is reported apart, never as a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["FAILED", "MACHINE", "MISSING", "PASSED", "OfficialVerdict"]

PASSED, FAILED, MACHINE, MISSING = "passed", "failed", "machine", "missing"


@dataclass
class OfficialVerdict:
    """The official runner's outcome for one answer (by official id)."""

    id: str
    outcome: str  # PASSED, FAILED, MACHINE or MISSING
    reason: str = ""
    logs: list[str] = field(default_factory=list)  # paths of the services' logs
    log_tail: str = ""
    seconds: float = 0.0
