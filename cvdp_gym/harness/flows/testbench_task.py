"""The test-bench task's flow: a model's test bench run on the reference and on seeded bugs.

Contract: ``TestbenchTaskFlow().run(sandbox, problem, files, limits=, seed=)`` (a problem posed
by :func:`cvdp_gym.data.verification_tasks.task_problem` as ``testbench``) returns a
``HarnessResult`` and never raises on what the answer holds:

1. the bench is read for what it may not do (:mod:`cvdp_gym.harness.bench_rules`): a finding
   is ``reach_in``, nothing runs;
2. ``mutants`` bugs are drawn (:mod:`cvdp_gym.harness.task_mutants`: each shown by the
   equivalence grader to differ from the reference; drawn with the run's ``seed``);
3. one sandbox run compiles the bench with each design in turn (Icarus, ``-g2012``), the
   reference first, each design under the same file and module names, and simulates it
   under its own time limit (``sim_s``);
4. the verdict per design: the bench **fails** a design when it calls ``$error``/``$fatal``,
   prints a line that begins with ``ERROR``, ``FATAL``, ``FAIL`` or ``MISMATCH`` (or says
   ``TEST FAILED``), exits non-zero, or does not finish within ``sim_s``; else it passes.

The answer's verdict: a bench that does not compile with the reference is a ``build_error``;
one that fails the reference raised a false alarm (``test_failure``, nothing caught counts);
otherwise each drawn mutant is one test, passed when the bench fails it (the kill rate is
``tests.passed / tests.total``, the ``kills`` reward), and the answer passes when it catches
every one. A mutant the bench does not compile with (a width change at a port) is not scored.
``official`` holds the kill rate, each mutant's outcome (its kind, never its text), the draw,
and the coverage of the reference the bench reaches (Verilator line and toggle, where it
builds there: :mod:`cvdp_gym.harness.testbench_coverage`). Settings (``extra["testbench"]``):
``mutants`` (8), ``sim_s`` (20), ``coverage`` (false: a Verilator build, about 4.5 s an
answer; ``task_problems(..., coverage=True)`` and ``eval --task testbench`` turn it on).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from cvdp_gym.data.problems import Problem
from cvdp_gym.data.verification_tasks import (
    BENCH_FILE,
    BENCH_TOP,
    DESIGN_FILE,
    TESTBENCH_FLOW,
    DesignUnderTest,
)
from cvdp_gym.harness.bench_rules import bench_findings
from cvdp_gym.harness.bench_verdicts import DesignRun, bench_verdict
from cvdp_gym.harness.results import (
    BUILD_ERROR,
    REACH_IN,
    TEST_FAILURE,
    UNSUPPORTED,
    HarnessResult,
    TestCounts,
)
from cvdp_gym.harness.task_mutants import MutantDraw, draw_mutants
from cvdp_gym.harness.testbench import run_script
from cvdp_gym.harness.testbench_coverage import measure_coverage
from cvdp_gym.sandbox.base import Limits, Sandbox
from cvdp_gym.seeds import draw_seed

__all__ = ["DesignRun", "TestbenchTaskFlow", "bench_verdict"]

DEFAULTS: dict[str, Any] = {"mutants": 8, "sim_s": 20.0, "coverage": False}


class TestbenchTaskFlow:
    """Grades a test bench by the bugs it catches without failing the reference."""

    name = TESTBENCH_FLOW
    seeded: ClassVar[bool] = True
    __test__ = False  # not a pytest class, whatever its name says

    def run(
        self, sandbox: Sandbox, problem: Problem, files: Mapping[str, str], *, limits: Limits,
        keep_dir: Path | None = None, seed: int | None = None,
    ) -> HarnessResult:
        start = time.monotonic()
        settings = {**DEFAULTS, **dict(problem.extra.get("testbench") or {})}
        design = DesignUnderTest.from_dict(problem.extra["design"])
        bench = files.get(problem.targets[0] if problem.targets else BENCH_FILE, "")
        findings = bench_findings(bench, bench_top=BENCH_TOP, design=design.text, path=BENCH_FILE)
        if findings:
            return _result(problem, False, REACH_IN, findings[0], TestCounts(), {"findings": findings}, start)
        draw = draw_mutants(
            design, sandbox, count=int(settings["mutants"]), seed=draw_seed() if seed is None else seed, limits=limits,
        )
        if not draw.mutants:
            return _result(problem, False, UNSUPPORTED, draw.why, TestCounts(), {"draw": draw.summary()}, start)
        runs = _run_designs(sandbox, bench, design, draw, float(settings["sim_s"]), limits, keep_dir)
        reference, mutants = runs[0], runs[1:]
        official: dict[str, Any] = {
            "task": "testbench", "draw": draw.summary(), "reference": dataclasses.asdict(reference),
        }
        if not reference.built:
            return _result(problem, False, BUILD_ERROR, f"the test bench does not compile with the design: {reference.why}", TestCounts(), official, start)
        if not reference.passed:
            counts = TestCounts(len(draw.mutants), 0, len(draw.mutants))
            official.update(kill_rate=0.0, killed=0)
            why = f"the test bench fails the reference design (a false alarm): {reference.why}"
            return _result(problem, False, TEST_FAILURE, why, counts, official, start)
        scored = [(m, r) for m, r in zip(draw.mutants, mutants, strict=True) if r.built]
        killed = sum(not r.passed for _, r in scored)
        official["mutants"] = [{"kind": m.kind, "killed": not r.passed, "why": r.why} for m, r in scored]
        official["unscored"] = len(mutants) - len(scored)
        official.update(kill_rate=killed / len(scored) if scored else 0.0, killed=killed)
        if settings["coverage"]:
            official["coverage"] = _coverage(sandbox, bench, design, limits)
        counts = TestCounts(len(scored), killed, len(scored) - killed)
        if not scored:
            return _result(problem, False, UNSUPPORTED, "the test bench compiles with no drawn mutant", counts, official, start)
        passed = killed == len(scored)
        why = f"the test bench passes the reference and catches {killed} of {len(scored)} seeded bugs"
        return _result(problem, passed, None if passed else TEST_FAILURE, why, counts, official, start)


def _run_designs(
    sandbox: Sandbox, bench: str, design: DesignUnderTest, draw: MutantDraw, sim_s: float, limits: Limits,
    keep_dir: Path | None,
) -> list[DesignRun]:
    """The bench on the reference (``d0``) and on each mutant, in one sandbox run."""
    texts = [design.text, *(m.text for m in draw.mutants)]
    files = {BENCH_FILE: bench} | {f"d{i}/{DESIGN_FILE}": text for i, text in enumerate(texts)}
    folders = " ".join(f"d{i}" for i in range(len(texts)))
    # The reference first; a bench that does not build or finish there is not run on the bugs.
    script = (
        f"for d in {folders}; do ( cd $d; "
        f"iverilog -g2012 -o sim ../{BENCH_FILE} {DESIGN_FILE} > compile.log 2>&1; echo $? > compile.rc; "
        f"if [ -f sim ]; then timeout -s KILL {sim_s:g} vvp -n sim > sim.log 2>&1; echo $? > sim.rc; fi; "
        f"find . -mindepth 1 ! -name '*.log' ! -name '*.rc' ! -name '{DESIGN_FILE}' -delete ); "
        f"[ \"$(cat d0/sim.rc 2>/dev/null)\" = 0 ] || break; done"
    )
    logs = [f"d{i}/{name}" for i in range(len(texts)) for name in ("compile.rc", "compile.log", "sim.rc", "sim.log")]
    wall = min(limits.wall_s, len(texts) * (sim_s + 15.0))
    ran = run_script(sandbox, "icarus", script, files, logs, limits=dataclasses.replace(limits, wall_s=wall), keep_dir=keep_dir)
    out = ran.logs
    return [
        bench_verdict(out.get(f"d{i}/compile.rc", ""), out.get(f"d{i}/compile.log", ""), out.get(f"d{i}/sim.rc", ""), out.get(f"d{i}/sim.log", ""))
        for i in range(len(texts))
    ]


def _coverage(sandbox: Sandbox, bench: str, design: DesignUnderTest, limits: Limits) -> dict[str, Any]:
    """The reference's coverage under the bench (Verilator), or why it was not measured."""
    files = {BENCH_FILE: bench, DESIGN_FILE: design.text}
    return measure_coverage(sandbox, files, bench_top=BENCH_TOP, design_files=[DESIGN_FILE], limits=limits).as_dict()


def _result(
    problem: Problem, passed: bool, failure_class: str | None, reason: str, tests: TestCounts,
    official: dict[str, Any], start: float,
) -> HarnessResult:
    return HarnessResult.of_one_check(
        problem.id, "testbench", passed, failure_class, reason, tests=tests, official=official, wall_s=time.monotonic() - start,
    )
