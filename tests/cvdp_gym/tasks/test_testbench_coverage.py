"""``testbench_coverage``: Verilator's coverage of a design under a test bench, only the design's points.

``read_coverage_points`` is checked on a real ``coverage.dat`` (Verilator 5.038, a 4-bit
counter under a bench that ran it 20 cycles); ``measure_coverage`` on real Verilator runs in
the sandbox: a thorough bench covers more than one that only resets, a bench Verilator cannot
build gives a reason and no numbers, ``$error`` goes on and ``$stop`` and ``$fatal`` end the
run as under ``vvp -n``, coverage written.
"""

from __future__ import annotations

import pytest

from cvdp_gym.sandbox.base import Limits
from cvdp_gym.tasks.coverage import Coverage, measure_coverage, read_coverage_points

#: A real coverage.dat, trimmed: the counter's points (8 toggle bits, 2 lines, 2 branch arms)
#: and four of the bench's own.
SAMPLE = "\n".join([
    "# SystemC::Coverage-3",
    "C '\x01f\x02counter.sv\x01l\x021\x01n\x02107\x01t\x02toggle\x01page\x02v_toggle/counter\x01o\x02q[0]\x01h\x02tb.dut' 20",
    "C '\x01f\x02counter.sv\x01l\x021\x01n\x02107\x01t\x02toggle\x01page\x02v_toggle/counter\x01o\x02q[1]\x01h\x02tb.dut' 10",
    "C '\x01f\x02counter.sv\x01l\x021\x01n\x02107\x01t\x02toggle\x01page\x02v_toggle/counter\x01o\x02q[2]\x01h\x02tb.dut' 5",
    "C '\x01f\x02counter.sv\x01l\x021\x01n\x02107\x01t\x02toggle\x01page\x02v_toggle/counter\x01o\x02q[3]\x01h\x02tb.dut' 2",
    "C '\x01f\x02counter.sv\x01l\x021\x01n\x02123\x01t\x02toggle\x01page\x02v_toggle/counter\x01o\x02wrap\x01h\x02tb.dut' 2",
    "C '\x01f\x02counter.sv\x01l\x021\x01n\x0248\x01t\x02toggle\x01page\x02v_toggle/counter\x01o\x02clk\x01h\x02tb.dut' 41",
    "C '\x01f\x02counter.sv\x01l\x021\x01n\x0265\x01t\x02toggle\x01page\x02v_toggle/counter\x01o\x02rst\x01h\x02tb.dut' 2",
    "C '\x01f\x02counter.sv\x01l\x021\x01n\x0282\x01t\x02toggle\x01page\x02v_toggle/counter\x01o\x02en\x01h\x02tb.dut' 1",
    "C '\x01f\x02counter.sv\x01l\x022\x01n\x023\x01t\x02line\x01page\x02v_line/counter\x01o\x02block\x01S\x022\x01h\x02tb.dut' 21",
    "C '\x01f\x02counter.sv\x01l\x023\x01n\x025\x01t\x02line\x01page\x02v_line/counter\x01o\x02elsif\x01S\x023-4\x01h\x02tb.dut' 1",
    "C '\x01f\x02counter.sv\x01l\x025\x01n\x0214\x01t\x02branch\x01page\x02v_branch/counter\x01o\x02if\x01S\x025-6\x01h\x02tb.dut' 20",
    "C '\x01f\x02counter.sv\x01l\x025\x01n\x0215\x01t\x02branch\x01page\x02v_branch/counter\x01o\x02else\x01h\x02tb.dut' 0",
    "C '\x01f\x02tb.sv\x01l\x0210\x01n\x025\x01t\x02line\x01page\x02v_line/tb\x01o\x02block\x01S\x0210\x01h\x02tb' 20",
    "C '\x01f\x02tb.sv\x01l\x0211\x01n\x026\x01t\x02line\x01page\x02v_line/tb\x01o\x02else\x01h\x02tb' 0",
    "C '\x01f\x02tb.sv\x01l\x023\x01n\x0218\x01t\x02toggle\x01page\x02v_toggle/tb\x01o\x02rst\x01h\x02tb' 2",
    "C '\x01f\x02tb.sv\x01l\x023\x01n\x0227\x01t\x02toggle\x01page\x02v_toggle/tb\x01o\x02en\x01h\x02tb' 1",
]) + "\n"


def test_only_the_design_files_points_count():
    assert read_coverage_points(SAMPLE, ["counter.sv"]) == {"toggle": (8, 8), "line": (2, 2), "branch": (1, 2)}
    assert read_coverage_points(SAMPLE, ["tb.sv"]) == {"toggle": (2, 2), "line": (1, 2)}
    assert read_coverage_points(SAMPLE, ["other.sv"]) == {}


def test_paths_and_escapes_are_read_as_verilator_writes_them():
    text = SAMPLE.replace("\x02counter.sv", "\x02./rtl/my%25counter.sv")
    assert read_coverage_points(text, ["rtl/my%counter.sv"])["toggle"] == (8, 8)
    assert read_coverage_points(text + "garbage\nC 'x' notanumber\n", ["rtl/./my%counter.sv"])["line"] == (2, 2)


