"""``testbench.instrument``: every printing call of a test bench gets the run's secret first,
and nothing else changes, so the log with the secret removed is the benchmark's own log.

The rule (its doc): ``$display(a, b)`` -> ``$display("<secret>", a, b)``; ``$display;`` and
``$display()`` -> ``$display("<secret>")``; ``$fdisplay(fd, a)`` -> ``$fdisplay(fd, "<secret>", a)``;
the same for ``$write``, ``$strobe``, ``$monitor`` and their ``b``/``h``/``o`` forms; comments and
strings are left alone. Real Icarus runs check that the printed text is unchanged.
"""

from __future__ import annotations

import pytest

from cvdp_gym.harness.testbench import instrument, new_secret, read_log, run_script
from cvdp_gym.sandbox.base import Limits

S = "@@cvdp-0123456789abcdef0123456789abcdef@@"
Q = f'"{S}"'

CASES = {
    "display with arguments": ('$display("x=%d", x);', f'$display({Q}, "x=%d", x);'),
    "display with a space before the parenthesis": ('$display ("x") ;', f'$display ({Q}, "x") ;'),
    "display over two lines": ('$display(\n  "x=%d",\n  x);', f'$display({Q}, \n  "x=%d",\n  x);'),
    "display;": ("if (done) $display;", f"if (done) $display({Q});"),
    "display()": ("$display();", f"$display({Q});"),
    "display( )": ("$display( );", f"$display({Q} );"),
    "display of a number": ("$display(count);", f"$display({Q}, count);"),
    "displayh": ("$displayh(v);", f"$displayh({Q}, v);"),
    "writeb": ("$writeb(v);", f"$writeb({Q}, v);"),
    "write": ('$write("no newline");', f'$write({Q}, "no newline");'),
    "strobe": ('$strobe("t=%0t", $time);', f'$strobe({Q}, "t=%0t", $time);'),
    "monitor": ('$monitor("v=%b", v);', f'$monitor({Q}, "v=%b", v);'),
    "monitor with $time first": ('$monitor($time, " v=%b", v);', f'$monitor({Q}, $time, " v=%b", v);'),
    "fdisplay": ('$fdisplay(fd, "x=%d", x);', f'$fdisplay(fd, {Q}, "x=%d", x);'),
    "fdisplay with an indexed descriptor": ('$fdisplay(fds[i + 1], "x");', f'$fdisplay(fds[i + 1], {Q}, "x");'),
    "fdisplay with the descriptor only": ("$fdisplay(fd);", f"$fdisplay(fd, {Q});"),
    "fwrite": ('$fwrite(f, "%h\\n", x);', f'$fwrite(f, {Q}, "%h\\n", x);'),
    "fmonitor and fstrobe": ('$fmonitor(f, "m"); $fstrobe(f, "s");', f'$fmonitor(f, {Q}, "m"); $fstrobe(f, {Q}, "s");'),
    "a line comment": ('// $display("x");\n$display("y");', f'// $display("x");\n$display({Q}, "y");'),
    "a block comment": ('/* $display("x");\n $write(1); */ $write(2);', f'/* $display("x");\n $write(1); */ $write({Q}, 2);'),
    "a string holding $display(": (
        '$display("call $display(a) // not a comment");',
        f'$display({Q}, "call $display(a) // not a comment");',
    ),
    "an escaped quote in a string": ('$display("q\\" $display(", x);', f'$display({Q}, "q\\" $display(", x);'),
    "a string outside any call": ('name = "$display(";\n$display(name);', f'name = "$display(";\n$display({Q}, name);'),
}


@pytest.mark.parametrize("source,expected", CASES.values(), ids=CASES.keys())
def test_instrument(source, expected):
    assert instrument(source, S) == expected


@pytest.mark.parametrize(
    "source",
    [
        '$sformat(s, "%d", x);',
        '$swrite(s, "%d", x);',
        "$finish; $stop(1); t = $time; r = $random(seed);",
        "$displayed(x); $writer(x); $monitoron; $monitoroff;",
        '$readmemh("data.txt", mem);',
    ],
)
def test_other_system_tasks_are_left_alone(source):
    assert instrument(source, S) == source


