"""The ``verdict`` option: a reward that rests on the test bench alone, or also on the reference.

A benchmark's test bench sees only the cycles and outputs it checks: on seeded single-site
mutants of the references, RTLLM's own test benches pass about a third and VerilogEval's a
few percent (``cvdp-gym audit``). A reward that passes such an answer teaches the bug. With
``verdict="testbench+reference"`` an answer passes only when its test bench passes **and**
the reference-equivalence grader (:mod:`cvdp_gym.equivalence.flow`: a differential
simulation, then a formal check) finds it equivalent to the problem's reference design. The
second grading runs only after the test bench passed, so most wrong answers cost nothing more.

Contract:

- ``VERDICTS``: ``testbench`` (the default: today's verdict) and ``testbench+reference``;
  ``check_verdict`` refuses anything else with a one-line ``ConfigError``.
- ``reference_check(problem)``: the ``ReferenceCheck`` that grades an answer to ``problem``
  against its reference (VerilogEval v1/v2, RTLLM, CVDP problems that carry a reference
  solution), or a one-line reason why there is none (no reference, a repository problem).
  A training set's problem (``grader="reference"``) is its own check: its test bench *is*
  the reference, so nothing runs twice.
- ``equivalence(passed, failure_class)``: what a reference-grader verdict says: ``equivalent``
  for its pass (the grader passes only what a stage decided: a simulation that covered the
  design, or a formal proof or bound deep enough); ``different`` for a mismatch, a
  counterexample or other ports; anything else (``undecided``, a time limit, a design the
  grader cannot drive, a build the reference toolchain refuses) is ``undecided``.
- ``without_reference(problems)`` names the problems that cannot be backed and why;
  ``require_references`` also refuses (``ConfigError``) a selection where none can.
- ``back(runner, problem, files, result)``: a test-bench pass kept only when the answer is
  ``equivalent``; else the ``tests`` stage fails with ``not_equivalent``, ``undecided`` or
  ``no_reference`` (the last two ``excluded``: not the answer's fault, never a pass).
  ``GradeResult.reference_check`` records the check either way; ``official`` stays the
  benchmark's own reading, untouched.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cvdp_gym.data.benchmarks.catalog import BENCHMARKS
from cvdp_gym.data.problems import REFERENCE_GRADER, SCORING_HARNESS, Problem
from cvdp_gym.errors import ConfigError
from cvdp_gym.grading.result import (
    INTERFACE_ERROR,
    NO_REFERENCE,
    NOT_EQUIVALENT,
    UNDECIDED,
    GradeResult,
    Stage,
)
from cvdp_gym.harness.compose import HarnessError, parse_services
from cvdp_gym.harness.results import TEST_FAILURE
from cvdp_gym.harness.runner import HarnessRunner

__all__ = [
    "BACKED",
    "DIFFERENT",
    "EQUIVALENT",
    "TESTBENCH",
    "VERDICTS",
    "ReferenceCheck",
    "back",
    "check_verdict",
    "equivalence",
    "reference_check",
    "require_references",
    "without_reference",
]

TESTBENCH = "testbench"
BACKED = "testbench+reference"
VERDICTS = (TESTBENCH, BACKED)
#: What a reference-grader verdict says about an answer (``equivalence``).
EQUIVALENT, DIFFERENT = "equivalent", "different"
#: The reference grader's failure classes that show the answer computes something else: a
#: mismatch or a counterexample, or ports other than the reference's.
_DIFFERS = (TEST_FAILURE, INTERFACE_ERROR)
_MODULE = re.compile(r"\bmodule\s+([A-Za-z_]\w*)")


def check_verdict(name: str) -> str:
    """``name`` if it is a known verdict option, else a one-line ``ConfigError``."""
    if name not in VERDICTS:
        raise ConfigError(f"unknown verdict {name!r}; expected {' or '.join(VERDICTS)}")
    return name


@dataclass(frozen=True)
class ReferenceCheck:
    """How an answer to ``problem`` is graded against its reference.

    ``twin``: the problem as the reference grader sees it (one file, ``twin.targets[0]``,
    whose reference is the reference design); ``sources``: the answer's files joined, in
    order, into that one file (files the answer does not give come from the problem's
    context); ``header``: text every answer follows (VerilogEval v1's module header).
    ``same``: the problem is graded by the reference already (a training set).
    """

    problem: Problem
    twin: Problem
    sources: tuple[str, ...] = ()
    header: str = ""
    same: bool = False

    def answer(self, files: Mapping[str, str]) -> dict[str, str]:
        """The answer's files as the twin's one file."""
        if self.same:
            return dict(files)
        parts = [files.get(path, self.problem.context.get(path, "")) for path in self.sources]
        return {self.twin.targets[0]: _joined(self.header, parts)}


def _joined(header: str, parts: list[str]) -> str:
    return "\n".join([header, *parts] if header else parts)


def _cvdp_design(problem: Problem) -> tuple[str | None, tuple[str, ...]]:
    """A CVDP harness's top module and the sources it compiles (``TOPLEVEL``, ``VERILOG_SOURCES``)."""
    try:
        services = parse_services(problem.harness)
    except HarnessError:
        return None, ()
    env = next((s.environment for s in services if s.environment.get("TOPLEVEL")), {})
    sources = tuple(p.removeprefix("/code/") for p in env.get("VERILOG_SOURCES", "").split())
    return env.get("TOPLEVEL") or None, sources


def reference_check(problem: Problem) -> ReferenceCheck | str:
    """The check of answers to ``problem`` against its reference, or why there is none."""
    if problem.grader == REFERENCE_GRADER:
        return ReferenceCheck(problem, problem, same=True)
    if problem.repo is not None:
        return "a repository problem: its reference is a patch to a repository, not a design to compare with"
    if not problem.reference or not problem.targets:
        return "the problem has no reference design"
    header = str(problem.extra.get("header") or "")
    top = problem.extra.get("module")
    sources: tuple[str, ...] = problem.targets
    if problem.flow is None:  # a CVDP harness: the sources its simulator compiles
        top, compiled = _cvdp_design(problem)
        sources = compiled or problem.targets
    elif (bench := BENCHMARKS.get(problem.benchmark)) is not None and bench.top_module:
        top = bench.top_module
    elif header:
        found = _MODULE.search(header)
        top = found.group(1) if found else None
    if not top:
        return "the problem names no top module to compare"
    parts = []
    for path in sources:
        text = problem.reference.get(path, problem.context.get(path))
        if text is None:
            return f"the reference solution has no file {path}"
        parts.append(text)
    target = sources[0]
    extra: dict[str, Any] = {"top": str(top), "name": problem.id}
    if "equivalence" in problem.extra:
        extra["equivalence"] = problem.extra["equivalence"]
    twin = dataclasses.replace(
        problem, grader=REFERENCE_GRADER, toolchain="cvdp-sim", harness={}, context={}, targets=(target,),
        reference={target: _joined(header, parts)}, defect=None, extra=extra,
    )
    return ReferenceCheck(problem, twin, sources, header)


def without_reference(problems: Iterable[Problem]) -> list[tuple[str, str]]:
    """``(problem id, why)`` for each harness problem whose answers cannot be backed by a reference."""
    out = []
    for problem in problems:
        if problem.scoring == SCORING_HARNESS:
            check = reference_check(problem)
            if isinstance(check, str):
                out.append((problem.id, check))
    return out


def require_references(problems: Iterable[Problem]) -> list[tuple[str, str]]:
    """``without_reference(problems)``, or a one-line ``ConfigError`` when not one of the harness
    problems has a reference (``testbench+reference`` could then pass nothing)."""
    chosen = [p for p in problems if p.scoring == SCORING_HARNESS]
    missing = without_reference(chosen)
    if chosen and len(missing) == len(chosen):
        raise ConfigError(
            f"verdict {BACKED!r} needs problems with a reference design, and none of these {len(chosen)} has one "
            f"({missing[0][1]}); use verdict {TESTBENCH!r}"
        )
    return missing


def equivalence(passed: bool, failure_class: str | None) -> str:
    """``equivalent``, ``different`` or ``undecided``: a reference-grader verdict read as proof
    (its pass, a difference it showed, or anything else)."""
    if passed:
        return EQUIVALENT
    return DIFFERENT if failure_class in _DIFFERS else UNDECIDED


def back(runner: HarnessRunner, problem: Problem, files: Mapping[str, str], result: GradeResult) -> GradeResult:
    """``result`` (the test bench's verdict on ``files``) under ``testbench+reference``.

    A failed test bench stays as it is (nothing more runs). A pass is checked against the
    reference and kept only when the answer is equivalent. ``SandboxUnavailable`` from the
    reference grader's run propagates (the caller scores ``infra_error``)."""
    if not result.passed:
        return result
    check = reference_check(problem)
    if isinstance(check, str):
        result.reference_check = {"verdict": NO_REFERENCE, "reason": check}
        return _refused(result, NO_REFERENCE, f"the test bench passed, but {check}: the backed verdict cannot pass it")
    start = time.monotonic()
    if check.same:
        passed, failure, reason, official = result.passed, result.failure_class, result.reason, result.official
    else:
        run = runner.run(check.twin, check.answer(files))
        passed, failure, reason, official = run.passed, run.failure_class, run.reason, run.official
    verdict = equivalence(passed, failure)
    result.reference_check = {
        "verdict": verdict,
        "passed": passed,
        "failure_class": failure,
        "reason": reason[:500],
        "formal": (official.get("formal") or {}).get("verdict"),
        "simulation": (official.get("simulation") or {}).get("verdict"),
        "label": str(official.get("label") or "")[:500],
        "seconds": round(time.monotonic() - start, 3),
    }
    if verdict == EQUIVALENT:
        return result
    if verdict == DIFFERENT:
        return _refused(result, NOT_EQUIVALENT, f"the test bench passed, but the answer differs from the reference: {reason}")
    return _refused(result, UNDECIDED, f"the test bench passed, but equivalence with the reference was not decided: {reason}")


def _refused(result: GradeResult, failure_class: str, reason: str) -> GradeResult:
    """The test bench's pass turned into a failure of the ``tests`` stage."""
    reason = reason[:600]
    seconds = result.stage("tests").seconds + float(result.reference_check.get("seconds") or 0.0)
    result.stages = [s if s.name != "tests" else Stage("tests", False, reason, seconds) for s in result.stages]
    result.failure_class, result.reason = failure_class, reason
    return result
