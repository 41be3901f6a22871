"""The reference-equivalence grader (``equivalence.flow``) on made-up designs, with real
Icarus, Verilator and Yosys runs in the real sandbox.

Every design here is written for these tests. Expected mismatches are derived from Python
models of the designs run on the same stimulus (``make_stimulus``, whose seed depends only
on the problem and the settings), never copied from a run of the code under test. All runs
happen once, two at a time, in a module fixture; the tests read their results.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from cvdp_gym.data.problems import Problem
from cvdp_gym.equivalence.ports import read_design
from cvdp_gym.equivalence.settings import read_settings
from cvdp_gym.equivalence.sources import rename_modules
from cvdp_gym.equivalence.stimulus import make_stimulus
from cvdp_gym.errors import ConfigError
from cvdp_gym.harness.flows import FLOWS
from cvdp_gym.harness.results import HarnessResult
from cvdp_gym.sandbox.base import Limits
from cvdp_gym.seeds import stimulus_seed

pytestmark = pytest.mark.sandbox

# -- the reference designs ------------------------------------------------------------

ALU = """module alu(input [7:0] a, input [7:0] b, input [1:0] op, output reg [7:0] y, output zero);
  always @* begin
    case (op)
      2'd0: y = a + b;
      2'd1: y = a - b;
      2'd2: y = a & b;
      default: y = a ^ b;
    endcase
  end
  assign zero = (y == 8'd0);
endmodule
"""
ALU_REWRITE = """module alu(input [7:0] a, input [7:0] b, input [1:0] op, output [7:0] y, output zero);
  wire [7:0] sum = a + b;
  wire [7:0] diff = a + ~b + 8'd1;
  assign y = op[1] ? (op[0] ? a ^ b : a & b) : (op[0] ? diff : sum);
  assign zero = ~|y;
endmodule
"""
COUNTER = """module counter(input clk, input rst, input en, output reg [3:0] q, output wrap);
  always @(posedge clk)
    if (rst) q <= 4'd0;
    else if (en) q <= q + 4'd1;
  assign wrap = en & (q == 4'hf);
endmodule
"""
COUNTER_REWRITE = """module counter(input clk, input rst, input en, output [3:0] q, output wrap);
  reg [3:0] count;
  wire [4:0] next = {1'b0, count} + {4'd0, en};
  always @(posedge clk) count <= rst ? 4'd0 : next[3:0];
  assign q = count;
  assign wrap = en && &count;
endmodule
"""
#: A second reset sequence does not clear it: only reachable after a reset re-asserted.
COUNTER_ONE_RESET = """module counter(input clk, input rst, input en, output reg [3:0] q, output wrap);
  reg armed = 1'b1;
  always @(posedge clk)
    if (rst && armed) begin q <= 4'd0; armed <= 1'b0; end
    else if (!rst && en) q <= q + 4'd1;
  assign wrap = en & (q == 4'hf);
endmodule
"""
SHIFTER = """module shifter(input clk, input rst_n, input load, input [7:0] d, input sin,
               output reg [7:0] q, output msb);
  always @(posedge clk or negedge rst_n)
    if (!rst_n) q <= 8'h5a;
    else if (load) q <= d;
    else q <= {q[6:0], sin};
  assign msb = q[7];
endmodule
"""
SHIFTER_REWRITE = """module shifter(input clk, input rst_n, input load, input [7:0] d, input sin,
               output [7:0] q, output msb);
  reg [7:0] r;
  always @(negedge rst_n or posedge clk) begin
    if (rst_n == 1'b0) r <= 8'b0101_1010;
    else r <= load ? d : (r << 1) | {7'd0, sin};
  end
  assign q = r;
  assign msb = r[7];
endmodule
"""
CDC = """module cdc(input wclk, input rclk, input rst, input [3:0] din, input we,
           output reg [3:0] dout, output reg [3:0] seen);
  reg [3:0] hold;
  always @(posedge wclk) if (rst) hold <= 4'd0; else if (we) hold <= din;
  always @(posedge rclk)
    if (rst) begin dout <= 4'd0; seen <= 4'd0; end
    else begin dout <= hold; seen <= seen + (dout != hold); end
endmodule
"""
CDC_REWRITE = """module cdc(input wclk, input rclk, input rst, input [3:0] din, input we,
           output reg [3:0] dout, output reg [3:0] seen);
  reg [3:0] hold;
  always @(posedge wclk) hold <= rst ? 4'd0 : (we ? din : hold);
  always @(posedge rclk) begin
    dout <= rst ? 4'd0 : hold;
    seen <= rst ? 4'd0 : seen + {3'd0, |(dout ^ hold)};
  end
endmodule
"""
DETECTOR = """module detector(input clk, input reset, input bit_in, output reg found);
  localparam IDLE = 2'd0, ONE = 2'd1, ONEZERO = 2'd2, HIT = 2'd3;
  reg [1:0] state, next;
  always @(posedge clk) if (reset) state <= IDLE; else state <= next;
  always @* begin
    next = state;
    case (state)
      IDLE: next = bit_in ? ONE : IDLE;
      ONE: next = bit_in ? ONE : ONEZERO;
      ONEZERO: next = bit_in ? HIT : IDLE;
      HIT: next = bit_in ? ONE : ONEZERO;
    endcase
  end
  always @* found = (state == HIT);
endmodule
"""
DETECTOR_ONE_HOT = """module detector(input clk, input reset, input bit_in, output found);
  reg [3:0] s;  // one-hot: s[0] idle, s[1] one, s[2] one-zero, s[3] hit
  always @(posedge clk)
    if (reset) s <= 4'b0001;
    else s <= {s[2] & bit_in, (s[1] | s[3]) & ~bit_in, (s[0] | s[1] | s[3]) & bit_in, (s[0] | s[2]) & ~bit_in};
  assign found = s[3];
endmodule
"""
#: An 8-bit timer: the wrong answer's bug shows only once it has counted to 200.
TIMER = """module timer(input clk, input rst, input tick, output reg [7:0] t, output done);
  always @(posedge clk) if (rst) t <= 8'd0; else if (tick) t <= t + 8'd1;
  assign done = (t == 8'hff);
endmodule
"""
#: A comparator whose wrong answer differs on one input pair only: random stimulus misses it.
MATCHER = """module matcher(input [15:0] a, input [15:0] b, output eq);
  assign eq = (a == b);
endmodule
"""
#: Differs from MATCHER on one input pair in 2**32: only the formal stage finds it.
MATCHER_RARE = MATCHER.replace("(a == b)", "(a == b) | (a == 16'h1234 && b == 16'h4321)")
PICK = """module pick(input [1:0] sel, input [7:0] a, input [7:0] b, output reg [7:0] y);
  always @* begin
    case (sel)
      2'd0: y = a;
      2'd1: y = b;
      2'd2: y = a & b;
      default: y = 8'bx;
    endcase
  end
endmodule
"""
BIG_RAM = """module ram(input clk, input we, input [11:0] addr, input [15:0] din, output reg [15:0] dout);
  reg [15:0] mem [0:4095];
  always @(posedge clk) begin
    if (we) mem[addr] <= din;
    dout <= mem[addr];
  end
endmodule
"""
MUL = """module mul(input [15:0] a, input [15:0] b, output [31:0] p);
  assign p = a * b;
endmodule
"""
MUL_SHIFT_ADD = """module mul(input [15:0] a, input [15:0] b, output reg [31:0] p);
  integer i;
  always @* begin
    p = 32'd0;
    for (i = 0; i < 16; i = i + 1) if (b[i]) p = p + ({16'd0, a} << i);
  end
endmodule
"""
#: Opens on one key of 65536: random stimulus never moves its output.
LOCK = """module lock(input [15:0] key, output open);
  assign open = (key == 16'hbeef);
endmodule
"""
NO_CLOCK = """module relay(input tick, input d, output reg q);
  wire strobe = tick;
  always @(posedge strobe) q <= d;
endmodule
"""
#: Prints what the test bench prints, without the per-run secret.
FAKE_PASS = """  initial begin
    $display("@@cvdp-00000000000000000000000000000000@@ RESULT 1998 1998");
    $display(" RESULT 1998 1998");
    $display(" DONE");
  end
endmodule
"""


def problem(name: str, reference: str, top: str, **equivalence: Any) -> Problem:
    """A training item as API29 describes it."""
    target = f"{top}.sv"
    return Problem(
        id=f"reference-set.{name}", categories=(), agentic=False, prompt=f"Write {top}.", context={},
        targets=(target,), harness={}, reference={target: reference}, benchmark="reference-set",
        grader="reference", toolchain="cvdp-sim",
        extra={"name": name, "top": top, "set": "made-up", "checked_reference": True, "equivalence": equivalence},
    )


P_ALU = problem("alu", ALU, "alu")
P_COUNTER = problem("counter", COUNTER, "counter")
P_SHIFTER = problem("shifter", SHIFTER, "shifter")
P_CDC = problem("cdc", CDC, "cdc")
P_DETECTOR = problem("detector", DETECTOR, "detector")
P_TIMER = problem("timer", TIMER, "timer")
WRONG_OP = ALU.replace("a - b", "b - a")
WRONG_WRAP = COUNTER.replace("4'hf", "4'he")
WRONG_RESET_VALUE = COUNTER.replace("q <= 4'd0", "q <= 4'd1")
WRONG_TRANSITION = DETECTOR.replace("ONEZERO: next = bit_in ? HIT : IDLE;", "ONEZERO: next = bit_in ? HIT : ONE;")

#: Differs from TIMER only once the timer has counted to 200.
CASES_DEEP_TIMER = TIMER.replace("(t == 8'hff)", "(t == 8'hff) | (t == 8'd200)")

CASES: dict[str, tuple[Problem, str]] = {
    # combinational
    "alu/self": (P_ALU, ALU),
    "alu/rewrite": (P_ALU, ALU_REWRITE),
    "alu/operator": (P_ALU, WRONG_OP),
    "alu/width": (P_ALU, ALU.replace("2'd0: y = a + b;", "2'd0: y = {1'b0, a[6:0] + b[6:0]};")),
    "alu/constant": (P_ALU, ALU.replace("(y == 8'd0)", "(y == 8'd1)")),
    # synchronous active-high reset
    "counter/self": (P_COUNTER, COUNTER),
    "counter/rewrite": (P_COUNTER, COUNTER_REWRITE),
    "counter/constant": (P_COUNTER, WRONG_WRAP),
    "counter/reset-value": (P_COUNTER, WRONG_RESET_VALUE),
    "counter/one-reset": (P_COUNTER, COUNTER_ONE_RESET),
    "counter/polarity": (P_COUNTER, COUNTER.replace("if (rst)", "if (!rst)")),
    # asynchronous active-low reset
    "shifter/self": (P_SHIFTER, SHIFTER),
    "shifter/rewrite": (P_SHIFTER, SHIFTER_REWRITE),
    "shifter/reset-value": (P_SHIFTER, SHIFTER.replace("8'h5a", "8'ha5")),
    "shifter/synchronous": (P_SHIFTER, SHIFTER.replace("posedge clk or negedge rst_n", "posedge clk")),
    "shifter/direction": (P_SHIFTER, SHIFTER.replace("{q[6:0], sin}", "{sin, q[7:1]}")),
    # two clocks
    "cdc/self": (P_CDC, CDC),
    "cdc/rewrite": (P_CDC, CDC_REWRITE),
    "cdc/wrong-clock": (P_CDC, CDC.replace("posedge rclk", "posedge wclk")),
    "cdc/operator": (P_CDC, CDC.replace("seen + (dout != hold)", "seen + (dout == hold)")),
    # a small FSM
    "detector/self": (P_DETECTOR, DETECTOR),
    "detector/one-hot": (P_DETECTOR, DETECTOR_ONE_HOT),
    "detector/transition": (P_DETECTOR, WRONG_TRANSITION),
    "detector/output": (P_DETECTOR, DETECTOR.replace("(state == HIT)", "(state == HIT) | (state == ONEZERO)")),
    # deep in time
    "timer/deep": (P_TIMER, CASES_DEEP_TIMER),
    # interface, build, cheating, early end
    "counter/renamed-port": (P_COUNTER, re.sub(r"\ben\b", "enable", COUNTER)),
    "counter/port-width": (P_COUNTER, COUNTER.replace("input en", "input [1:0] en")),
    "counter/port-direction": (
        P_COUNTER, COUNTER.replace("output wrap", "input wrap").replace("assign wrap = en & (q == 4'hf);", ""),
    ),
    "counter/no-top": (P_COUNTER, COUNTER.replace("module counter", "module count")),
    "counter/syntax": (P_COUNTER, COUNTER.replace("endmodule", "assign wrap2 = ;\nendmodule")),
    "counter/syntax-and-ports": (
        P_COUNTER, COUNTER.replace("input en,", "input en,,").replace("endmodule", "wire x = ;\nendmodule"),
    ),
    "counter/fake-pass": (P_COUNTER, WRONG_WRAP.replace("endmodule\n", FAKE_PASS)),
    "counter/finish": (P_COUNTER, COUNTER.replace("endmodule", "initial #500 $finish;\nendmodule")),
    "counter/twice": (P_COUNTER, WRONG_WRAP),
    # references that cannot be graded; settings
    "unsupported/no-clock": (problem("relay", NO_CLOCK, "relay"), NO_CLOCK),
    "unsupported/does-not-compile": (problem("broken", COUNTER.replace("q + 4'd1", "q +* 4'd1"), "counter"), COUNTER),
    "unsupported/unknown-module": (
        problem("lib", "module top(input a, output y);\n  cell u(.a(a), .y(y));\nendmodule\n", "top"), COUNTER,
    ),
    "unsupported/settings": (problem("settings", COUNTER, "counter", mode="sometimes"), COUNTER),
    "diagnostic/stuck": (problem("lock", LOCK, "lock"), LOCK.replace("(key == 16'hbeef)", "1'b0")),
    # X in the reference
    "x/dontcare": (problem("pick", PICK, "pick"), PICK.replace("8'bx", "8'd0")),
    "x/strict-self": (problem("pick-strict", PICK, "pick", x="strict"), PICK),
    "x/strict": (problem("pick-strict", PICK, "pick", x="strict"), PICK.replace("8'bx", "8'd0")),
    # stage by stage
    "matcher/rare": (
        problem("matcher", MATCHER, "matcher"),
        MATCHER_RARE,
    ),
    "formal/transition": (problem("detector-formal", DETECTOR, "detector", mode="formal"), WRONG_TRANSITION),
    "formal/self": (problem("detector-formal", DETECTOR, "detector", mode="formal"), DETECTOR),
    "simulation/transition": (problem("detector-sim", DETECTOR, "detector", mode="simulation"), WRONG_TRANSITION),
    "undecided/too-large": (problem("ram", BIG_RAM, "ram"), BIG_RAM.replace("mem[addr];", "mem[addr] ^ 16'd0;")),
    "undecided/unreadable": (  # a cast to a user type: Icarus reads it, Yosys 0.40 does not
        P_COUNTER, COUNTER.replace("q <= q + 4'd1;", "q <= nib_t'(q + 4'd1);").replace(
            "always @(posedge clk)", "typedef logic [3:0] nib_t;\n  always @(posedge clk)"),
    ),
    "undecided/timeout": (problem("mul", MUL, "mul", formal_timeout=2), MUL_SHIFT_ADD),
    # the published recipes as modes
    "codev-r1/self": (problem("counter-codev", COUNTER, "counter", mode="codev-r1"), COUNTER),
    "codev-r1/reset-value": (problem("counter-codev", COUNTER, "counter", mode="codev-r1"), WRONG_RESET_VALUE),
    "codev-r1/x": (problem("pick-codev", PICK, "pick", mode="codev-r1"), PICK.replace("8'bx", "8'd0")),
    "codev-r1/two-clocks": (problem("cdc-codev", CDC, "cdc", mode="codev-r1"), CDC),
    "codev-r1/rare": (
        problem("matcher-codev", MATCHER, "matcher", mode="codev-r1"),
        MATCHER_RARE,
    ),
    "verithoughts/self": (problem("counter-vt", COUNTER, "counter", mode="verithoughts"), COUNTER),
    "verithoughts/operator": (problem("alu-vt", ALU, "alu", mode="verithoughts"), WRONG_OP),
    "verithoughts/deep": (problem("timer-vt", TIMER, "timer", mode="verithoughts"), CASES_DEEP_TIMER),
    # Verilator
    "verilator/counter-self": (problem("counter", COUNTER, "counter", simulator="verilator"), COUNTER),
    "verilator/counter-constant": (problem("counter", COUNTER, "counter", simulator="verilator"), WRONG_WRAP),
    "verilator/alu-operator": (problem("alu", ALU, "alu", simulator="verilator"), WRONG_OP),
}


@pytest.fixture(scope="module")
def graded(sandbox) -> dict[str, HarnessResult]:
    """Every case, graded by the registered flow two at a time."""
    flow = FLOWS["reference"]
    # The slow ones first, so the pool never waits on one at the end.
    order = sorted(CASES, key=lambda key: not key.startswith(("verilator", "cdc", "undecided")))

    def grade(key: str) -> HarnessResult:
        case, answer = CASES[key]
        return flow.run(sandbox, case, {case.targets[0]: answer}, limits=Limits(wall_s=120))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(order, pool.map(grade, order), strict=True))


def simulation(result: HarnessResult) -> dict[str, Any]:
    return result.official["simulation"]


def formal(result: HarnessResult) -> dict[str, Any]:
    return result.official["formal"]


def stimulus_of(case: Problem):
    settings = read_settings(case.extra)
    design = read_design(case.reference[case.targets[0]], case.extra["top"])
    return make_stimulus(design, settings.cycles, stimulus_seed(case.id, settings))


# -- Python models of the designs, on the test bench's timing -------------------------
# Cycle c: the clock rises (sampling the vector applied in cycle c-1, or before the first
# edge the vector of cycle 0), the vector of cycle c is applied, the outputs are compared.


def counter_outputs(stimulus, wrap_at: int = 15, reset_to: int = 0) -> list[dict[str, int | None]]:
    q: int | None = None
    rows = []
    for c in range(stimulus.cycles):
        sampled = stimulus.values(max(c - 1, 0))
        if sampled["rst"]:
            q = reset_to
        elif sampled["en"] and q is not None:
            q = (q + 1) & 0xF
        en = stimulus.values(c)["en"]
        rows.append({"q": q, "wrap": None if q is None and en else int(bool(en) and q == wrap_at)})
    return rows


def alu_outputs(values: dict[str, int], subtract) -> dict[str, int]:
    a, b, op = values["a"], values["b"], values["op"]
    y = [(a + b) & 0xFF, subtract(a, b) & 0xFF, a & b, a ^ b][op]
    return {"y": y, "zero": int(y == 0)}


def first_difference(expected: list[dict], got: list[dict], start: int) -> tuple[int, dict, dict]:
    """The first compared cycle where a known expected value differs (X in the reference is a don't-care)."""
    for c in range(start, len(expected)):
        differ = [k for k, v in expected[c].items() if v is not None and got[c][k] != v]
        if differ:
            return c, {k: expected[c][k] for k in differ}, {k: got[c][k] for k in differ}
    raise AssertionError("the models never differ")


def literal(width: int, value: int) -> str:
    return f"{width}'h{value:x}" if width > 1 else f"1'b{value}"


# -- the tests --------------------------------------------------------------------------

SELF = ["alu/self", "counter/self", "shifter/self", "cdc/self", "detector/self"]
REWRITES = ["alu/rewrite", "counter/rewrite", "shifter/rewrite", "cdc/rewrite", "detector/one-hot"]
WRONG = [
    "alu/operator", "alu/width", "alu/constant", "counter/constant", "counter/reset-value", "counter/one-reset",
    "counter/polarity", "shifter/reset-value", "shifter/synchronous", "shifter/direction", "cdc/wrong-clock",
    "cdc/operator", "detector/transition", "detector/output", "timer/deep",
]


@pytest.mark.parametrize("key", SELF + REWRITES)
def test_a_reference_and_an_equivalent_rewrite_pass_both_stages(graded, key):
    result = graded[key]
    assert result.passed, result.reason
    assert result.failure_class is None
    assert simulation(result)["verdict"] == "match"
    assert formal(result)["verdict"] in ("proved", "bounded"), formal(result)
    assert result.tests.total == result.tests.passed > 1000
    assert result.official["label"].startswith("both stages")
    assert simulation(result)["reference_changes"] > 100  # the stimulus moves the reference


def test_formal_proves_what_induction_can_close_and_bounds_the_rest(graded):
    # Self-checks on one clock keep both copies in lock step: induction closes.
    for key in ("alu/self", "counter/self", "shifter/self", "detector/self"):
        assert formal(graded[key])["verdict"] == "proved", key
    # Two clocks: the event model, clocks free, bounded.
    assert formal(graded["cdc/self"])["model"] == "event"
    assert formal(graded["counter/self"])["model"] == "cycle"


@pytest.mark.parametrize("key", WRONG)
def test_wrong_answers_are_caught_with_the_first_mismatch(graded, key):
    result = graded[key]
    assert not result.passed
    assert result.failure_class == "test_failure", result.reason
    sim = simulation(result)
    assert sim["verdict"] == "mismatch"
    first = sim["first"]
    assert first["expected"] and set(first["expected"]) == set(first["got"])
    assert all(first["expected"][k] != first["got"][k] for k in first["expected"])
    assert first["inputs"] and first["cycle"] >= first["reset_cycles"]
    assert sum(sim["mismatches"].values()) >= result.tests.failed > 0
    assert result.tests.total == result.tests.passed + result.tests.failed
    # The formal stage cannot change a failed simulation's verdict: it is not run.
    assert formal(result)["verdict"] == "skipped"


def test_the_counters_mismatches_are_those_of_a_model(graded):
    stimulus = stimulus_of(P_COUNTER)
    reference = counter_outputs(stimulus)
    for key, wrong in (("counter/constant", counter_outputs(stimulus, wrap_at=14)),
                       ("counter/reset-value", counter_outputs(stimulus, reset_to=1))):
        sim = simulation(graded[key])
        cycle, expected, got = first_difference(reference, wrong, stimulus.compare_from)
        widths = {"q": 4, "wrap": 1}
        assert sim["first"]["cycle"] == cycle, key
        assert sim["first"]["expected"] == {k: literal(widths[k], v) for k, v in expected.items()}
        assert sim["first"]["got"] == {k: literal(widths[k], v) for k, v in got.items()}
        applied = zip(stimulus.driven, stimulus.vectors[cycle], strict=True)
        assert sim["first"]["inputs"] == {p.name: literal(p.width, v) for p, v in applied}
        compared = range(stimulus.compare_from, stimulus.cycles)
        for name in ("q", "wrap"):
            count = sum(reference[c][name] is not None and wrong[c][name] != reference[c][name] for c in compared)
            assert sim["mismatches"][name] == count, (key, name)
        assert sim["cycles"] == len(compared)


def test_the_alus_first_mismatch_is_that_of_a_model(graded):
    stimulus = stimulus_of(P_ALU)
    reference = [alu_outputs(stimulus.values(c), lambda a, b: a - b) for c in range(stimulus.cycles)]
    wrong = [alu_outputs(stimulus.values(c), lambda a, b: b - a) for c in range(stimulus.cycles)]
    cycle, expected, got = first_difference(reference, wrong, 0)
    first = simulation(graded["alu/operator"])["first"]
    assert first["cycle"] == cycle
    assert first["expected"] == {k: literal(8 if k == "y" else 1, v) for k, v in expected.items()}
    assert first["got"] == {k: literal(8 if k == "y" else 1, v) for k, v in got.items()}


def test_a_bug_after_a_second_reset_shows_after_the_reset_is_reasserted(graded):
    stimulus = stimulus_of(P_COUNTER)
    resets = [c for c in range(stimulus.compare_from, stimulus.cycles) if stimulus.values(c)["rst"]]
    assert resets, "the stimulus re-asserts the reset"
    assert simulation(graded["counter/one-reset"])["first"]["cycle"] > resets[0]


def test_a_bug_deep_in_time_is_reached(graded):
    stimulus = stimulus_of(P_TIMER)
    ticks, reached = 0, None
    for c in range(stimulus.compare_from, stimulus.cycles):
        ticks = 0 if stimulus.values(c)["rst"] else ticks + stimulus.values(c)["tick"]
        if ticks >= 200:
            reached = c
            break
    assert reached is not None
    first = simulation(graded["timer/deep"])["first"]
    assert first["cycle"] > 200 and first["expected"] == {"done": "1'b0"} and first["got"] == {"done": "1'b1"}


def test_interface_errors_stop_before_any_simulation(graded):
    for key in ("counter/renamed-port", "counter/port-width", "counter/port-direction", "counter/no-top"):
        result = graded[key]
        assert result.failure_class == "interface_error", (key, result.reason)
        assert simulation(result)["verdict"] == formal(result)["verdict"] == "skipped"
    assert "missing port input [1] en" in graded["counter/renamed-port"].reason
    assert "unexpected port enable" in graded["counter/renamed-port"].reason
    assert "2 bit(s) wide, expected 1" in graded["counter/port-width"].reason


def test_an_answer_that_does_not_compile_is_a_build_error(graded):
    for key in ("counter/syntax", "counter/syntax-and-ports"):
        result = graded[key]
        assert result.failure_class == "build_error", (key, result.reason)
        assert "counter.sv" in result.reason
        assert "ref_" not in result.log_tail and "tb_" not in result.log_tail  # nothing of ours leaks


def test_printed_pass_lines_do_not_pass(graded):
    result = graded["counter/fake-pass"]
    assert not result.passed and result.failure_class == "test_failure"
    assert "RESULT 1998 1998" in result.log_tail  # the answer did print them
    assert simulation(result)["mismatches"]["wrap"] > 0


def test_an_answer_that_ends_the_simulation_fails(graded):
    """The static check names it before anything runs (the test bench's own watch for an early
    end, "before the test bench finished", stays behind it)."""
    result = graded["counter/finish"]
    assert not result.passed and result.failure_class == "reach_in"
    assert "`$finish`: not one of the system tasks" in result.reason


def test_the_verdict_is_deterministic(graded):
    once, twice = graded["counter/constant"], graded["counter/twice"]
    assert once.official["simulation"] == twice.official["simulation"]
    assert once.tests == twice.tests and once.reason == twice.reason


def test_references_that_cannot_be_graded_are_unsupported(graded):
    for key in [k for k in CASES if k.startswith("unsupported/")]:
        result = graded[key]
        assert result.failure_class == "unsupported", (key, result.reason)
        assert not result.passed
        assert result.official["label"].startswith("the reference cannot be graded")
    assert "no clock" in graded["unsupported/no-clock"].reason
    assert "reference does not compile" in graded["unsupported/does-not-compile"].reason
    assert "mode" in graded["unsupported/settings"].reason


def test_a_reference_the_stimulus_never_moves_is_flagged(graded):
    # The simulation never opens the lock, so it cannot tell the wrong answer (never open)
    # apart; the label says so, and the formal stage finds the key.
    result = graded["diagnostic/stuck"]
    assert simulation(result)["verdict"] == "match" and simulation(result)["reference_changes"] == 0
    assert "never changed" in result.official["label"]
    assert not result.passed and formal(result)["trace"][-1]["inputs"] == {"key": "16'hbeef"}


def test_x_in_the_reference_is_a_dont_care_unless_strict(graded):
    assert graded["x/dontcare"].passed
    assert graded["x/strict-self"].passed
    strict = graded["x/strict"]
    assert not strict.passed and strict.failure_class == "test_failure"
    first = simulation(strict)["first"]
    assert first["inputs"]["sel"] == "2'h3"
    assert first["expected"] == {"y": "8'bxxxxxxxx"} and first["got"] == {"y": "8'h0"}


def test_a_difference_only_the_formal_stage_finds_fails_with_its_trace(graded):
    result = graded["matcher/rare"]
    assert not result.passed and result.failure_class == "test_failure"
    assert simulation(result)["verdict"] == "match"
    found = formal(result)
    assert found["verdict"] == "counterexample"
    last = found["trace"][-1]
    assert last["inputs"] == {"a": "16'h1234", "b": "16'h4321"}
    assert last["expected"] == {"eq": "1'b0"} and last["got"] == {"eq": "1'b1"}
    assert result.tests.failed == 1 and result.tests.total == result.tests.passed + 1


def test_mode_formal_reports_a_counterexample_trace_from_reset(graded):
    result = graded["formal/transition"]
    assert not result.passed and result.failure_class == "test_failure"
    assert simulation(result)["verdict"] == "skipped"
    trace = formal(result)["trace"]
    assert trace[0]["step"] == 1 and trace[0]["inputs"]["reset"] == "1'b1"  # from the reset state
    assert [s["step"] for s in trace] == list(range(1, len(trace) + 1))
    assert trace[-1]["expected"] and trace[-1]["got"]
    # The wrong answer differs only after a 1, 0, 1 sequence from idle: at least four steps.
    assert len(trace) >= 4
    assert graded["formal/self"].passed and formal(graded["formal/self"])["verdict"] == "proved"
    assert graded["formal/self"].official["label"].startswith("formal only")


def test_mode_simulation_skips_the_formal_stage(graded):
    result = graded["simulation/transition"]
    assert not result.passed and formal(result)["verdict"] == "skipped"
    assert result.official["label"].startswith("simulation only")


@pytest.mark.parametrize(("key", "why"), [
    ("undecided/too-large", "too large"),
    ("undecided/unreadable", "cannot read the answer"),
    ("undecided/timeout", "timeout"),
])
def test_an_undecided_formal_stage_leaves_the_verdict_to_a_covering_simulation(graded, key, why):
    result = graded[key]
    assert result.passed, result.reason
    assert formal(result)["verdict"] == "undecided" and why in formal(result)["why"]
    assert simulation(result)["verdict"] == "match"
    coverage = simulation(result)["coverage"]
    assert coverage["measured"] and coverage["covered"] == coverage["bits"] > 0, coverage
    assert result.official["label"].startswith("the simulation covered the design; the formal stage was undecided")


def test_the_codev_r1_recipe_is_random_strict_and_one_clock(graded):
    assert graded["codev-r1/self"].passed, graded["codev-r1/self"].reason
    assert simulation(graded["codev-r1/self"])["cycles"] > 100 * 1000  # 100 sequences of 1,000 steps
    assert graded["codev-r1/reset-value"].failure_class == "test_failure"
    # ``===``: the reference's X is a mismatch, where the default mode calls it a don't-care.
    assert graded["codev-r1/x"].failure_class == "test_failure" and graded["x/dontcare"].passed
    two = graded["codev-r1/two-clocks"]
    assert two.failure_class == "unsupported" and "one clock" in two.reason
    # Its hole: a bug on one input pair in 2**32 passes the recipe; the default mode's formal stage finds it.
    assert graded["codev-r1/rare"].passed and not graded["matcher/rare"].passed


def test_the_verithoughts_recipe_is_50_steps_from_zero(graded):
    assert graded["verithoughts/self"].passed, graded["verithoughts/self"].reason
    assert formal(graded["verithoughts/self"])["verdict"] == "bounded" and formal(graded["verithoughts/self"])["depth"] == 50
    assert graded["verithoughts/operator"].failure_class == "test_failure"
    assert formal(graded["verithoughts/operator"])["verdict"] == "counterexample"
    # Its hole: a bug 200 counts deep passes the recipe; the default mode's simulation finds it.
    assert graded["verithoughts/deep"].passed and not graded["timer/deep"].passed


def test_verilator_gives_icaruss_verdicts(graded):
    pairs = [("verilator/counter-self", "counter/self"), ("verilator/counter-constant", "counter/constant"),
             ("verilator/alu-operator", "alu/operator")]
    for verilator, icarus in pairs:
        v, i = graded[verilator], graded[icarus]
        assert simulation(v)["simulator"] == "verilator" and simulation(i)["simulator"] == "icarus"
        assert (v.passed, v.failure_class) == (i.passed, i.failure_class), verilator
        for field in ("verdict", "cycles", "matched", "mismatches"):
            assert simulation(v)[field] == simulation(i)[field], (verilator, field)
        if simulation(i)["first"]:
            assert simulation(v)["first"]["cycle"] == simulation(i)["first"]["cycle"]


# -- in process: settings, interfaces, stimulus, renaming ---------------------------------


def test_settings_are_read_from_the_dataset_options_and_checked():
    settings = read_settings({"equivalence": {"cycles": "500", "x": "STRICT", "formal_timeout": "7.5", "seed": 3}})
    assert (settings.cycles, settings.x, settings.formal_timeout, settings.seed) == (500, "strict", 7.5, 3)
    assert settings.mode == "both" and settings.simulator == "icarus"
    assert (settings.depth, settings.min_depth) == (20, 20)
    assert read_settings({"equivalence": {"depth": 50, "min_depth": "12"}}).min_depth == 12
    with pytest.raises(ConfigError, match="min_depth=20 is deeper than depth=10"):
        read_settings({"equivalence": {"depth": 10}})
    for bad in (
        {"cycles": 0}, {"depth": "deep"}, {"simulator": "vcs"}, {"colour": "blue"}, {"cycles": True},
        {"min_depth": 0}, {"depth": 30, "min_depth": 31},
    ):
        with pytest.raises(ConfigError):
            read_settings({"equivalence": bad})
    one, other = (stimulus_seed(name, settings) for name in ("a", "b"))
    assert one != other and one == stimulus_seed("a", read_settings({"equivalence": {"cycles": 500, "seed": 3}}))


@pytest.mark.parametrize(("source", "top", "clocks", "resets"), [
    (COUNTER, "counter", ("clk",), [("rst", False, False)]),
    (SHIFTER, "shifter", ("clk",), [("rst_n", True, True)]),
    (CDC, "cdc", ("wclk", "rclk"), [("rst", False, False)]),
    (ALU, "alu", (), []),
    # tested as `if (reset == 1'b0)`: active low although its name says nothing
    ("module m(input clock, input reset, input d, output reg q);\n"
     "  always @(posedge clock) if (reset == 1'b0) q <= 1'b0; else q <= d;\nendmodule\n",
     "m", ("clock",), [("reset", True, False)]),
    # an asynchronous clear found by the block's first test, and a clock through a submodule's port
    ("module ff(input c, input d, output reg q); always @(posedge c) q <= d; endmodule\n"
     "module m(input tick, input clear, input d, output reg q, output r);\n"
     "  ff u(.c(tick), .d(d), .q(r));\n"
     "  always @(posedge tick or posedge clear) if (clear) q <= 1'b0; else q <= d;\nendmodule\n",
     "m", ("tick",), [("clear", False, True)]),
])
def test_clocks_and_resets_are_found(source, top, clocks, resets):
    design = read_design(source, top)
    assert design.clocks == clocks
    assert [(r.name, r.active_low, r.asynchronous) for r in design.resets] == resets
    assert design.sequential == bool(clocks)


def test_the_stimulus_has_its_reset_phases_and_corners():
    design = read_design(ALU, "alu")
    stimulus = make_stimulus(design, 300, 1)
    vectors = [stimulus.values(c) for c in range(stimulus.cycles)]
    assert {"a": 0, "b": 0, "op": 0} in vectors and {"a": 255, "b": 255, "op": 3} in vectors
    for bit in range(8):  # walking ones
        assert {"a": 1 << bit, "b": 1 << bit, "op": (1 << bit) & 3} in vectors
    assert make_stimulus(design, 300, 1) == stimulus and make_stimulus(design, 300, 2) != stimulus
    counter = make_stimulus(read_design(COUNTER, "counter"), 400, 1)
    asserted = [c for c in range(counter.cycles) if counter.values(c)["rst"]]
    assert asserted[: counter.reset_cycles] == list(range(counter.reset_cycles)) == list(range(counter.compare_from))
    middle = counter.mid_reset
    assert counter.compare_from < counter.quiet_from < counter.quiet_to == middle < counter.cycles
    assert set(range(middle, middle + counter.reset_cycles)) <= set(asserted)
    assert [c for c in asserted if c > middle + counter.reset_cycles]  # reset pulses after the mid-run reset
    assert not [c for c in asserted if counter.reset_cycles <= c < middle]  # 60% runs deep
    held = {counter.vectors[c] for c in range(counter.quiet_from, counter.quiet_to)}
    assert held == {counter.vectors[counter.quiet_from]} and counter.values(counter.quiet_from)["en"] == 1


def test_renaming_touches_module_names_only():
    source = "module sub(input a, output sub_out);\n  wire sub; assign sub = a; assign sub_out = sub;\nendmodule\n" \
             "module top(input a, output y);\n  sub sub (.a(a), .sub_out(y));\nendmodule\n"
    renamed = rename_modules(source, {"sub": "p_sub", "top": "p_top"})
    assert "module p_sub(" in renamed and "module p_top(" in renamed and "  p_sub sub (" in renamed
    assert "wire sub; assign sub = a; assign sub_out = sub;" in renamed
