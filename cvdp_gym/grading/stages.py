"""The grading stages: one ``GradingStage`` interface, one ordered sequence the ``Grader`` runs.

The sequence is format → syntax → interface → tests → reference-backed → the stages plug-ins
add → quality. A stage is an object with a ``name`` and ``run(context)``; it reads the
``StageContext`` (the problem, the answer's files, the runner, the switches, the seed) and
the verdict so far, and adds its own outcome: a verdict stage appends its ``Stage`` to
``context.stages`` and, when it decides the verdict (a failure, or the tests' outcome), sets
``context.result``; a stage after the tests changes or adds to ``context.result``. Each stage
says itself when it has nothing to do (a verdict already decided, a switch off).

``run_stages`` runs every stage but quality, in this thread: what one grading job does,
wherever an executor runs it. It uses only a ``HarnessRunner``, never a cache or an
executor, so a worker process or a Ray node can call it with a runner of its own, and a
plug-in's stage is found there by name as in the grader's process. Quality
(:class:`cvdp_gym.grading.quality.QualityStage`) is the last stage: the ``Grader`` runs it on
the final verdict, in its own thread, past the verdict cache (its measurements have their own).

A plug-in adds a stage with no change here: a benchmark plug-in package (``cvdp_gym.plugins``:
built in, or named by a ``cvdp_gym.benchmarks`` entry point) whose ``stages`` module lists
``GradingStage`` objects in ``STAGES``. Its stages run after the reference-backed check, in
the order the packages are listed, their ``Stage`` after the four of ``result.STAGES`` in
``GradeResult.stages`` (the verdict cache keys on their names).

A failed stage stops the later verdict stages, which are reported as not run (``passed``
None); a sandbox that will not start ends them as ``infra_error``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from cvdp_gym.data.problems import SCORING_HARNESS, Problem
from cvdp_gym.errors import ConfigError, SandboxDied
from cvdp_gym.grading.backed import BACKED, TESTBENCH, back
from cvdp_gym.grading.interface import check_interface
from cvdp_gym.grading.result import (
    INTERFACE_ERROR,
    LOG_TAIL_CHARS,
    STAGES,
    GradeResult,
    Stage,
    infra_result,
)
from cvdp_gym.harness.randomness import problem_randomness
from cvdp_gym.harness.results import (
    BUILD_ERROR,
    HARNESS_ERROR,
    INFRA_ERROR,
    REACH_IN,
    TIMEOUT,
    TOOLCHAIN_GAP,
    UNSUPPORTED,
    HarnessResult,
)
from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.plugins import PluginTable
from cvdp_gym.sandbox.base import SandboxUnavailable

__all__ = [
    "BUILT_IN_STAGES",
    "PLUGIN_STAGES",
    "GradingStage",
    "StageContext",
    "job_stages",
    "run_stages",
    "stage_names",
]


@dataclass
class StageContext:
    """What a stage reads, and the verdict so far that it adds to.

    ``lint``, ``interface``: the cheap pre-simulation stages on or off; ``verdict``:
    ``testbench`` or ``testbench+reference``; ``workspace``: an agent's folder to grade from
    instead of the problem's context files; ``seed``: the harness's seed (None: a fresh one).
    ``stages``: the verdict stages run so far; ``result``: the verdict, once a stage decided it
    (always set for the stages after ``tests``).
    """

    problem: Problem
    files: dict[str, str]
    runner: HarnessRunner
    lint: bool = True
    interface: bool = True
    verdict: str = TESTBENCH
    seed: int | None = None
    workspace: Path | None = None
    stages: list[Stage] = field(default_factory=list)
    result: GradeResult | None = None

    def stop(self, failure_class: str, reason: str, tail: str = "") -> None:
        """Decide the verdict as a failure here: the verdict stages not run yet are listed as not run."""
        self.stages.extend(Stage(n, None) for n in STAGES[len(self.stages):])
        self.result = GradeResult(
            self.problem.id, self.stages, failure_class, reason, files=self.files, log_tail=tail[-LOG_TAIL_CHARS:],
        )


@runtime_checkable
class GradingStage(Protocol):
    """One stage of grading: its ``name`` and what it does to the verdict (``run``)."""

    name: str

    def run(self, context: StageContext) -> None:
        """Add this stage's outcome to ``context`` (see the module doc); nothing when it does not apply."""


