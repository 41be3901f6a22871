"""The assertion task's SVA lowering (pure) and its open-formal check (real Yosys runs in the
real sandbox) on made-up designs.

Every design and property here is written for these tests; what each property should do on
each design is argued from the designs' text in the comments, never copied from a run. The
sandbox runs happen once, in a module fixture; the tests read their results.
"""

from __future__ import annotations

import pytest

from cvdp_gym.tasks.assertions import check_properties, lower_properties
from cvdp_gym.tasks.assertions.check import read_results, yosys_script
from tests.cvdp_gym.tasks.verification_problems import EVENT_COUNTER_PROPERTIES

COUNTER = """module counter(input clk, input rst, input en, output reg [3:0] q);
  always @(posedge clk)
    if (rst) q <= 4'd0;
    else if (en) q <= q + 4'd1;
endmodule
"""
#: Counts by two: breaks the increment property only.
COUNTER_BY_TWO = COUNTER.replace("q + 4'd1", "q + 4'd2")
#: Resets to 1: breaks the reset property only.
COUNTER_RESET_ONE = COUNTER.replace("q <= 4'd0", "q <= 4'd1")
#: Non-ANSI header, with a submodule and an assertion of its own (removed before checking).
COUNTER_NON_ANSI = """module inc(input [3:0] a, output [3:0] y); assign y = a + 4'd1; endmodule
module counter(clk, rst, en, q);
  input clk, rst, en;
  output reg [3:0] q;
  wire [3:0] next;
  inc u(.a(q), .y(next));
  always @(posedge clk) begin
    if (rst) q <= 4'd0;
    else if (en) q <= next;
    assert(q != 4'd9);
  end
endmodule
"""

COUNTER_PROPERTIES = """
  // a helper the properties use (passes through)
  wire at_five = (q == 4'd5);
  p_reset: assert property (@(posedge clk) rst |=> q == 4'd0);
  p_inc: assert property (@(posedge clk) disable iff (rst) en |=> q == $past(q) + 4'd1) else $error("inc");
  p_hold: assert property (@(posedge clk) disable iff (rst) !en |=> $stable(q));
  // 5 then 6 then 7: true two cycles after the first term, false one cycle after it
  p_two: assert property (@(posedge clk) disable iff (rst) (at_five && en) ##1 en |-> ##1 q == 4'd7);
  p_one: assert property (@(posedge clk) disable iff (rst) (at_five && en) ##1 en |-> q == 4'd7);
  p_wrong: assert property (@(posedge clk) en |=> q == 4'd1);
  // q is 0 the cycle after a reset, so this antecedent never holds
  p_vacuous: assert property (@(posedge clk) ($past(rst) && q != 4'd0) |-> en);
  p_range: assert property (@(posedge clk) en ##[1:3] q == 4'd0);
"""

ADDER = "module adder(input [3:0] a, input [3:0] b, output [4:0] s);\n  assign s = a + b;\nendmodule\n"
#: Drops the carry.
ADDER_NO_CARRY = ADDER.replace("assign s = a + b;", "assign s = {1'b0, a + b};")
ADDER_PROPERTIES = """
  p_sum: assert property (s == {1'b0, a} + {1'b0, b});
  p_zero: assert property (a == 4'd0 |-> s == {1'b0, b});
  p_onehot: assert property ((a == 4'd1 && b == 4'd0) |-> $onehot(s) && $onehot0(s) && $countones(s) == 1);
"""

#: A register no reset or initial value covers (it loads only when asked, and the design has no reset).
LOADABLE = """module loadable(input clk, input load, input [3:0] d, output reg [3:0] q);
  always @(posedge clk) if (load) q <= d;
endmodule
"""
LOADABLE_PROPERTIES = """
  // true whatever 0/1 value q starts from; an X start would fail both (X == X is not true)
  p_keeps: assert property (@(posedge clk) !load |=> q == $past(q));
  p_defined: assert property (@(posedge clk) (q == 4'd0) || (q != 4'd0));
  p_loads: assert property (@(posedge clk) load |=> q == $past(d));
  // relies on one start value: false for a start other than 0
  p_zero: assert property (@(posedge clk) !load |=> q == 4'd0);
"""


