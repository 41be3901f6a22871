"""Made-up design problems and answers for the verification tasks' tests (written for them)."""

from __future__ import annotations

from cvdp_gym.data.problems import Problem

COUNTER = """module counter(input clk, input rst, input en, output reg [3:0] q, output wrap);
  assign wrap = en && q == 4'd15;
  always @(posedge clk) begin
    if (rst) q <= 4'd0;
    else if (en) q <= q + 4'd1;
  end
endmodule
"""
COUNTER_SPEC = (
    "A 4-bit up-counter `counter` with a synchronous active-high reset `rst` (q becomes 0) and an enable `en`: "
    "on each rising edge of `clk` with `en` high, q goes up by one and wraps from 15 to 0. `wrap` is high while "
    "`en` is high and q is 15."
)

#: Checks every output on every cycle against a model: catches every behaviour change.
THOROUGH_BENCH = """module tb;
  reg clk = 0, rst = 1, en = 0; wire [3:0] q; wire wrap;
  reg [3:0] model;
  integer i;
  counter dut(.clk(clk), .rst(rst), .en(en), .q(q), .wrap(wrap));
  always #5 clk = ~clk;
  initial begin
    @(negedge clk); @(negedge clk); rst = 0; model = 0;
    for (i = 0; i < 60; i = i + 1) begin
      en = (i % 3) != 1;
      #1 if (wrap !== (en && model == 15)) $error("wrap %b at %0d", wrap, i);
      @(negedge clk);
      if (en) model = model + 1;
      if (q !== model) $error("q=%0d expected %0d", q, model);
      if (i == 40) begin rst = 1; @(negedge clk); rst = 0; model = 0; end
    end
    $display("Errors: 0 expected"); $finish;
  end
endmodule
"""
#: Only looks at the value after reset: misses most bugs.
WEAK_BENCH = """module tb;
  reg clk = 0, rst = 1, en = 0; wire [3:0] q; wire wrap;
  counter dut(.clk(clk), .rst(rst), .en(en), .q(q), .wrap(wrap));
  always #5 clk = ~clk;
  initial begin
    @(negedge clk); @(negedge clk);
    if (q !== 0) $error("q not reset");
    $finish;
  end
endmodule
"""
#: Wrong about the specification: fails the reference itself.
FALSE_ALARM_BENCH = WEAK_BENCH.replace("q !== 0", "q !== 1")
#: Checks nothing: passes every design.
SILENT_BENCH = """module tb;
  reg clk = 0, rst = 1, en = 1; wire [3:0] q; wire wrap;
  counter dut(.clk(clk), .rst(rst), .en(en), .q(q), .wrap(wrap));
  always #5 clk = ~clk;
  initial begin #100 $display("PASS"); $finish; end
endmodule
"""
#: Reads the design's internals by a hierarchical name.
PEEKING_BENCH = THOROUGH_BENCH.replace('if (q !== model)', 'if (dut.q !== model)')
#: Defines the design itself, so it would test its own copy.
SELF_DEFINED_BENCH = SILENT_BENCH + "\nmodule counter(input clk, input rst, input en, output [3:0] q, output wrap); endmodule\n"


def counter_problem() -> Problem:
    """The counter as a design problem graded against its reference (as a training set's row is)."""
    return Problem(
        id="made-up.counter", categories=(), agentic=False, prompt=COUNTER_SPEC, context={}, targets=("counter.sv",),
        harness={}, reference={"counter.sv": COUNTER}, grader="reference", benchmark="made-up",
    )


def fenced(text: str, language: str = "verilog") -> str:
    return f"Here it is.\n\n```{language}\n{text}```\n"

#: Event counter (bundled): port-only properties written from its specification's four rules and `wrap`.
EVENT_COUNTER_PROPERTIES = """
assert property (@(posedge clk) rst |=> count == 8'd0);
assert property (@(posedge clk) !rst && load |=> count == $past(load_val));
assert property (@(posedge clk) !rst && !load && en && dir |=> count == $past(count) + 8'd1);
assert property (@(posedge clk) !rst && !load && en && !dir |=> count == $past(count) - 8'd1);
assert property (@(posedge clk) !rst && !load && !en |=> count == $past(count));
assert property (@(posedge clk) wrap == (!rst && !load && en && ((dir && count == 8'hFF) || (!dir && count == 8'h00))));
"""
