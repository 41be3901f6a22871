"""The answer ``cvdp-gym debug`` lays out: a file or folder, or one an eval run recorded."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from cvdp_gym.errors import ConfigError


@dataclass(frozen=True)
class AnswerOptions:
    """``--answer``, ``--run``, ``--sample`` (none given: the problem's reference solution)."""

    answer: Annotated[
        Path | None,
        typer.Option(help="A response text as a model would answer (parsed as grading parses it), or a folder of workspace files."),
    ] = None
    run: Annotated[Path | None, typer.Option("--run", help="An eval run folder: take the answer (and harness seed) it recorded for the problem.")] = None
    sample: Annotated[int | None, typer.Option(help="With --run: which sample (default: the first recorded).")] = None

    def validate(self) -> None:
        """Raise :class:`ConfigError` when the options name two answers, or a sample of no run."""
        if self.answer is not None and self.run is not None:
            raise ConfigError("give --answer or --run, not both")
        if self.sample is not None and self.run is None:
            raise ConfigError("--sample goes with --run")

    @property
    def named(self) -> bool:
        """Whether an answer was named (else the reference, or the folder as it is)."""
        return self.answer is not None or self.run is not None