@pytest.fixture(scope="module")
def runs(sandbox):
    counter = check_properties(
        sandbox, {"reference": COUNTER, "by_two": COUNTER_BY_TWO, "reset_one": COUNTER_RESET_ONE,
                  "non_ansi": COUNTER_NON_ANSI},
        "counter", COUNTER_PROPERTIES, clock="clk", reset=("rst", True), depth=12,
    )
    adder = check_properties(
        sandbox, {"reference": ADDER, "no_carry": ADDER_NO_CARRY}, "adder", ADDER_PROPERTIES, clock=None, reset=None,
    )
    broken = check_properties(
        sandbox, {"reference": COUNTER}, "counter",
        "wire ok = q == 4'd1;\n  assert property (@(posedge clk) en |=> q == );\n", clock="clk", reset=("rst", True),
    )
    broken_helper = check_properties(
        sandbox, {"reference": COUNTER}, "counter",
        "assert property (@(posedge clk) en |=> q != 4'd15);\n  wire bad = q = ;\n", clock="clk", reset=("rst", True),
    )
    cheat = check_properties(
        sandbox, {"reference": COUNTER}, "counter",
        "always @* assume(!en);\n  assert property (@(posedge clk) disable iff (rst) q == 4'd0);\n",
        clock="clk", reset=("rst", True),
    )
    misspelt = check_properties(
        sandbox, {"reference": COUNTER}, "counter", "assert property (@(posedge clk) en |=> qq == 4'd1);\n",
        clock="clk", reset=("rst", True),
    )
    drives = check_properties(
        sandbox, {"reference": COUNTER}, "counter", "assign q = 4'd0;\n  assert property (@(posedge clk) q == 4'd0);\n",
        clock="clk", reset=("rst", True),
    )
    uncovered = check_properties(
        sandbox, {"reference": LOADABLE}, "loadable", LOADABLE_PROPERTIES, clock="clk", reset=None, depth=6,
    )
    return {"uncovered": uncovered, "misspelt": misspelt, "drives": drives, "counter": counter, "adder": adder, "broken": broken, "broken_helper": broken_helper, "cheat": cheat}


def verdicts(report, design: str) -> dict[str, str]:
    return {p.label: report.verdicts[design][p.index].verdict for p in report.properties if p.supported}


@pytest.mark.sandbox
def test_a_correct_set_holds_on_the_reference_and_kills_each_mutant(runs):
    report = runs["counter"]
    on_reference = verdicts(report, "reference")
    for label in ("p_reset", "p_inc", "p_hold", "p_two"):
        assert on_reference[label] in ("proved", "bounded"), (label, report.verdicts["reference"])
    assert verdicts(report, "by_two")["p_inc"] == "fails"
    assert verdicts(report, "by_two")["p_reset"] in ("proved", "bounded")
    assert verdicts(report, "reset_one")["p_reset"] == "fails"
    assert report.killed("by_two") and report.killed("reset_one")
    assert not report.error


@pytest.mark.sandbox
def test_wrong_properties_and_offsets_fail_on_the_reference(runs):
    on_reference = verdicts(runs["counter"], "reference")
    assert on_reference["p_wrong"] == "fails"
    assert on_reference["p_one"] == "fails"  # the same check one cycle early
    assert not runs["counter"].holds_on_reference


@pytest.mark.sandbox
def test_vacuity_is_flagged_on_the_reference_only_where_the_antecedent_is_unreachable(runs):
    report = runs["counter"]
    by_label = {p.label: p.index for p in report.properties}
    assert verdicts(report, "reference")["p_vacuous"] in ("proved", "bounded")
    assert report.vacuous[by_label["p_vacuous"]] is True
    assert report.vacuous[by_label["p_inc"]] is False
    assert report.vacuous[by_label["p_two"]] is False


@pytest.mark.sandbox
def test_unsupported_constructs_are_reported_not_checked(runs):
    report = runs["counter"]
    ranged = next(p for p in report.properties if p.label == "p_range")
    assert not ranged.supported and "##[m:n]" in ranged.reason
    assert ranged.index not in report.verdicts["reference"]


