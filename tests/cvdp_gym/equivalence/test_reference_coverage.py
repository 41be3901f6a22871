"""No pass without a verdict in the reference grader (issue 35, item 4): deep state reached,
coverage measured, ``undecided`` where no stage decided, and runs cut short never passing.

Every design here is written for these tests, with real Icarus, Verilator and Yosys runs in
the real sandbox, all in one module fixture, two at a time. Expected first mismatches come
from Python models of the designs run on the same stimulus (``make_stimulus``), never from a
run of the code under test. The in-process tests at the end check the verdict's folding of
stage results (a formal bound the time limit ended early cannot be made to happen on demand),
the settings and the stimulus.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from cvdp_gym.data.problems import Problem
from cvdp_gym.equivalence.flow import _cut_short
from cvdp_gym.equivalence.formal import FormalResult
from cvdp_gym.equivalence.ports import Port, read_design
from cvdp_gym.equivalence.settings import Settings, read_settings
from cvdp_gym.equivalence.state import StateRegister
from cvdp_gym.equivalence.stimulus import make_stimulus, quiet_level
from cvdp_gym.equivalence.testbench import Coverage, SimulationResult
from cvdp_gym.equivalence.verdict import judge
from cvdp_gym.harness.flows import FLOWS
from cvdp_gym.harness.results import HarnessResult
from cvdp_gym.sandbox.base import Limits
from cvdp_gym.seeds import stimulus_seed
from tests.cvdp_gym.equivalence.test_reference_flow import problem

pytestmark = pytest.mark.sandbox

#: VerilogEval's count1k, written again: 0 to 999, then 0.
COUNT1K = """module count1k(input clk, input reset, output reg [9:0] q);
  always @(posedge clk)
    if (reset || q == 10'd999) q <= 10'd0;
    else q <= q + 10'd1;
endmodule
"""
#: The same with an enable and a synchronous clear: random stimulus clears it every few cycles.
COUNT1K_EN = """module count1k_en(input clk, input reset, input clr, input en, output reg [9:0] q);
  always @(posedge clk)
    if (reset || clr) q <= 10'd0;
    else if (en) q <= (q == 10'd999) ? 10'd0 : q + 10'd1;
endmodule
"""
#: A memory too large for the formal stage beside a 16-bit count no simulation here reaches.
DEEP_RAM = """module deep(input clk, input rst, input we, input [10:0] a, input [7:0] d, output reg [7:0] q, output hi);
  reg [7:0] mem [0:2047];
  reg [15:0] n;
  always @(posedge clk) begin
    if (we) mem[a] <= d;
    q <= mem[a];
  end
  always @(posedge clk) if (rst) n <= 16'd0; else n <= n + 16'd1;
  assign hi = (n == 16'hffff);
endmodule
"""
#: A 16-bit counter: its top bits never move in 3,000 cycles; the formal stage proves it equal to itself.
DEEP16 = """module deep16(input clk, input rst, output reg [15:0] q);
  always @(posedge clk) if (rst) q <= 16'd0; else q <= q + 16'd1;
endmodule
"""
#: A register below the top, reached by the coverage through the reference's instance.
HIER = """module stage(input clk, input rst, input d, output y);
  reg [2:0] sh;
  always @(posedge clk) if (rst) sh <= 3'd0; else sh <= {sh[1:0], d};
  assign y = sh[2];
endmodule
module hier(input clk, input rst, input d, output y);
  stage u(.clk(clk), .rst(rst), .d(d), .y(y));
endmodule
"""
#: Hangs once the test bench has finished (and printed its verdict).
HANG_AT_FINISH = "  integer spin;\n  final begin spin = 0; while (1) spin = spin + 1; end\nendmodule\n"


P_COUNT1K = problem("count1k", COUNT1K, "count1k")
P_COUNT1K_EN = problem("count1k-en", COUNT1K_EN, "count1k_en")
P_DEEP_RAM = problem("deep", DEEP_RAM, "deep")
P_HIER = problem("hier", HIER, "hier")
OFF_BY_ONE = COUNT1K.replace("q == 10'd999", "q == 10'd1000")
OFF_BY_ONE_EN = COUNT1K_EN.replace("q == 10'd999", "q == 10'd1000")

CASES: dict[str, tuple[Problem, str, float]] = {
    "count1k/self": (P_COUNT1K, COUNT1K, 120),
    "count1k/off-by-one": (P_COUNT1K, OFF_BY_ONE, 120),
    "count1k-en/self": (P_COUNT1K_EN, COUNT1K_EN, 120),
    "count1k-en/off-by-one": (P_COUNT1K_EN, OFF_BY_ONE_EN, 120),
    "deep/self": (P_DEEP_RAM, DEEP_RAM, 120),
    "deep/wrong": (P_DEEP_RAM, DEEP_RAM.replace("16'hffff);", "16'hfffe);"), 120),
    "deep16/simulation": (problem("deep16-sim", DEEP16, "deep16", mode="simulation"), DEEP16, 120),
    "deep16/both": (problem("deep16", DEEP16, "deep16"), DEEP16, 120),
    "hier/icarus": (P_HIER, HIER, 120),
    "hier/verilator": (problem("hier", HIER, "hier", simulator="verilator"), HIER, 240),
    "cut/hang-at-finish": (P_COUNT1K, COUNT1K.replace("endmodule\n", HANG_AT_FINISH), 6),
}


@pytest.fixture(scope="module")
def graded(sandbox) -> dict[str, HarnessResult]:
    flow = FLOWS["reference"]
    order = sorted(CASES, key=lambda key: "verilator" not in key)

    def grade(key: str) -> HarnessResult:
        case, answer, wall_s = CASES[key]
        return flow.run(sandbox, case, {case.targets[0]: answer}, limits=Limits(wall_s=wall_s))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(order, pool.map(grade, order), strict=True))


def simulation(result: HarnessResult) -> dict[str, Any]:
    return result.official["simulation"]


def counter_rows(case: Problem, wrap: int) -> tuple[Any, list[int | None]]:
    """The stimulus of ``case`` and a model's ``q`` per cycle (None before the first reset)."""
    settings = read_settings(case.extra)
    design = read_design(case.reference[case.targets[0]], case.extra["top"])
    stimulus = make_stimulus(design, settings.cycles, stimulus_seed(case.id, settings))
    q: int | None = None
    rows = []
    for c in range(stimulus.cycles):
        sampled = stimulus.values(max(c - 1, 0))
        if sampled["reset"] or sampled.get("clr"):
            q = 0
        elif q is not None and sampled.get("en", 1):
            q = 0 if q == wrap else q + 1
        rows.append(q)
    return stimulus, rows


@pytest.mark.parametrize(("key", "case"), [("count1k/off-by-one", P_COUNT1K), ("count1k-en/off-by-one", P_COUNT1K_EN)])
def test_a_counter_1000_deep_is_reached_and_an_off_by_one_wrap_fails(graded, key, case):
    result = graded[key]
    assert not result.passed and result.failure_class == "test_failure", result.reason
    stimulus, right = counter_rows(case, 999)
    _, wrong = counter_rows(case, 1000)
    first = next(c for c in range(stimulus.compare_from, stimulus.cycles) if right[c] != wrong[c])
    assert simulation(result)["first"]["cycle"] == first > 1000
    assert simulation(result)["first"]["expected"] == {"q": "10'h0"} and simulation(result)["first"]["got"] == {"q": "10'h3e8"}
    # The quiet run (inputs held, no reset) is where it counts that far.
    assert stimulus.quiet_from < first < stimulus.quiet_to


@pytest.mark.parametrize("key", ["count1k/self", "count1k-en/self"])
def test_a_reference_covers_itself(graded, key):
    result = graded[key]
    assert result.passed, result.reason
    coverage = simulation(result)["coverage"]
    assert coverage == {"measured": True, "bits": 10, "covered": 10, "missed": []}
    assert "covering the design" in result.reason


def test_where_no_stage_decides_the_verdict_is_undecided_never_a_pass(graded):
    wrong, itself = graded["deep/wrong"], graded["deep/self"]
    for result in (wrong, itself):  # the answer's bug (n == 16'hfffe) is past every simulated cycle
        assert not result.passed and result.failure_class == "undecided", result.reason
        assert simulation(result)["verdict"] == "match"
        assert result.official["formal"]["verdict"] == "undecided" and "too large" in result.official["formal"]["why"]
        coverage = simulation(result)["coverage"]
        assert coverage["measured"] and coverage["covered"] < coverage["bits"]
        assert "n[15] never rose or fell" in coverage["missed"]
        assert result.reason.startswith("no stage decided") and result.official["label"].startswith("undecided")
        assert result.tests.failed == 1 and result.tests.passed == result.tests.total - 1  # partial credit below a pass


def test_eval_and_check_count_undecided_answers(runner):
    """Through the grader: ``eval``'s rows and report, and ``check``'s training-set line."""
    from cvdp_gym.check import REFERENCE, CheckOutcome, training_notes
    from cvdp_gym.eval.report import group_stats
    from cvdp_gym.eval.run import result_row
    from cvdp_gym.grading import Grader
    from cvdp_gym.grading.feedback import feedback_text
    from cvdp_gym.grading.rewards import make_reward

    grade = Grader(runner, cache=None).grade_files(P_DEEP_RAM, dict(P_DEEP_RAM.reference))
    assert not grade.passed and grade.failure_class == "undecided"
    reward = make_reward("shaped")
    assert reward(grade) < 1.0  # what a failure earns, never a pass's 1.4
    text = feedback_text(grade, P_DEEP_RAM, "tests")  # what a refine episode tells the policy
    assert "could not decide" in text and "n[15]" not in text  # nothing of the reference's insides
    row = result_row(P_DEEP_RAM, 0, "", grade, reward)
    assert row["verdict"] == "undecided" and group_stats([row], [1])["failure_classes"] == {"undecided": 1}
    outcome = CheckOutcome("k", P_DEEP_RAM.id, REFERENCE, "passed", runner.run(P_DEEP_RAM, dict(P_DEEP_RAM.reference)))
    [line] = training_notes([P_DEEP_RAM], [outcome])
    assert line.endswith("undecided (no stage covered the design): 1 reference(s), 0 broken copies")


def test_mode_simulation_needs_a_simulation_that_covers_the_design(graded):
    alone, both = graded["deep16/simulation"], graded["deep16/both"]
    assert alone.failure_class == "undecided" and "q[12] never rose or fell" in alone.reason
    assert both.passed and both.official["formal"]["verdict"] == "proved", both.reason
    assert simulation(both)["coverage"]["covered"] < simulation(both)["coverage"]["bits"]


def test_registers_below_the_top_are_covered_on_both_simulators(graded):
    icarus, verilator = graded["hier/icarus"], graded["hier/verilator"]
    assert icarus.passed and verilator.passed, (icarus.reason, verilator.reason)
    coverage = simulation(icarus)["coverage"]
    assert coverage == {"measured": True, "bits": 4, "covered": 4, "missed": []}  # y, then u.sh[2:0]
    assert simulation(verilator)["coverage"] == coverage


def test_a_simulation_cut_short_never_passes(graded):
    result = graded["cut/hang-at-finish"]
    assert not result.passed and result.failure_class == "timeout", result.reason
    assert "wall-time limit" in result.reason
    assert result.tests.failed >= 1


def test_a_bench_whose_probes_do_not_build_runs_again_without_them(sandbox):
    """A register path a simulator cannot resolve (none is known among real designs: this one
    is made up) fails the bench's build, not the answer; without probes, no coverage is measured."""
    import dataclasses

    from cvdp_gym.equivalence.flow import _Run, _simulate
    from cvdp_gym.equivalence.sources import RunNames, rename_modules

    design = dataclasses.replace(read_design(COUNT1K, "count1k"), state=(StateRegister("no_such_register", 4),))
    names = RunNames()
    run = _Run(P_COUNT1K, Settings(cycles=200), sandbox, Limits(wall_s=60), None, "count1k.sv", COUNT1K, design, names)
    renamed = rename_modules(COUNT1K, {"count1k": names.ref_prefix + "count1k"})
    stimulus = make_stimulus(design, 200, 1)
    failed, _, _, _ = _simulate(run, renamed, stimulus, "@@secret-one@@")
    assert failed is not None and failed.failure_class == "interface_error"  # what _grade retries on
    built, sim, cut, _ = _simulate(run, renamed, stimulus, "@@secret-two@@", probes=False)
    assert built is None and cut is None and sim.verdict == "match" and not sim.coverage.measured


# -- in process ----------------------------------------------------------------------------


def test_the_state_the_coverage_watches():
    source = """module sub(input c, input d, output reg [3:0] q);
  reg [1:0] mem [0:3];
  integer i;
  always @(posedge c) begin
    for (i = 0; i < 4; i = i + 1) mem[i] <= {d, d};
    q <= {q[2:0], d};
  end
endmodule
module top(input clk, input d, output reg [9:0] q, output [3:0] y);
  reg [2:0] st;
  logic flag;
  reg [7:0] comb;
  sub u(.c(clk), .d(d), .q(y));
  always @(posedge clk) q <= q + 10'd1;
  always_ff @(posedge clk) {st, flag} <= {st + 3'd1, ~flag};
  always @* comb = {q[7:0]};
  generate if (1) begin : g
    reg gg;
    always @(posedge clk) gg <= d;
  end endgenerate
endmodule
"""
    state = read_design(source, "top").state
    # The output q is measured as an output; the memory, the loop variable and combinational logic are not state.
    assert set(state) == {StateRegister("st", 3), StateRegister("flag", 1), StateRegister("g.gg", 1), StateRegister("u.q", 4)}


@pytest.mark.parametrize(("name", "level"), [
    ("en", 1), ("count_ena", 1), ("slowena", 1), ("start", 1), ("clr", 0), ("load", 0), ("load_en", 0),
    ("clr_n", 1), ("clrn", 1), ("en_n", 0), ("hold", 0),
])
def test_the_quiet_run_holds_inputs_at_the_level_that_lets_a_design_run(name, level):
    import random

    assert quiet_level(Port(name, "input", 1), random.Random(0)) == level


def test_the_loader_knows_every_setting_and_the_default_bounds():
    """The data layer checks a set's options at load without importing the grader: the two agree."""
    from cvdp_gym.benchmarks.training import training_set as training

    assert set(training.EQUIVALENCE_OPTIONS) == set(Settings().as_dict())
    assert (Settings().depth, Settings().min_depth) == (training._DEFAULT_DEPTH, training._DEFAULT_MIN_DEPTH)


def _sim(bits: int, covered: int) -> SimulationResult:
    missed = [] if covered == bits else ["q[9] never fell"]
    return SimulationResult("match", 100, 100, coverage=Coverage(bits, covered, missed, measured=True))


@pytest.mark.parametrize(("settings", "simulation", "formal", "sequential", "expected"), [
    # A bound the time limit ended early is no verdict: with an uncovering simulation, undecided.
    (Settings(), _sim(10, 9), FormalResult("bounded", 11, why="time limit"), True, "undecided"),
    (Settings(), _sim(10, 10), FormalResult("bounded", 11, why="time limit"), True, None),
    (Settings(), _sim(10, 9), FormalResult("bounded", 20), True, None),
    (Settings(min_depth=10), _sim(10, 9), FormalResult("bounded", 11), True, None),
    (Settings(), _sim(10, 9), FormalResult("proved", 20), True, None),
    (Settings(), _sim(10, 9), FormalResult("undecided", why="timeout"), True, "undecided"),
    # A combinational design has no state: one step is its whole behaviour.
    (Settings(), _sim(8, 7), FormalResult("bounded", 1), False, None),
    (Settings(mode="simulation"), _sim(10, 9), None, True, "undecided"),
    (Settings(mode="simulation"), _sim(10, 10), None, True, None),
    (Settings(mode="formal"), None, FormalResult("bounded", 11), True, "undecided"),
    (Settings(mode="formal"), None, FormalResult("undecided", why="timeout"), True, "timeout"),
    # The published recipes judge as their descriptions say.
    (Settings(mode="codev-r1"), _sim(10, 9), None, True, None),
    (Settings(mode="verithoughts"), None, FormalResult("bounded", 50), True, None),
])
def test_a_pass_needs_a_stage_that_decided(settings, simulation, formal, sequential, expected):
    case = problem("fold", COUNT1K, "count1k")
    result = judge(case, settings, simulation, formal, wall_s=0.0, log_tail="", extra={"interface": {"sequential": sequential}})
    assert result.passed == (expected is None) and result.failure_class == expected, result.reason


def test_a_simulation_cut_after_every_cycle_matched_is_no_pass():
    case = problem("fold", COUNT1K, "count1k")
    for status, sandbox_timed_out, failure in (("124\n", False, "timeout"), ("153", False, "resource_limit"),
                                                ("0\n", True, "timeout")):
        cut = _cut_short(status, sandbox_timed_out)
        result = judge(case, Settings(), _sim(10, 10), FormalResult("proved", 20), sim_cut=cut, wall_s=0.0,
                       log_tail="", extra={})
        assert not result.passed and result.failure_class == failure and result.tests.failed == 1
        assert result.official["simulation"]["cut"] == result.reason == cut[1]
    assert _cut_short("153", False)[1].endswith("signal 25")
    assert _cut_short("0\n", False) is _cut_short("1\n", False) is None
