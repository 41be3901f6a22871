"""The test-bench task's flow on a made-up counter, with real Icarus and Yosys runs in the sandbox.

A model's bench is run on the reference and on seeded bugs the equivalence grader shows are
real; these tests check the verdicts a thorough, a weak, a silent, a wrong and a cheating
bench get, and the rules and the log reading on their own. All runs happen once in a module
fixture.
"""

from __future__ import annotations

import pytest

from cvdp_gym.harness.randomness import problem_randomness
from cvdp_gym.harness.results import BUILD_ERROR, REACH_IN, TEST_FAILURE
from cvdp_gym.sandbox.base import Limits
from cvdp_gym.seeds import task_mutant_order
from cvdp_gym.tasks.bench_rules import bench_findings
from cvdp_gym.tasks.bench_verdicts import bench_verdict
from cvdp_gym.tasks.design import DesignUnderTest
from cvdp_gym.tasks.mutants import draw_mutants, mutant_pool
from cvdp_gym.tasks.names import BENCH_FILE, TESTBENCH
from cvdp_gym.tasks.posing import task_problem
from tests.cvdp_gym.tasks.verification_problems import (
    COUNTER,
    FALSE_ALARM_BENCH,
    PEEKING_BENCH,
    SELF_DEFINED_BENCH,
    SILENT_BENCH,
    THOROUGH_BENCH,
    WEAK_BENCH,
    counter_problem,
)

pytestmark = pytest.mark.sandbox

BENCHES = {
    "thorough": THOROUGH_BENCH, "weak": WEAK_BENCH, "false alarm": FALSE_ALARM_BENCH, "silent": SILENT_BENCH,
    "peeking": PEEKING_BENCH, "self-defined": SELF_DEFINED_BENCH, "broken": "module tb; initial begin x = ; end endmodule\n",
    "endless": SILENT_BENCH.replace("$finish;", ""),
}


@pytest.fixture(scope="module")
def task():
    posed = task_problem(counter_problem(), TESTBENCH)
    assert posed is not None
    posed.extra["testbench"] = {"coverage": False, "sim_s": 3}
    return posed


@pytest.fixture(scope="module")
def verdicts(runner, task):
    return {name: runner.run(task, {BENCH_FILE: text}, seed=7) for name, text in BENCHES.items()}


def test_a_thorough_bench_catches_every_drawn_bug(verdicts):
    result = verdicts["thorough"]
    assert result.passed, result.reason
    assert result.tests.total == 8 and result.tests.passed == 8
    assert result.official["kill_rate"] == 1.0
    assert result.official["reference"] == {"built": True, "passed": True, "why": ""}
    assert all(m["killed"] and m["why"].startswith("ERROR") for m in result.official["mutants"])


def test_a_weak_bench_catches_fewer(verdicts):
    weak, thorough = verdicts["weak"], verdicts["thorough"]
    assert not weak.passed and weak.failure_class == TEST_FAILURE
    assert 0 < weak.tests.passed < thorough.tests.passed
    assert weak.official["kill_rate"] == weak.tests.passed / weak.tests.total
    assert "catches" in weak.reason and "seeded bugs" in weak.reason


def test_a_false_alarm_earns_nothing(verdicts):
    result = verdicts["false alarm"]
    assert result.failure_class == TEST_FAILURE and result.tests.passed == 0
    assert "fails the reference design" in result.reason and "q not reset" in result.reason
    assert result.official["kill_rate"] == 0.0


def test_a_bench_that_checks_nothing_catches_nothing(verdicts):
    result = verdicts["silent"]
    assert result.official["reference"]["passed"]
    assert result.tests.passed == 0 and result.tests.total == 8


def test_benches_that_reach_into_the_design_never_run(verdicts):
    for name in ("peeking", "self-defined"):
        result = verdicts[name]
        assert result.failure_class == REACH_IN and result.tests.total == 0, name
    assert "`dut.`: a hierarchical name into the design" in verdicts["peeking"].reason
    assert "defines module `counter`" in verdicts["self-defined"].reason


def test_a_bench_that_never_finishes_is_a_false_alarm_run_on_the_reference_only(verdicts):
    result = verdicts["endless"]
    assert result.failure_class == TEST_FAILURE and "did not finish in its time limit" in result.reason
    assert "mutants" not in result.official  # the bugs were not run