@pytest.mark.sandbox
def test_non_ansi_header_submodules_and_the_designs_own_assertions(runs):
    on_design = verdicts(runs["counter"], "non_ansi")
    # same behaviour as the reference; its own assert(q != 9) is not checked (it would fail)
    for label in ("p_reset", "p_inc", "p_hold", "p_two"):
        assert on_design[label] in ("proved", "bounded"), label
    assert on_design["p_wrong"] == "fails"


@pytest.mark.sandbox
def test_combinational_properties(runs):
    report = runs["adder"]
    assert all(v in ("proved", "bounded") for v in verdicts(report, "reference").values()), report.verdicts
    assert verdicts(report, "no_carry")["p_sum"] == "fails"
    assert report.holds_on_reference and report.killed("no_carry")
    assert set(report.vacuous.values()) == {None, False}


@pytest.mark.sandbox
def test_an_answer_that_does_not_build_is_an_error_with_yosys_line(runs):
    for name, where in (("broken", "property line 2"), ("broken_helper", "answer line")):
        report = runs[name]
        assert report.error.startswith("ERROR:") or "ERROR" in report.error, report.error
        assert where in report.error, report.error
        assert all(r.verdict == "error" for r in report.verdicts["reference"].values())
        assert not report.holds_on_reference


@pytest.mark.sandbox
def test_an_undeclared_name_or_a_driven_design_signal_is_a_build_error(runs):
    assert "implicitly declared" in runs["misspelt"].error
    assert "continuous assignment" in runs["drives"].error and "answer line 1" in runs["drives"].error
    assert not runs["drives"].holds_on_reference


@pytest.mark.sandbox
def test_an_answer_cannot_assume_its_way_to_a_proof(runs):
    # with en held low q would stay 0; the assume is removed, so the property fails
    report = runs["cheat"]
    assert [r.verdict for r in report.verdicts["reference"].values()] == ["fails"]


@pytest.mark.sandbox
def test_a_register_no_reset_covers_starts_from_a_defined_value(runs):
    # any 0/1 start, never X (Yosys's -set-init-def): a property true for every 0/1 start holds
    on_reference = verdicts(runs["uncovered"], "reference")
    for label in ("p_keeps", "p_defined", "p_loads"):
        assert on_reference[label] in ("proved", "bounded"), (label, on_reference)
    assert on_reference["p_zero"] == "fails"  # q may start at any 0/1 value, not only 0


# -- the lowering, without Yosys ---------------------------------------------------------


def test_offsets_implications_and_the_check_cycle():
    lowered = lower_properties("assert property (a ##2 b |-> ##1 c ##0 d);\nassert property (x |=> y ##1 z);", clock="clk")
    first, second = lowered.properties
    assert first.span == 3 and second.span == 2
    assert "$past((a), 3) && $past((b), 1)" in first.lowered and "assert((c) && (d))" in first.lowered
    assert "$past((x), 2)" in second.lowered and "assert($past((y), 1) && (z))" in second.lowered
    assert "__cvdp_cycles > 3" in first.lowered
    # probes: index + count, checking that the antecedent never holds
    assert "__cvdp_sel == 2'd2" in first.lowered and "assert(!($past((a), 3) && $past((b), 1)))" in first.lowered


def test_disable_iff_covers_every_cycle_of_the_window():
    (prop,) = lower_properties("assert property (@(posedge clk) disable iff (rst) a |=> b);", clock="clk").properties
    assert "!((rst) || $past((rst), 1))" in prop.lowered


def test_labels_named_properties_and_pass_through():
    answer = (
        "wire h = a & b;\n"
        "property p; @(posedge clk) h |-> c; endproperty\n"
        "named: assert property (p);\n"
        "always @(posedge clk) r <= h;\n"
        "assert property (@(posedge clk) a) else begin $error(\"x\"); end\n"
    )
    lowered = lower_properties(answer, clock="clk")
    assert [p.label for p in lowered.properties] == ["named", "line 5"]
    assert all(p.supported for p in lowered.properties)
    assert "wire h = a & b;" in lowered.answer and "always @(posedge clk) r <= h;" in lowered.answer
    assert "property" not in lowered.answer and "$error" not in lowered.answer
    assert lowered.answer.count("\n") == answer.count("\n")  # line numbers kept


