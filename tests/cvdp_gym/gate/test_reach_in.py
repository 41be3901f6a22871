"""The static check of what an answer reaches outside its own design, and the per-run names.

In process (pyslang), no simulator: each construct an answer may not use is found with its
line; designs with their own hierarchy, and every reference of the made-up benchmark copies,
the bundled CVDP problems and the training fixtures, are not. ``isolate`` renames what an
answer could name and ``restore`` maps a log back exactly. (The same attacks graded by the
real flows: ``test_reach_in_flows.py``.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.gate import check
from cvdp_gym.gate.reach_in import NEVER
from cvdp_gym.harness.isolation import isolate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HEADER = "module TopModule (input clk, input a, output q);\n"


def findings(body: str, **options) -> list[tuple[int, str]]:
    """(line, what) of each finding in a TopModule with ``body`` (line 2 is the body's first)."""
    return [(f.line, f.what) for f in check({"answer.sv": HEADER + body + "endmodule\n"}, **options).findings]


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        ("  RefModule r (.clk, .a, .q);\n", 2, "instance of module `RefModule`"),
        ("  assign q = good1.q;\n", 2, "`good1.q`: a hierarchical reference"),
        ("  wire w;\n  initial force tb.tb_match = 1'b1;\n", 3, "force of `tb.tb_match`"),
        ("  initial begin\n    #1 release tb.x;\n  end\n", 3, "release of `tb.x`"),
        ("  initial assign tb.y = 1;\n", 2, "procedural assign of `tb.y`"),
        ("  initial deassign tb.y;\n", 2, "deassign of `tb.y`"),
        ("  defparam good1.WIDTH = 2;\n", 2, "defparam of `good1.WIDTH`"),
        ("  assign q = blk.hidden;\n", 2, "`blk.hidden`"),
        ("  initial peek;\n", 2, "`peek`: a call of a task or function"),
        ("  assign q = expected(a);\n", 2, "`expected`: a call"),
        ("  initial disable stim_blk;\n", 2, "`disable stim_blk`"),
        ("  assign q = $root.tb.out_ref;\n", 2, "`$root` names the whole simulation"),
        ("  bind RefModule spy s ();\n", 2, "`bind` puts code into a design"),
        ('  import "DPI-C" function int getpid();\n', 2, "DPI calls code outside"),
        ('  integer fd;\n  initial fd = $fopen("/proc/self/mem", "r");\n', 3, '`$fopen` of "/proc/self/mem"'),
        ('  reg [7:0] m [0:3];\n  initial $readmemh("reference.dat", m);\n', 3, '`$readmemh` of "reference.dat"'),
        ('  string f = "x";\n  initial $dumpfile(f);\n', 3, "`$dumpfile` with a file name that is not a literal"),
        ('  initial $system("cat /proc/self/environ");\n', 2, "`$system`: not one of the system tasks"),
        ("  string s;\n  integer r;\n  initial r = $fgets(s, 32'h8000_0003);\n", 4, "`$fgets` through a descriptor the answer"),
        ("  initial $fdisplay(32'h8000_0003, 1);\n", 2, "`$fdisplay` through a descriptor the answer did not open"),
        ("  integer fd = 32'h8000_0003;\n  string s;\n  initial $fscanf(fd, \"%s\", s);\n", 4, "`$fscanf` through a"),
        ('  initial $writememh("/tmp/x.hex", m);\n  reg [7:0] m [0:1];\n', 2, '`$writememh` of "/tmp/x.hex", a file that is not'),
        ("`define REF good1\n  assign q = `REF.q;\n", 3, "`good1.q`"),
    ],
)
def test_each_reach_is_found_with_its_line(body, line, words):
    found = findings(body)
    assert found, body
    assert found[0][0] == line and words in found[0][1], found


def test_an_include_of_anything_but_the_answer_s_own_files():
    found = check({"answer.sv": '`include "Prob001_and3_test.sv"\n' + HEADER + "endmodule\n"}).findings
    assert [(f.line, f.what) for f in found] == [(1, '`include "Prob001_and3_test.sv": not one of the answer\'s own files')]
    own = {"rtl/defs.vh": "`define W 4\n", "rtl/top.sv": '`include "rtl/defs.vh"\n' + HEADER + "endmodule\n"}
    assert not check(own).findings


