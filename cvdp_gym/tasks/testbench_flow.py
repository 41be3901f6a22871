"""The test-bench task's flow: a model's test bench run on the reference and on seeded bugs.

Contract: ``TestbenchTaskFlow().run(sandbox, problem, files, limits=, seed=)`` (a problem posed
by :func:`cvdp_gym.tasks.posing.task_problem` as ``testbench`` or
``testbench-cocotb``) returns a ``HarnessResult`` and never raises on what the answer holds:

1. the bench is read for what it may not do: a Verilog bench by the answer gate
   (:func:`cvdp_gym.gate.check` with ``kind="bench"``: as Icarus reads it, every system task on
   the ``BENCH`` allowlist, no file task of any name, a waveform dump only to a plain name of
   its own folder), then by :mod:`cvdp_gym.tasks.bench_rules` (the design's internals, by name
   or by a macro that builds the name); a cocotb bench by
   :mod:`cvdp_gym.tasks.cocotb_bench_rules`: a finding is ``reach_in`` (a cocotb bench that
   does not parse: ``build_error``), nothing runs;
2. ``mutants`` bugs are drawn (:mod:`cvdp_gym.tasks.mutants`: each shown by the
   equivalence grader to differ from the reference; drawn with the run's ``seed``);
3. the bench runs on each design in turn, each design under the same file and module names,
   each under its own time limit (``sim_s``), each run **sealed** (a fresh folder holding only
   the bench and that design, nothing it writes outliving it), the reference first and again
   at a position among the bugs drawn with ``seed`` (a verdict on the reference that changes
   between its runs is a false alarm): Icarus (:mod:`cvdp_gym.tasks.verilog_bench`, one
   sandbox run) or cocotb 2.0.1 on Icarus (:mod:`cvdp_gym.tasks.cocotb_bench`, one sandbox
   run per design, the bench under a runtime guard, the run's seed as cocotb's);
4. the verdict per design (:mod:`cvdp_gym.tasks.bench_verdicts`): a Verilog bench **fails** a
   design when it calls ``$error``/``$fatal``, prints a line that begins with ``ERROR``,
   ``FATAL``, ``FAIL`` or ``MISMATCH`` (or says ``TEST FAILED``), exits non-zero, or does not
   finish within ``sim_s``; a cocotb bench when a test fails (its results file).

The answer's verdict: a bench that does not compile with the reference is a ``build_error``;
one that fails the reference raised a false alarm (``test_failure``, nothing caught counts,
and it is not run on the bugs); otherwise each drawn mutant is one test, passed when the bench
fails it (the kill rate is ``tests.passed / tests.total``, the ``kills`` reward), and the
answer passes when it catches every one. A mutant the bench does not compile with (a width
change at a port) is not scored. ``official`` holds the kill rate, each mutant's outcome (its
kind, never its text), the draw, and for a Verilog bench the coverage of the reference it
reaches (Verilator line and toggle: :mod:`cvdp_gym.tasks.coverage`). Settings
(``extra["testbench"]``): ``mutants`` (8), ``sim_s`` (20), ``coverage`` (false: a Verilator
build, about 4.5 s an answer; ``TaskOptions(coverage=True)`` and ``eval --task
testbench`` turn it on).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from cvdp_gym.equivalence.ports import read_design
from cvdp_gym.errors import HarnessError
from cvdp_gym.gate import FULL
from cvdp_gym.harness.flows.flow_kit import (
    BUILD_ERROR,
    REACH_IN,
    TEST_FAILURE,
    UNSUPPORTED,
    HarnessResult,
    Limits,
    Problem,
    Sandbox,
    TestCounts,
    check,
)
from cvdp_gym.seeds import draw_seed
from cvdp_gym.tasks.bench_rules import bench_findings
from cvdp_gym.tasks.cocotb_bench import run_cocotb_designs
from cvdp_gym.tasks.cocotb_bench_rules import cocotb_bench_findings
from cvdp_gym.tasks.coverage import measure_coverage
from cvdp_gym.tasks.design import DesignUnderTest
from cvdp_gym.tasks.mutants import draw_mutants
from cvdp_gym.tasks.names import (
    BENCH_FILE,
    BENCH_TOP,
    DESIGN_FILE,
    TESTBENCH_COCOTB,
    TESTBENCH_FLOW,
)
from cvdp_gym.tasks.verilog_bench import run_verilog_designs

__all__ = ["TestbenchTaskFlow"]

DEFAULTS: dict[str, Any] = {"mutants": 8, "sim_s": 20.0, "coverage": False}
#: What a Verilog bench's dump may not be named: the files of its own run.
_PROTECTED = (BENCH_FILE, DESIGN_FILE, "sim", "compile.log", "compile.rc", "sim.log", "sim.rc")


class TestbenchTaskFlow:
    """Grades a test bench by the bugs it catches without failing the reference."""

    name = TESTBENCH_FLOW
    #: Its answer is a bench, read here (a Verilog bench by the gate's ``BENCH`` allowlist, then
    #: the task's rules; a cocotb bench by its rules); the runner's gate reads its directives.
    answer_kind = None
    #: Its verdict depends on the run's seed (the bugs drawn from it): the result records the seed.
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
        cocotb = problem.extra.get("task") == TESTBENCH_COCOTB
        findings = _cocotb_findings(bench, design) if cocotb else _verilog_findings(bench, design)
        if findings:
            unread = cocotb and "does not parse" in findings[0]  # Python the bench's reader cannot read: a build error
            return _result(problem, False, BUILD_ERROR if unread else REACH_IN, findings[0], TestCounts(), {"findings": findings}, start)
        drawn = draw_seed() if seed is None else seed  # the bugs, and where the reference runs again
        draw = draw_mutants(design, sandbox, count=int(settings["mutants"]), seed=drawn, limits=limits)
        if not draw.mutants:
            return _result(problem, False, UNSUPPORTED, draw.why, TestCounts(), {"draw": draw.summary()}, start)
        texts = [design.text, *(m.text for m in draw.mutants)]
        sim_s = float(settings["sim_s"])
        if cocotb:
            runs = run_cocotb_designs(
                sandbox, bench, texts, design.top, sim_s=sim_s, limits=limits, keep_dir=keep_dir, seed=seed or 1,
                order_seed=drawn,
            )
        else:
            runs = run_verilog_designs(sandbox, bench, texts, sim_s=sim_s, limits=limits, keep_dir=keep_dir, seed=drawn)
        reference, mutants = runs[0], runs[1:]
        official: dict[str, Any] = {
            "task": problem.extra.get("task", "testbench"), "draw": draw.summary(), "reference": dataclasses.asdict(reference),
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
        if settings["coverage"] and not cocotb:  # Verilator's coverage of a Verilog bench
            official["coverage"] = _coverage(sandbox, bench, design, limits)
        counts = TestCounts(len(scored), killed, len(scored) - killed)
        if not scored:
            return _result(problem, False, UNSUPPORTED, "the test bench compiles with no drawn mutant", counts, official, start)
        passed = killed == len(scored)
        why = f"the test bench passes the reference and catches {killed} of {len(scored)} seeded bugs"
        return _result(problem, passed, None if passed else TEST_FAILURE, why, counts, official, start)


def _verilog_findings(bench: str, design: DesignUnderTest) -> list[str]:
    """What a Verilog bench may not do: the answer gate's reading (as Icarus reads it, every
    system task on the ``BENCH`` allowlist, a dump only to a plain name of its own folder, the
    design supplied so that its names resolve), then the task's own rules (the design's
    internals, by name or by a macro that builds the name)."""
    found = check(
        {BENCH_FILE: bench}, kind="bench", supplied={DESIGN_FILE: design.text}, protected=_PROTECTED, rules=FULL,
    )
    return [str(f) for f in found.findings] + bench_findings(bench, bench_top=BENCH_TOP, design=design.text)


def _cocotb_findings(bench: str, design: DesignUnderTest) -> list[str]:
    """What a cocotb bench may not do, given the design's ports (none known: nothing checked by port)."""
    try:
        ports = [p.name for p in read_design(design.text, design.top).ports]
    except (HarnessError, RecursionError) as exc:
        return [f"the design's ports cannot be read to check the bench against them: {exc}"]
    return cocotb_bench_findings(bench, ports=ports)


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
