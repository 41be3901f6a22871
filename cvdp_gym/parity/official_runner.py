"""What a benchmark's official runner is, for the plug-ins that have one (CVDP's): the kit its
``official`` part is written against, apart from the table that loads it (:mod:`.cvdp`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.parity.answers import Answer
from cvdp_gym.parity.compare import ParityRow

__all__ = ["OfficialRunner"]


class OfficialRunner(Protocol):
    """A benchmark's official runner on a whole set of answers, beside this tool's harness runs."""

    def __call__(
        self, answers: list[Answer], *, runner: HarnessRunner, official_repo: Path, work: Path, python: str | None = None,
        threads: int = 1, jobs: int = 1, seed: int | None = None, timeout_s: float | None = None,
        on_step: Callable[[str], None] = ..., on_ours: Callable[[str], None] = ...,
    ) -> list[ParityRow]: ...