def test_the_reason_names_the_file_and_line():
    result = check({"rtl/top.sv": HEADER + "  assign q = good1.q;\nendmodule\n"})
    assert result.reason == "rtl/top.sv:2: `good1.q`: a hierarchical reference that leaves the answer's own design"
    assert result.definitions == {"TopModule"}


LEGITIMATE = r"""
package my_pkg;
  localparam int W = 4;
  typedef struct packed { logic [3:0] a; logic b; } pair_t;
  function automatic int twice(int x); return 2 * x; endfunction
endpackage
import my_pkg::*;
int unit_count = 3;
interface bus_if (input logic clk);
  logic [3:0] data; logic valid;
  modport source (output data, valid);
  modport sink (input data, valid);
endinterface
module leaf #(parameter int N = 2, parameter string INIT = "leaf.hex") (input logic [3:0] a, output logic [3:0] y);
  logic [3:0] inner;
  assign inner = a;
  assign y = inner;
endmodule
module sink (bus_if.sink bus, output logic [3:0] d);
  assign d = bus.valid ? bus.data : '0;
endmodule
module TopModule (input logic clk, input logic [3:0] a, output logic [3:0] y, output logic [3:0] z, output int w);
  typedef enum logic [1:0] {IDLE, RUN} state_t;
  state_t state;
  pair_t p;
  bus_if b (.clk(clk));
  leaf #(.N(3)) u_leaf (.a(a), .y());
  sink u_sink (.bus(b), .d(z));
  genvar i;
  for (i = 0; i < 2; i++) begin : g
    leaf u (.a(a), .y());
  end
  if (1) begin : cond
    wire t = 1'b1;
  end
  assign y = u_leaf.inner ^ g[0].u.inner ^ g[1].u.y;
  assign b.data = a;
  assign b.valid = cond.t;
  function automatic [3:0] invert(input [3:0] v); invert = ~v; endfunction
  task automatic tick; @(posedge clk); endtask
  always_ff @(posedge clk) begin : seq
    p.a <= invert(a);
    p.b <= my_pkg::W > 2;
    state <= state.next();
    if (state == RUN) disable seq;
  end
  assign w = twice(unit_count) + $unit::unit_count + $clog2(8) + my_pkg::twice(1);
  initial begin
    tick;
    tick();
    $display("%m %t %s", $time, state.name());
    $fdisplay(32'h8000_0002, "to standard error");
  end
endmodule
module watcher;
  wire seen = TopModule.a[0];
endmodule
"""


def test_a_design_s_own_hierarchy_is_not_a_reach():
    """Submodules, generate blocks, named blocks, struct members, interface ports and modports,
    packages, own functions and tasks, ``disable`` of its own block, upward names to its own
    top, and printing to standard error."""
    result = check({"answer.sv": LEGITIMATE})
    assert result.findings == []
    assert result.definitions == {"my_pkg", "bus_if", "leaf", "sink", "TopModule", "watcher"}


def test_a_plain_undeclared_name_is_left_to_the_compiler():
    """Icarus resolves no plain variable outside the design either: a build error, not a reach."""
    assert findings("  assign q = tb_match;\n") == []


def test_a_design_may_write_files_of_its_own_and_read_them_back():
    """A waveform dump, a trace through its own descriptor, a memory written then read: new
    files of the working folder. Not the test bench's data, though, to write or to read."""
    own = (
        '  initial begin $dumpfile("dump.vcd"); $dumpvars(0, TopModule); end\n'
        '  integer fd;\n  initial begin fd = $fopen("trace.txt", "w"); $fdisplay(fd, "%b", a); $fclose(fd); end\n'
        '  reg [7:0] m [0:1];\n  initial begin $writememh("m.hex", m); #1 $readmemh("m.hex", m); end\n'
        "  final $fflush;\n"
    )
    assert findings(own) == []
    data = '  reg [7:0] m [0:1];\n  initial $writememh("reference.dat", m);\n  initial $readmemh("test_data.dat", m);\n'
    assert [line for line, _ in findings(data, protected=["reference.dat", "test_data.dat"])] == [3, 4]