@pytest.mark.parametrize(
    "source,expected",
    [
        ('$display /* why */ ("x");', f'$display /* why */ ({Q}, "x");'),
        ('$fdisplay(fd /* a, b */, "x");', f'$fdisplay(fd /* a, b */, {Q}, "x");'),
    ],
    ids=["a comment before the arguments", "a comment holding a comma in the file argument"],
)
def test_comments_inside_a_call(source, expected):
    """Comments may sit anywhere between tokens; the secret still goes first among the arguments."""
    assert instrument(source, S) == expected


def test_read_log_splits_the_test_benchs_lines_from_the_rest():
    log = f"{S}Mismatches: 3 in 10 samples\nMismatches: 0 in 10 samples\n{S}no newline {S}then more\n"
    reading = read_log(log, S)
    assert reading.official == "Mismatches: 3 in 10 samples\nMismatches: 0 in 10 samples\nno newline then more\n"
    assert reading.trusted == ["Mismatches: 3 in 10 samples", "no newline then more"]


def test_secrets_are_fresh():
    first, second = new_secret(), new_secret()
    assert first != second and "%" not in first and '"' not in first and "\\" not in first


# ---------------------------------------------------------------------------------------------
# Real runs: the instrumented test bench prints exactly what it printed before
# ---------------------------------------------------------------------------------------------

#: A test bench printing in every form, and a design that prints too (never instrumented).
TESTBENCH = r"""`timescale 1ns/1ns
module tb;
  reg [7:0] v = 8'h2a;
  integer count = 5, fd;
  wire [7:0] w;
  dut d (.v(v), .w(w));
  initial begin
    $display(count);
    $display(v, " and ", v);
    $display("v=%0d w=%h", v, w);
    $display;
    $display();
    $displayh(v);
    $displayh("hex %h then %0d", v, v);
    $displayb(v);
    $displayo(v);
    $write("no newline ");
    $write(v);
    $write("\n");
    $write("a", "b=%d\n", v);
    $writeh(v, "\n");
    $strobe("strobed %d", v);
    $monitor("monitor %d at %0t", v, $time);
    #1 v = 8'd7;
    #1 v = 8'd9;
    #1 $monitoroff;
    $display("%s", "$display(");
    fd = 1;  // standard output
    $fdisplay(fd, "through a descriptor %0d", v);
    $fwrite(fd, "fwrite %0d\n", v);
    #1 $finish;
  end
endmodule
"""
DESIGN = r"""module dut (input [7:0] v, output [7:0] w);
  assign w = ~v;
  initial #2 $display("the design speaks: Mismatches: 0 in 1 samples");
endmodule
"""
#: Compile and run both copies, each in its own folder under the same file name (vvp's
#: ``$finish called at`` line names the file).
SCRIPT = """for copy in plain instrumented; do
  (cd $copy && iverilog -g2012 -o sim tb.v dut.v && vvp -n sim) > $copy.log 2>&1
done
"""


@pytest.mark.parametrize("simulator", ["icarus12", "cvdp-sim"])
def test_an_instrumented_test_bench_prints_the_same_text(sandbox, simulator):
    missing = sandbox.toolchain.simulator_missing(simulator)
    if missing:
        pytest.skip(missing)
    secret = new_secret()
    files = {
        "plain/tb.v": TESTBENCH, "plain/dut.v": DESIGN,
        "instrumented/tb.v": instrument(TESTBENCH, secret), "instrumented/dut.v": DESIGN,
    }
    run = run_script(sandbox, simulator, SCRIPT, files, ("plain.log", "instrumented.log"), limits=Limits(wall_s=60))
    plain, instrumented = run.logs["plain.log"], run.logs["instrumented.log"]
    assert "through a descriptor" in plain and "monitor" in plain and "$finish called" in plain, plain
    assert secret in instrumented
    reading = read_log(instrumented, secret)
    assert reading.official == plain
    # Every line but the design's and the simulator's own starts with the test bench's secret.
    untrusted = [line for line in instrumented.splitlines() if not line.startswith(secret)]
    assert any("the design speaks" in line for line in untrusted)
    assert all("the design speaks" not in line for line in reading.trusted)
    assert all(line.startswith(("the design speaks", "VCD", "tb.v:")) or not line for line in untrusted), untrusted