def test_fractions_and_json():
    coverage = Coverage(line=(3, 4), toggle=(2, 8), branch=(0, 0))
    assert coverage.line_fraction == 0.75 and coverage.toggle_fraction == 0.25 and coverage.branch_fraction is None
    assert coverage.as_dict()["line"] == [3, 4]
    unmeasured = Coverage(reason="no")
    assert not unmeasured.measured and unmeasured.line_fraction is None and unmeasured.as_dict()["toggle"] is None


COUNTER = """\
module counter (input logic clk, input logic rst, input logic en, output logic [3:0] q, output logic wrap);
  always_ff @(posedge clk) begin
    if (rst) q <= '0;
    else if (en) q <= q + 4'd1;
  end
  assign wrap = en && (q == 4'hf);
endmodule
"""
#: The bench's own signals (a 32-bit loop counter among them) would swamp the design's 8
#: toggle points if they counted.
HEAD = """\
`timescale 1ns/1ps
module tb;
  logic clk = 0, rst = 1, en = 0;
  int cycles = 0;
  wire [3:0] q;
  wire wrap;
  counter dut(.clk(clk), .rst(rst), .en(en), .q(q), .wrap(wrap));
  initial forever #5 clk = ~clk;
  always @(posedge clk) cycles <= cycles + 1;
"""
BENCHES = {
    "weak": HEAD + 'initial begin #22 rst = 0; #20 $display("q=%0d", q); $finish; end\nendmodule\n',
    "thorough": HEAD + """\
  initial begin
    #22 rst = 0; en = 1;
    $error("a failed check reports and goes on, as under Icarus");
    repeat (20) begin
      @(posedge clk); #1;
      if (q == 4'hf && !wrap) $error("no wrap at %0d", q);
    end
    en = 0;
    repeat (3) @(posedge clk);
    rst = 1; @(posedge clk); #1 rst = 0;
    if (q !== 4'd0) $error("q not reset");
    $display("PASS");
    $stop;  // vvp -n: the end of the run
  end
endmodule
""",
    "fatal": HEAD + 'initial begin #22 rst = 0; en = 1; #60 $fatal(1, "stop here"); end\nendmodule\n',
    "broken": HEAD + "initial begin #22 rst = 0 en = 1; $finish; end\nendmodule\n",
}


@pytest.fixture(scope="module")
def measured(sandbox) -> dict[str, Coverage]:
    return {
        name: measure_coverage(
            sandbox, {"counter.sv": COUNTER, "tb.sv": bench}, bench_top="tb", design_files=["counter.sv"],
            limits=Limits(wall_s=120),
        )
        for name, bench in BENCHES.items()
    }


@pytest.mark.sandbox
def test_a_thorough_bench_covers_more_than_one_that_only_resets(measured):
    # The thorough bench fails a check first and ends on $stop: full coverage says it went on, then ended.
    weak, thorough = measured["weak"], measured["thorough"]
    assert weak.measured and thorough.measured, (weak.reason, thorough.reason)
    assert thorough.line == (thorough.line[1], thorough.line[1]) and thorough.toggle == (8, 8)
    assert weak.line_fraction < thorough.line_fraction and weak.toggle_fraction < thorough.toggle_fraction
    assert thorough.reason == weak.reason == ""


@pytest.mark.sandbox
def test_only_the_design_counts(measured):
    # clk, rst, en, q[3:0], wrap: the bench's own 41 bits are not counted.
    assert measured["thorough"].toggle[1] == 8
    assert measured["thorough"].line[1] <= 6


@pytest.mark.sandbox
def test_a_bench_that_ends_on_fatal_still_reports(measured):
    fatal = measured["fatal"]
    assert fatal.measured and fatal.toggle[0] > measured["weak"].toggle[0], fatal.reason


@pytest.mark.sandbox
def test_a_bench_verilator_cannot_build_gives_a_reason(measured):
    broken = measured["broken"]
    assert broken.line is None and broken.toggle is None and broken.branch is None
    assert "does not build under Verilator" in broken.reason and "tb.sv:" in broken.reason


@pytest.mark.sandbox
def test_a_bench_that_never_finishes_is_cut_at_the_limit(sandbox):
    hang = HEAD + "initial #22 rst = 0;\nendmodule\n"
    coverage = measure_coverage(
        sandbox, {"counter.sv": COUNTER, "tb.sv": hang}, bench_top="tb", design_files=["counter.sv"],
        limits=Limits(wall_s=15),
    )
    assert coverage.line is None and "did not finish within 15 s" in coverage.reason


def test_names_outside_the_run_are_refused_without_running():
    files = {"counter.sv": COUNTER, "tb.sv": BENCHES["weak"]}
    assert "not a plain module name" in measure_coverage(
        None, files, bench_top="tb; rm -rf /", design_files=["counter.sv"], limits=Limits(),
    ).reason
    assert "not among the files" in measure_coverage(
        None, files, bench_top="tb", design_files=["dut.sv"], limits=Limits(),
    ).reason
    assert measure_coverage(
        None, {**files, "../x.sv": ""}, bench_top="tb", design_files=["counter.sv"], limits=Limits(),
    ).reason