def test_unsupported_reasons_name_the_construct():
    cases = {
        "a [*2] |-> b": "[*N]", "a |-> b[->1]": "[->N]", "a throughout b": "throughout",
        "s_eventually a": "s_eventually", "a until b": "until", "first_match(a ##1 b)": "first_match",
        "@(posedge clk2) a": "clk2", "a ##[0:$] b": "##[m:n]",
    }
    for body, named in cases.items():
        (prop,) = lower_properties(f"assert property ({body});", clock="clk").properties
        assert not prop.supported and named in prop.reason, (body, prop.reason)
    kinds = lower_properties("cover property (a);\nassume property (b);", clock="clk").properties
    assert all("only assert property" in p.reason for p in kinds)
    (seq,) = lower_properties("sequence s; a ##1 b; endsequence\nassert property (s |-> c);", clock="clk").properties
    assert "sequence" in seq.reason
    (comb,) = lower_properties("assert property (a |=> b);", clock=None).properties
    assert "without a clock" in comb.reason
    (reserved,) = lower_properties("assign __cvdp_sel = 0;", clock="clk").properties
    assert "reserved" in reserved.reason


def test_reading_a_log_is_by_marker_and_whole_lines():
    lowered = lower_properties("assert property (a |-> b);\nassert property (c);", clock="clk")
    script = yosys_script("d.sv", "top", lowered, "M", clock="clk", reset=("rst", False), depth=5, probes=True)
    assert "-set __cvdp_sel 2 -set-at 1 rst 0 -seq 1 -maxsteps 5" in script
    log = (
        "M check\nM 0\nSAT temporal induction proof finished - model found for base case: FAIL!\n"
        "M 1\nReached maximum number of time steps -> proved base case for 5 steps: SUCCESS!\n"
        "M 2\nInduction step proven: SUCCESS!\nM end\n"
    )
    results, error = read_results(log, "0", lowered, "M", 5)
    assert not error and [results[i].verdict for i in range(3)] == ["fails", "bounded", "proved"]
    timed_out, _ = read_results("M check\nM 0\n", "124", lowered, "M", 5)
    assert {r.verdict for r in timed_out.values()} == {"undecided"}


# -- the task's flow: properties may read the ports only ---------------------------------

#: Two registers deep: q is d two cycles late; `stage` and `out_r` are internal.
PIPE = """module pipe(input clk, input rst, input [3:0] d, output [3:0] q);
  reg [3:0] stage, out_r;
  always @(posedge clk)
    if (rst) begin stage <= 4'd0; out_r <= 4'd0; end
    else begin stage <= d; out_r <= stage; end
  assign q = out_r;
endmodule
"""
#: What a copy of the design's text earns nothing for: each assign restated, each register shadowed.
PIPE_RESTATING = """reg [3:0] chk_sh_stage, chk_sh_out_r;
always @(posedge clk)
  if (rst) begin chk_sh_stage <= 4'd0; chk_sh_out_r <= 4'd0; end
  else begin chk_sh_stage <= d; chk_sh_out_r <= stage; end
assert property (@(posedge clk) q == out_r);
assert property (@(posedge clk) stage == chk_sh_stage);
"""
#: Written from the behaviour (q is d two cycles late, 0 after a reset), over the ports only.
PIPE_HONEST = """reg [3:0] chk_d1;
always @(posedge clk) chk_d1 <= d;
assert property (@(posedge clk) rst |=> q == 4'd0);
assert property (@(posedge clk) rst ##1 !rst |=> q == 4'd0);
assert property (@(posedge clk) disable iff (rst) ##2 q == $past(d, 2));
assert property (@(posedge clk) disable iff (rst) ##2 q == $past(chk_d1));
"""


def pipe_problem():
    import dataclasses

    from cvdp_gym.tasks.names import ASSERTION
    from cvdp_gym.tasks.posing import task_problem
    from tests.cvdp_gym.tasks.verification_problems import counter_problem

    spec = "`pipe`: q is d delayed by two rising edges of clk; a synchronous active-high reset rst clears both stages."
    problem = dataclasses.replace(
        counter_problem(), id="made-up.pipe", prompt=spec, targets=("pipe.sv",), reference={"pipe.sv": PIPE},
    )
    return task_problem(problem, ASSERTION)


