"""The grading stages after extraction (syntax → interface → tests), run in this thread.

``run_stages`` is what one grading job does, wherever an executor runs it: it uses only a
``HarnessRunner`` (its lint and its harness run) and the interface check, never a cache or
an executor, so a worker process or a Ray node can call it with a runner of its own. A
failed stage stops the later ones, which are reported as not run (``passed`` None); a
sandbox that will not start ends them as ``infra_error``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from cvdp_gym.data.problems import SCORING_HARNESS, Problem
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
from cvdp_gym.sandbox.base import SandboxUnavailable


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
    """Grade extracted ``files`` (the format stage has passed), uncached.

    ``lint`` and ``interface`` turn the cheap pre-simulation stages on or off;
    ``workspace``: an agent's folder to grade from instead of the problem's context files;
    ``seed``: the harness's seed (a fresh one when None; the result records it);
    ``verdict``: ``testbench``, or ``testbench+reference`` (a test-bench pass is then checked
    against the problem's reference: :func:`cvdp_gym.grading.backed.back`).
    A sandbox that refuses to start (``SandboxUnavailable`` from a lint or harness run) is
    no verdict on the answer: it is graded ``infra_error`` (``GradeResult.infra_failure``).
    """
    try:
        result = _stages(runner, problem, files, lint=lint, interface=interface, workspace=workspace, seed=seed)
        if verdict == BACKED:
            result = back(runner, problem, files, result)
    except SandboxUnavailable as exc:
        result = infra_result(problem, files, f"the sandbox did not start: {exc}")
    result.randomised = list(problem_randomness(problem))
    return result


def _stages(
    runner: HarnessRunner,
    problem: Problem,
    files: dict[str, str],
    *,
    lint: bool,
    interface: bool,
    workspace: Path | None,
    seed: int | None,
) -> GradeResult:
    stages = [Stage("format", True, f"{len(files)} file(s)")]

    def stop(failure_class: str, reason: str, tail: str = "") -> GradeResult:
        stages.extend(Stage(n, None) for n in STAGES[len(stages):])
        return GradeResult(problem.id, stages, failure_class, reason, files=files, log_tail=tail[-LOG_TAIL_CHARS:])

    missing = runner.unavailable(problem)  # unsupported, or a repository not found
    if missing:
        return stop(UNSUPPORTED, missing)
    if problem.scoring != SCORING_HARNESS:
        return stop(UNSUPPORTED, f"{problem.category} answers are text scored against a reference (Grader.grade_response), not files")
    if problem.flow is not None:  # the benchmark's own flow compiles, checks and simulates at once
        return _from_flow(problem, files, runner.run(problem, files, seed=seed))
    if lint:
        linted = runner.lint(problem, files, workspace=workspace)
        detail = "; ".join(linted.errors[:3])
        stages.append(Stage("syntax", linted.ok, detail if not linted.ok else linted.simulator, linted.seconds))
        if linted.timed_out:  # killed (a cancelled job) or past its limit: says nothing of the answer
            return stop(TIMEOUT, f"the compile-only check did not finish: {detail or 'killed'}")
        if not linted.ok:
            if linted.gap:
                return stop(TOOLCHAIN_GAP, f"Icarus 11 rejected code a full SystemVerilog parser accepts: {detail}")
            return stop(BUILD_ERROR, detail or "does not compile", "\n".join(linted.errors))
    else:
        stages.append(Stage("syntax", None, "skipped"))
    if interface:
        t0 = time.monotonic()
        verdict = check_interface(problem, files)
        stages.append(Stage("interface", verdict.ok, verdict.detail, time.monotonic() - t0))
        if not verdict.ok:
            return stop(INTERFACE_ERROR, verdict.detail)
    else:
        stages.append(Stage("interface", None, "skipped"))
    harness = runner.run(problem, files, workspace=workspace, seed=seed)
    return _with_harness(problem, stages, files, harness)


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
