"""The design a verification task checks: the source problem's reference, as one module text.

Contract: ``design_under_test(problem)`` is ``problem``'s reference design with its top (None
without one); a posed task problem keeps it under ``extra["design"]`` (``as_dict``), and
``DesignUnderTest.as_problem()`` is the reference-graded problem the seeded bugs are checked
against (:mod:`.mutants`)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from cvdp_gym.data.benchmarks.catalog import BENCHMARKS
from cvdp_gym.data.problems import REFERENCE_GRADER, Problem
from cvdp_gym.tasks.names import DESIGN_FILE

__all__ = ["DesignUnderTest", "design_under_test"]

_MODULE = re.compile(r"\bmodule\b")


@dataclass(frozen=True)
class DesignUnderTest:
    """The design a task checks: its file as the source problem names it, its top, its text."""

    source_id: str
    target: str
    top: str
    text: str
    #: The source problem's reference-grader settings (``extra["equivalence"]``), if any.
    equivalence: dict[str, Any] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def as_problem(self) -> Problem:
        """The reference-graded design problem (the judge of whether a mutant is a real bug)."""
        extra: dict[str, Any] = {"top": self.top}
        if self.equivalence:
            extra["equivalence"] = dict(self.equivalence)
        return Problem(
            id=self.source_id, categories=(), agentic=False, prompt="", context={}, targets=(self.target,),
            harness={}, reference={self.target: self.text}, grader=REFERENCE_GRADER, extra=extra,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DesignUnderTest:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


def design_under_test(problem: Problem) -> DesignUnderTest | None:
    """``problem``'s reference design as a whole module text with its top, or None without one."""
    target = problem.targets[0] if problem.targets else ""
    reference = problem.reference or {}
    text = reference.get(target) or next(iter(reference.values()), "")
    if not text.strip():
        return None
    header = str(problem.extra.get("header") or "")
    if header and not _MODULE.search(text):  # a completion (VerilogEval v1) follows its header
        text = header.rstrip() + "\n" + text
    bench = BENCHMARKS.get(problem.benchmark)
    top = problem.extra.get("top") or problem.extra.get("module") or (bench.top_module if bench else None)
    top = str(top or PurePosixPath(target or DESIGN_FILE).stem)
    settings = problem.extra.get("equivalence")
    return DesignUnderTest(problem.id, target or DESIGN_FILE, top, text, dict(settings) if isinstance(settings, dict) else {})