def test_a_bench_that_does_not_compile_is_a_build_error(verdicts):
    result = verdicts["broken"]
    assert result.failure_class == BUILD_ERROR and "does not compile" in result.reason


def test_the_draw_follows_the_seed_and_skips_no_real_bug(runner, task):
    design = DesignUnderTest.from_dict(task.extra["design"])
    assert [m.text for m in mutant_pool(design)] == [m.text for m in mutant_pool(design)]
    limits = Limits(wall_s=60)
    first = draw_mutants(design, runner.sandbox, count=4, seed=1, limits=limits)
    again = draw_mutants(design, runner.sandbox, count=4, seed=1, limits=limits)
    other = draw_mutants(design, runner.sandbox, count=4, seed=2, limits=limits)
    assert [m.text for m in first.mutants] == [m.text for m in again.mutants]
    assert [m.text for m in first.mutants] != [m.text for m in other.mutants]
    assert all(m.text != COUNTER for m in first.mutants) and len(first.mutants) == 4
    assert "_cvdp_mutant" not in "".join(m.text for m in first.mutants)  # nothing names a mutant


def test_the_draw_order_is_the_runs_seed_and_the_problem_pinned():
    """``cvdp_gym.seeds`` derives the order a run draws its bugs in: pinned here, so a
    ``harness_seed`` keeps scoring the same bugs (and the published figures stand)."""
    pool = list("abcdefgh")
    assert task_mutant_order(pool, 1, "made-up.counter") == list("abhfdceg")
    assert task_mutant_order(pool, 2, "made-up.counter") == list("gbceahdf")
    assert pool == list("abcdefgh")  # the pool itself is left as it was


def test_an_equivalent_rewrite_is_never_scored(runner):
    # Constants nothing reads: a mutant that changes one of them is an equivalent rewrite.
    dead = "  localparam [3:0] A = 4'd3, B = 4'd5, C = 4'd6, D = 4'd9;\n  wire [3:0] unused = A & B & C & D;\n"
    problem = counter_problem()
    problem.reference["counter.sv"] = COUNTER.replace("  assign wrap", dead + "  assign wrap")
    design = DesignUnderTest.from_dict(task_problem(problem, TESTBENCH).extra["design"])
    pool = mutant_pool(design)
    dead_only = [m for m in pool if m.text.replace(m.text.split("\n")[1], "") == design.text.replace(design.text.split("\n")[1], "")]
    assert dead_only, "the pool holds a mutant of the unread constants"
    draw = draw_mutants(design, runner.sandbox, count=len(pool), seed=0, limits=Limits(wall_s=60))
    assert draw.equivalent >= len(dead_only)
    assert not {m.text for m in dead_only} & {m.text for m in draw.mutants}


def test_a_task_draws_per_run_so_an_unseeded_verdict_is_not_cached(task):
    assert problem_randomness(task) and "drawn per run" in problem_randomness(task)[0]
    assert problem_randomness(counter_problem()) == ()


@pytest.mark.parametrize(("log", "rc", "passed"), [
    ("all good\nErrors: 0\n", "0", True),
    ("Failed: 0 of 10\n", "0", True),
    ("ERROR: tb.sv:3: q=1\n", "0", False),
    ("  FAIL at 30\n", "0", False),
    ("mismatch on y\n", "0", False),
    ("summary: 2 TESTS FAILED\n", "0", False),
    ("", "137", False),
    ("", "1", False),
])
def test_the_bench_log_is_read_by_its_documented_rule(log, rc, passed):
    assert bench_verdict("0", "", rc, log).passed is passed


def test_the_rules_name_each_forbidden_reach():
    bench = (
        'module tb; // $fopen in a comment is fine\n reg [7:0] m [0:3]; string s = "dut.q";\n'
        " counter #(.W(4)) dut (.clk(c));\n initial begin\n  $readmemh(\"x.hex\", m);\n  force dut.q = 0;\n"
        "  $display(\"%m\");\n end\nendmodule\n"
    )
    found = bench_findings(bench, bench_top="tb", design=COUNTER)
    assert any("tb.sv:5: `$readmemh`" in f for f in found)
    assert any("tb.sv:6: `dut.`" in f for f in found)
    assert len(found) == 2
    assert bench_findings(THOROUGH_BENCH, bench_top="tb", design=COUNTER) == []
    assert bench_findings("module bench; endmodule", bench_top="tb", design=COUNTER) == ["tb.sv: no module `tb` (the test bench's top module)"]
