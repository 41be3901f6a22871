"""The benchmarks' official flows by name: each benchmark's own scripts, run on answers for ``parity``.

They are the plug-ins' ``official`` parts (``cvdp_gym/benchmarks/<name>/official.py``,
:mod:`cvdp_gym.plugins`), keyed by our flow's name (``Problem.flow``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from cvdp_gym.parity.answers import Answer
from cvdp_gym.parity.benchmarks.sandboxed import BenchmarkVerdict
from cvdp_gym.plugins import PluginTable
from cvdp_gym.sandbox.base import Sandbox

__all__ = ["OFFICIAL_FLOWS", "OfficialFlow"]


class OfficialFlow(Protocol):
    """A benchmark's own scripts, run from a user's clone on a list of answers."""

    benchmark: str
    #: The keys of the official script's reading that parity compares with our flow's, in order.
    reading_keys: tuple[str, ...]

    def reading_passed(self, reading: dict[str, Any]) -> bool:
        """Whether the official script's reading of one answer is a pass."""
        ...

    def check(self, clone: Path) -> None: ...

    def run(
        self, answers: Sequence[Answer], *, sandbox: Sandbox, clone: Path, work: Path, jobs: int = 1,
        on_done: Callable[[Answer], None] = ...,
    ) -> dict[int, BenchmarkVerdict]: ...


#: Each official flow, by our flow's name (``Problem.flow``): the plug-ins' ``official`` parts.
OFFICIAL_FLOWS: PluginTable[OfficialFlow] = PluginTable(
    "official", "OFFICIAL_FLOWS", key=lambda f: f.benchmark, optional=True
)