@pytest.mark.parametrize(
    "change",
    ["fd += 1;", "fd++;", "fd = fd + 1;", 'n = $sscanf("3", "%d", fd);', "fd[0] = 1'b1;", "{fd} = 32'h8000_0003;", "peek_fd(fd);"],
)
def test_a_descriptor_the_answer_changed_reaches_other_files(change):
    """Opened by ``$fopen``, then moved: ``fd + 1`` is the next descriptor, the test bench's
    open file. Its own descriptor, compared, tested and closed, stays the answer's."""
    own = (
        "  integer fd, n;\n  task peek_fd(output integer f); f = 32'h8000_0003; endtask\n"
        '  initial begin\n    fd = $fopen("trace.txt", "w");\n    if (fd != 0 && fd) $fdisplay(fd, "%b", a);\n'
        '    if (!fd) $display("no trace");\n    CHANGE\n    $fclose(fd);\n  end\n'
    )
    assert findings(own.replace("CHANGE", "")) == []
    found = findings(own.replace("CHANGE", change))
    assert found and found[0][0] == 6 and "`$fdisplay` through a descriptor the answer did not open" in found[0][1], found


def test_files_the_answer_was_given_may_be_read_by_literal_name():
    body = '  reg [7:0] m [0:3];\n  initial $readmemh("rom.hex", m);\n'
    assert findings(body, readable=["rom.hex"]) == []
    parameter = '  localparam string F = "rom.hex";\n  reg [7:0] m [0:3];\n  initial $readmemh(F, m);\n'
    assert findings(parameter, readable=["rom.hex"]) == []
    assert findings(parameter.replace("rom.hex", "/proc/self/mem"), readable=["rom.hex"])[0][0] == 4


def test_the_cocotb_rules_flag_only_what_no_design_needs():
    """CVDP's harnesses compile no test-bench module beside the answer: only ``$root``, DPI,
    ``$system``, a bind into an undefined module and non-literal or ``/proc`` file names."""
    tolerated = "  assign q = some_tb.x;\n  RefModule r ();\n  initial force q = 0;\n"
    assert findings(tolerated, rules=NEVER) == []
    never = (
        '  assign q = $root.tb.x;\n  initial $system("ls");\n  bind Elsewhere spy s ();\n'
        '  integer fd;\n  initial fd = $fopen("/proc/self/environ");\n'
    )
    assert [line for line, _ in findings(never, rules=NEVER)] == [2, 3, 4, 6]
    context = {"rtl/spy.sv": "module Elsewhere; endmodule\n"}
    answer = {"rtl/top.sv": HEADER + "  bind Elsewhere spy s ();\nendmodule\n"}
    assert not check(answer, supplied=context, rules=NEVER).findings
    assert not check({"docs/answer.md": "$root"}, supplied=context, rules=NEVER).findings  # not RTL


def references(spec: str, folder: Path) -> list[tuple[str, dict[str, str]]]:
    """Each problem's reference as the flow compiles it (VerilogEval v1: the header, then the completion)."""
    out = []
    for problem in load_dataset(spec, benchmark_dir=folder).problems:
        target = problem.targets[0]
        text = problem.reference[target]
        if spec.startswith("verilog-eval-v1"):
            text = next(t for p, t in problem.harness.items() if p.endswith("_prompt.sv")) + "\n" + text
        out.append((problem.id, {target: text}))
    return out