def grade(sandbox, problem, text: str):
    from cvdp_gym.sandbox.base import Limits
    from cvdp_gym.tasks.assertion_flow import AssertionTaskFlow

    return AssertionTaskFlow().run(sandbox, problem, {problem.targets[0]: text}, limits=Limits(wall_s=300), seed=3)


@pytest.mark.parametrize(
    ("answer", "named", "line"),
    [
        (PIPE_RESTATING, "stage", 4),  # a register shadowed from the design's own (the first such line)
        (PIPE_RESTATING.replace("chk_sh_out_r <= stage", "chk_sh_out_r <= d"), "out_r", 5),  # an assign restated
        ("assert property (@(posedge clk) q == $past(stage));\n", "stage", 1),
        ("\nassert property (@(posedge clk) q == pipe.out_r);\n", "pipe.out_r", 2),  # a hierarchical name into it
        ("assert property (@(posedge clk) q == $root.pipe.stage);\n", "$root.pipe.stage", 1),
    ],
)
def test_a_property_reading_the_designs_internals_is_reach_in_before_anything_runs(answer, named, line):
    result = grade(None, pipe_problem(), answer)  # no sandbox: refused before any tool runs
    assert result.failure_class == "reach_in" and not result.passed, result.reason
    assert f"`{named}`" in result.reason and f"answer line {line}:" in result.reason, result.reason
    assert "inside the design" in result.reason


def test_an_instance_or_a_name_declared_nowhere_is_refused_too():
    instance = grade(None, pipe_problem(), "pipe copy(.clk(clk), .rst(rst), .d(d), .q());\nassert property (@(posedge clk) 1);\n")
    assert instance.failure_class == "reach_in" and "an instance of `pipe`" in instance.reason
    misspelt = grade(None, pipe_problem(), "assert property (@(posedge clk) qq == 4'd0);\n")
    assert misspelt.failure_class == "build_error" and "`qq` is declared nowhere" in misspelt.reason


def test_the_ports_only_check_reads_non_ansi_headers_and_parameters():
    from cvdp_gym.tasks.assertions.ports_only import outside_names, ports_interface

    design = (
        "module n(clk, a, y); parameter P = 2; localparam L = 3; input clk; input [P-1:0] a; output [P-1:0] y;\n"
        "  reg [P-1:0] r; always @(posedge clk) r <= a; assign y = r;\nendmodule\n"
    )
    assert outside_names(design, "n", "reg [P-1:0] chk_a;\nalways @(posedge clk) chk_a <= a;\nassert property (@(posedge clk) y == $past(a));\n") is None
    assert outside_names(design, "n", "assert property (@(posedge clk) y == r);\n").name == "r"
    assert outside_names(design, "n", "assert property (@(posedge clk) y == L);\n").name == "L"  # a localparam is internal
    shown = ports_interface(design, "n")
    assert "input [P-1:0] a;" in shown and "parameter P = 2;" in shown and "reg [P-1:0] r" not in shown
    # slang counts bytes: a comment in UTF-8 before the header moves nothing
    accented = "// contrôleur — état\n" + PIPE.replace("output [3:0] q);", "output [3:0] q); // sortie é")
    assert ports_interface(accented, "pipe").endswith("output [3:0] q);")
    assert outside_names(accented, "pipe", PIPE_HONEST) is None
    assert outside_names(accented, "pipe", "assert property (@(posedge clk) q == stage);\n").name == "stage"


@pytest.mark.sandbox
def test_honest_port_only_properties_with_helpers_keep_full_kills(sandbox):
    pipe = grade(sandbox, pipe_problem(), PIPE_HONEST)
    assert pipe.passed and pipe.official["kill_rate"] == 1.0, (pipe.reason, pipe.official.get("properties"))
    from cvdp_gym.data import load_dataset

    (counter,) = [p for p in load_dataset("bundled#assertion") if p.id == "cvdp_gym_event_counter_0001.assertion"]
    graded = grade(sandbox, counter, EVENT_COUNTER_PROPERTIES)
    assert graded.passed and graded.official["kill_rate"] == 1.0, (graded.reason, graded.official.get("properties"))
