"""The baseline row of the test-bench task: each benchmark's own test bench on the same bugs.

Contract: ``golden_grade(runner, source, task, seed=)`` scores the **golden** checker of the
design a task problem asks about, that is the benchmark's own test bench or harness as its
flow runs it (VerilogEval's bench against ``RefModule``, RTLLM's, CVDP's cocotb harness, the
reference grader for a training set), on the same seeded bugs a model's bench is scored on
(the same pool and draw: :func:`cvdp_gym.tasks.mutants.draw_mutants` with the same
seed). A bug counts as caught when the flow fails the mutant as an answer; the reference must
pass its own flow first. The result is a ``GradeResult`` shaped as the task flow's (``tests``:
one per bug, ``official``: ``task``, ``golden``, ``kill_rate``, ``mutants``, ``reference``), so
the report's verification section reads both alike: ``eval --task testbench --references``.
A problem whose reference fails its own bench (a benchmark defect) is ``excluded``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from cvdp_gym.data.problems import Problem
from cvdp_gym.grading.result import STAGES, GradeResult, Stage
from cvdp_gym.harness.results import TEST_FAILURE, UNSUPPORTED, TestCounts
from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.tasks.design import DesignUnderTest
from cvdp_gym.tasks.mutants import draw_mutants
from cvdp_gym.tasks.testbench_flow import DEFAULTS

__all__ = ["eval_golden", "golden_grade"]


def golden_grade(runner: HarnessRunner, source: Problem, task: Problem, *, seed: int) -> GradeResult:
    """The benchmark's own checker scored on ``task``'s drawn bugs (see the module doc)."""
    design = DesignUnderTest.from_dict(task.extra["design"])
    count = int({**DEFAULTS, **dict(task.extra.get("testbench") or {})}["mutants"])
    limits = runner.options.limits
    draw = draw_mutants(design, runner.sandbox, count=count, seed=seed, limits=limits)
    official: dict[str, Any] = {"task": "testbench", "golden": True, "draw": draw.summary()}
    if not draw.mutants:
        return _grade(task, UNSUPPORTED, draw.why, TestCounts(), official)
    own = runner.run(source, {design.target: design.text}, seed=seed)
    official["reference"] = {"built": True, "passed": own.passed, "why": "" if own.passed else own.reason}
    if not own.passed:
        why = f"the reference fails its own test bench ({own.failure_class}: {own.reason})"
        return _grade(task, UNSUPPORTED, why, TestCounts(), official)
    outcomes = []
    for mutant in draw.mutants:
        run = runner.run(source, {design.target: mutant.text}, seed=seed)
        outcomes.append({"kind": mutant.kind, "killed": not run.passed, "why": "" if run.passed else f"{run.failure_class}: {run.reason}"[:300]})
    killed = sum(o["killed"] for o in outcomes)
    official.update(mutants=outcomes, killed=killed, kill_rate=killed / len(outcomes))
    counts = TestCounts(len(outcomes), killed, len(outcomes) - killed)
    why = f"the benchmark's own test bench catches {killed} of {len(outcomes)} seeded bugs"
    return _grade(task, None if killed == len(outcomes) else TEST_FAILURE, why, counts, official)


def _grade(task: Problem, failure_class: str | None, reason: str, tests: TestCounts, official: dict[str, Any]) -> GradeResult:
    ran = failure_class != UNSUPPORTED
    stages = [Stage("format", True, "the benchmark's own test bench")] + [
        Stage(name, (failure_class is None) if name == "tests" else True) if ran else Stage(name, None) for name in STAGES[1:]
    ]
    return GradeResult(task.id, stages, failure_class, reason, tests=tests, official=official)


async def eval_golden(ev: Any, problems: list[Problem], sources: dict[str, Problem], seed: int) -> list[dict[str, Any]]:
    """The golden benches' rows (sample 0) of the task ``problems`` (``eval --task testbench --references``)."""
    todo = [p for p in problems if not ev.is_done(p.id, 0)]
    limit = asyncio.Semaphore(ev.jobs)

    async def one(task: Problem) -> None:
        source = sources[DesignUnderTest.from_dict(task.extra["design"]).source_id]
        async with limit:
            grade = await asyncio.to_thread(golden_grade, ev.grader.runner, source, task, seed=seed)
        ev.record(task, 0, "", grade)

    await asyncio.gather(*(one(p) for p in todo))
    return ev.collect((p.id, 0) for p in problems)