class FormatStage:
    """The answer's files were found (extraction passed; the ``Grader`` extracts them), and
    whether this machine can grade the problem at all (``unsupported`` otherwise)."""

    name = "format"

    def run(self, context: StageContext) -> None:
        problem = context.problem
        context.stages.append(Stage("format", True, f"{len(context.files)} file(s)"))
        missing = context.runner.unavailable(problem)  # unsupported, or a repository not found
        if missing:
            context.stop(UNSUPPORTED, missing)
        elif problem.scoring != SCORING_HARNESS:
            context.stop(
                UNSUPPORTED,
                f"{problem.category} answers are text scored against a reference (Grader.grade_response), not files",
            )


class SyntaxStage:
    """A compile-only check (the runner's lint); skipped when ``lint`` is off or the
    problem's benchmark flow compiles, checks and simulates in one run (the tests stage)."""

    name = "syntax"

    def run(self, context: StageContext) -> None:
        if context.result is not None or context.problem.flow is not None:
            return
        if not context.lint:
            context.stages.append(Stage("syntax", None, "skipped"))
            return
        linted = context.runner.lint(context.problem, context.files, workspace=context.workspace)
        detail = "; ".join(linted.errors[:3])
        context.stages.append(Stage("syntax", linted.ok, detail if not linted.ok else linted.simulator, linted.seconds))
        if linted.timed_out:  # killed (a cancelled job) or past its limit: says nothing of the answer
            context.stop(TIMEOUT, f"the compile-only check did not finish: {detail or 'killed'}")
        elif not linted.ok and linted.gap:
            context.stop(TOOLCHAIN_GAP, f"Icarus 11 rejected code a full SystemVerilog parser accepts: {detail}")
        elif not linted.ok:
            context.stop(BUILD_ERROR, detail or "does not compile", "\n".join(linted.errors))


class InterfaceStage:
    """The ports the harness expects (:func:`cvdp_gym.grading.interface.check_interface`)."""

    name = "interface"

    def run(self, context: StageContext) -> None:
        if context.result is not None or context.problem.flow is not None:
            return
        if not context.interface:
            context.stages.append(Stage("interface", None, "skipped"))
            return
        t0 = time.monotonic()
        verdict = check_interface(context.problem, context.files)
        context.stages.append(Stage("interface", verdict.ok, verdict.detail, time.monotonic() - t0))
        if not verdict.ok:
            context.stop(INTERFACE_ERROR, verdict.detail)


class TestsStage:
    """The harness's run (or the benchmark flow's single run, which also decides the syntax
    and interface stages): the verdict."""

    name = "tests"

    def run(self, context: StageContext) -> None:
        if context.result is not None:
            return
        problem, files = context.problem, context.files
        if problem.flow is not None:
            context.result = _from_flow(problem, files, context.runner.run(problem, files, seed=context.seed))
            return
        harness = context.runner.run(problem, files, workspace=context.workspace, seed=context.seed)
        context.result = _with_harness(problem, context.stages, files, harness)


class ReferenceStage:
    """Under ``testbench+reference``, a test-bench pass checked against the problem's
    reference (:func:`cvdp_gym.grading.backed.back`); nothing under ``testbench``."""

    name = "reference"

    def run(self, context: StageContext) -> None:
        if context.verdict == BACKED and context.result is not None:
            context.result = back(context.runner, context.problem, context.files, context.result)


#: The built-in stages a grading job runs, in order.
BUILT_IN_STAGES: tuple[GradingStage, ...] = (FormatStage(), SyntaxStage(), InterfaceStage(), TestsStage(), ReferenceStage())
#: The stages plug-ins add (each plug-in package's ``stages`` module, ``STAGES``), by name.
PLUGIN_STAGES: PluginTable[GradingStage] = PluginTable("stages", "STAGES")


#: Names a plug-in's stage cannot take: the built-in stages' and quality's.
RESERVED_NAMES = frozenset({*STAGES, *(s.name for s in BUILT_IN_STAGES), "quality"})


def job_stages() -> tuple[GradingStage, ...]:
    """The stages a grading job runs, in order: the built-in ones, then the plug-ins' (one
    claiming a built-in stage's name is a ``ConfigError``)."""
    added = tuple(PLUGIN_STAGES.values())
    taken = sorted(RESERVED_NAMES.intersection(s.name for s in added))
    if taken:
        raise ConfigError(f"a plug-in's grading stage takes a built-in stage's name: {', '.join(taken)}")
    return (*BUILT_IN_STAGES, *added)


