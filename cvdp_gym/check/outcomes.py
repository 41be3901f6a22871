"""What one ``check`` job gave: its verdict (one per seed for a randomised harness), whether it
matches the expected one, and the results file it is appended to (read back to resume).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cvdp_gym.check.jobs import REFERENCE
from cvdp_gym.harness.results import HarnessResult
from cvdp_gym.jsonl import read_objects

__all__ = ["CheckOutcome", "read_done"]

@dataclass
class CheckOutcome:
    job_key: str
    problem_id: str
    name: str
    expected: str
    result: HarnessResult
    #: A randomised harness run with several seeds: ``{"seed", "verdict"}`` per run.
    seed_verdicts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def verdicts(self) -> list[str]:
        return [v["verdict"] for v in self.seed_verdicts] or [self.result.verdict]

    @property
    def flaky(self) -> bool:
        """Runs with different seeds gave different verdicts."""
        return len(set(self.verdicts)) > 1

    @property
    def matches(self) -> bool:
        """Every run got the expected verdict; a labelled benchmark defect's reference may
        fail (the label says why, ``Problem.defect``)."""
        return all(v == self.expected for v in self.verdicts) or self.labelled_defect

    @property
    def labelled_defect(self) -> bool:
        """The reference of a problem the benchmark itself gets wrong (known, labelled)."""
        return self.name == REFERENCE and self.result.defect is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.job_key,
            "id": self.problem_id,
            "name": self.name,
            "expected": self.expected,
            "verdict": self.result.verdict,
            "matches": self.matches,
            "flaky": self.flaky,
            "seed_verdicts": self.seed_verdicts,
            "result": self.result.to_dict(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckOutcome:
        result = HarnessResult.from_dict(data["result"])
        return cls(data["key"], data["id"], data["name"], data["expected"], result, list(data.get("seed_verdicts") or []))


def read_done(path: Path) -> dict[str, CheckOutcome]:
    """Outcomes already in a results file (a torn last line is ignored)."""
    done: dict[str, CheckOutcome] = {}
    for row in read_objects(path):
        try:
            outcome = CheckOutcome.from_json(row)
        except (KeyError, TypeError, AttributeError, ValueError):
            continue  # a line from another tool, or hand-edited: run that job again
        if isinstance(outcome.job_key, str):
            done[outcome.job_key] = outcome
    return done