def test_no_reference_is_flagged():
    """Every reference of the made-up benchmark copies and the training fixtures, and every
    bundled CVDP reference and candidate with its problem's RTL (the cocotb rules; the full
    rules too, as the flows would apply them). The real benchmarks' 690 references are
    measured the same way (docs/security.md)."""
    benchmarks = FIXTURES / "benchmarks"
    checked = [
        *references("verilog-eval-v2", benchmarks / "verilog-eval"),
        *references("verilog-eval-v1", benchmarks / "verilog-eval-v1"),
        *references("rtllm-v2", benchmarks / "rtllm"),
        *references("rtllm-v1.1", benchmarks / "rtllm-v1.1"),
        *((p.id, dict(p.reference)) for p in load_dataset("reference-set", benchmark_dir=FIXTURES / "training" / "generic.jsonl").problems),
        *((p.id, dict(p.reference)) for p in load_dataset("verithoughts", benchmark_dir=FIXTURES / "training" / "verithoughts.jsonl").problems),
    ]
    flagged = [(pid, str(f)) for pid, files in checked for f in check(files).findings]
    bundled = {p.id: p for p in load_dataset("bundled").problems}
    answers = [(p.id, dict(p.reference or {})) for p in bundled.values()]
    answers += [(c.problem_id, c.files) for c in bundled_candidates()]
    for pid, files in answers:
        flagged += [(pid, str(f)) for f in check(files, supplied=bundled[pid].context, rules=NEVER).findings]
        rtl = {path: text for path, text in files.items() if path.endswith((".v", ".sv"))}
        context = {path: text for path, text in bundled[pid].context.items() if path.endswith((".v", ".sv")) and path not in rtl}
        flagged += [(pid, str(f)) for f in check(rtl, supplied=context).findings]
    assert len(checked) > 20 and len(answers) > 40
    assert flagged == []


TESTBENCH = """`timescale 1 ps/1 ps
module stimulus_gen (input clk, output logic a);
  task wavedrom_start; endtask
  initial begin wavedrom_start(); a = 0; end
endmodule
module tb ();
  reg clk = 0;
  logic a, q_ref, q_dut;
  task peek; endtask
  initial begin : watch
    integer seen;
    peek;
    $dumpvars(1, stim1.clk, tb.clk, $root.tb.watch.seen);
  end
  stimulus_gen stim1 (.clk, .a);
  RefModule good1 (.clk, .a, .q(q_ref));
  TopModule top_module1 (.clk, .a, .q(q_dut));
  final $display("%m: %0d", watch.seen);
endmodule
"""
REFERENCE = "module RefModule (input clk, input a, output q);\n  assign q = a;\nendmodule\n"


def test_isolate_renames_what_an_answer_could_name():
    run = isolate({"t_test.sv": TESTBENCH, "t_ref.sv": REFERENCE}, prefixes=("M_", "F_"))
    assert set(run.files) == {"F_t_test.sv", "F_t_ref.sv"} and run.modules == {"stimulus_gen", "tb", "RefModule"}
    bench = run.files["F_t_test.sv"]
    for renamed in (
        "module M_stimulus_gen", "module M_tb", "task M_peek;", "begin : M_watch", "M_peek;", "M_stimulus_gen M_stim1",
        "M_RefModule M_good1", "TopModule M_top_module1", "M_stim1.clk", "M_tb.clk", "$root.M_tb.M_watch.seen",
        "M_watch.seen);",
    ):
        assert renamed in bench, renamed
    assert "(.clk, .a, .q(q_ref))" in bench  # port names keep theirs
    assert "wavedrom_start(); a = 0" in bench  # not the scope that instantiates the answer
    assert run.files["F_t_ref.sv"] == REFERENCE.replace("RefModule", "M_RefModule")
    assert run.module("tb") == "M_tb" and run.module("TopModule") == "TopModule" and run.file("x.sv") == "F_x.sv"


def test_restore_maps_a_log_back_exactly_and_names_differ_every_run():
    sources = {"t_test.sv": TESTBENCH, "t_ref.sv": REFERENCE}
    first, second = isolate(sources), isolate(sources)
    assert first.module_prefix != second.module_prefix and first.file_prefix != second.file_prefix
    assert first.module_prefix not in first.file_prefix and first.file_prefix not in first.module_prefix
    log = f"{first.file('t_test.sv')}:18: $finish called at 5 (1ps)\n{first.module('tb')}.{first.module_prefix}top_module1\n"
    assert first.restore(log) == "t_test.sv:18: $finish called at 5 (1ps)\ntb.top_module1\n"
    # Isolating again reads the cached plan: the same text, only the prefixes differ.
    assert first.restore(first.files[first.file("t_test.sv")]) == TESTBENCH


def test_a_test_bench_naming_a_scope_through_a_macro_is_left_as_it_is():
    bench = "`define DUT top_module1\nmodule tb; TopModule top_module1 (); initial $display(`DUT.q); endmodule\n"
    run = isolate({"t_test.sv": bench}, prefixes=("M_", "F_"))
    assert run.files == {"F_t_test.sv": bench} and run.module("tb") == "tb"