def stage_names() -> tuple[str, ...]:
    """The names of the plug-ins' stages (the verdict cache keys on them; empty: none)."""
    return tuple(PLUGIN_STAGES)


def run_stages(
    runner: HarnessRunner,
    problem: Problem,
    files: dict[str, str],
    *,
    lint: bool,
    interface: bool,
    workspace: Path | None = None,
    seed: int | None = None,
    verdict: str = TESTBENCH,
) -> GradeResult:
    """Grade extracted ``files`` (the answer's files were found), uncached: every stage of
    ``job_stages()`` in order (the ``StageContext`` fields say what the switches mean).

    A sandbox that refuses to start (``SandboxUnavailable`` from a lint or harness run), or is
    killed from outside in the middle of one (``SandboxDied``), is no verdict on the answer: it
    is graded ``infra_error`` (``GradeResult.infra_failure``).
    """
    context = StageContext(
        problem, files, runner, lint=lint, interface=interface, verdict=verdict, seed=seed, workspace=workspace,
    )
    try:
        for stage in job_stages():
            stage.run(context)
        assert context.result is not None, "the tests stage always decides the verdict"
        result = context.result
    except SandboxDied as exc:
        result = infra_result(problem, files, str(exc))
    except SandboxUnavailable as exc:
        result = infra_result(problem, files, f"the sandbox did not start: {exc}")
    result.randomised = list(problem_randomness(problem))
    return result


def _from_flow(problem: Problem, files: dict[str, str], run: HarnessResult) -> GradeResult:
    """The stages of a benchmark flow's single run: a build failure fails ``syntax`` (and so
    does a ``reach_in``: no reward above a build error's), an interface failure
    ``interface``, anything else after them ``tests``."""
    failure = run.failure_class
    if failure in (UNSUPPORTED, HARNESS_ERROR, INFRA_ERROR):
        stages = [Stage("format", True, f"{len(files)} file(s)")] + [Stage(n, None) for n in STAGES[1:]]
    else:
        built = failure not in (BUILD_ERROR, TOOLCHAIN_GAP, REACH_IN)
        bound = built and failure != INTERFACE_ERROR
        stages = [
            Stage("format", True, f"{len(files)} file(s)"),
            Stage("syntax", built, "" if built else run.reason),
            Stage("interface", bound if built else None, "" if bound or not built else run.reason),
            Stage("tests", run.passed if bound else None, run.reason if bound else "", run.wall_s),
        ]
    return GradeResult(
        problem.id, stages, failure, run.reason, tests=run.tests, files=files, log_tail=run.log_tail[-LOG_TAIL_CHARS:],
        failures=run.failures, official=dict(run.official), defect=run.defect, services=service_runs(run),
    )


def _with_harness(problem: Problem, stages: list[Stage], files: dict[str, str], harness: HarnessResult) -> GradeResult:
    """The verdict once the harness ran; a skipped syntax stage takes the harness's word, and
    a ``reach_in`` fails it whatever the compile-only check said (graded as a build error)."""
    if harness.failure_class == REACH_IN:
        stages[1:] = [Stage("syntax", False, harness.reason), Stage("interface", None)]
        stages.append(Stage("tests", None))
        return GradeResult(
            problem.id, stages, REACH_IN, harness.reason, tests=harness.tests, files=files,
            log_tail=harness.log_tail[-LOG_TAIL_CHARS:], seed=harness.seed, services=service_runs(harness),
        )
    if stages[1].passed is None and harness.failure_class in (BUILD_ERROR, TOOLCHAIN_GAP):
        stages[1] = Stage("syntax", False, harness.reason)
    elif stages[1].passed is None:
        stages[1] = Stage("syntax", True, "compiled in the harness")
    stages.append(Stage("tests", harness.passed, harness.reason, harness.wall_s))
    return GradeResult(
        problem.id,
        stages,
        harness.failure_class,
        harness.reason,
        tests=harness.tests,
        files=files,
        log_tail=harness.log_tail[-LOG_TAIL_CHARS:],
        failures=harness.failures,
        seed=harness.seed,
        services=service_runs(harness),
    )


def service_runs(harness: HarnessResult) -> list[dict[str, Any]]:
    """What a verdict keeps of each harness service (``GradeResult.services``)."""
    return [
        {"name": s.name, "passed": s.passed, "returncode": s.returncode, "log_tail": s.log_tail[-LOG_TAIL_CHARS:]}
        for s in harness.services
    ]
