"""The answer gate read as each tool reads the answer: one view, includes inside the answer,
system tasks on an allowlist. Every reference scans clean (tests/cvdp_gym/gate/test_reach_in.py
runs them all); these are the constructs an optimiser found or could find next."""

from __future__ import annotations

from pathlib import Path

import pytest

from cvdp_gym.gate import FULL, NEVER, check
from cvdp_gym.gate.directives import TOOL_MACROS
from cvdp_gym.gate.system_tasks import BENCH, DESIGN, PROPERTIES

HEADER = "module TopModule(input a, output y);\n  assign y = ~a;\n"


def reason(text: str, rules: str = FULL, **options) -> str:
    return check({"rtl/top.sv": HEADER + text + "endmodule\n"}, rules=rules, **options).reason


@pytest.mark.parametrize("rules", [FULL, NEVER])
@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("`ifdef __ICARUS__\n  initial $finish;\n`endif\n", "`ifdef __ICARUS__"),
        ("`ifndef SYNTHESIS\n  initial $display(1);\n`endif\n", "`ifndef SYNTHESIS"),
        ("`ifdef VERILATOR\n`elsif YOSYS\n`else\n`endif\n", "`ifdef VERILATOR"),
        ("`define MINE\n`ifdef MINE\n`elsif FORMAL\n`endif\n", "`elsif FORMAL"),
        ("  wire z = `__ICARUS__;\n", "`__ICARUS__"),
        ("  initial $finish_and_return(0);\n", "`$finish_and_return`: not one of the system tasks"),
        ("  initial $finish;\n", "`$finish`"),
        ("  integer f;\n  initial f = $fopenr(\"marker\");\n", "`$fopenr`"),
        ("  integer f;\n  initial f = $fopenw(\"marker\");\n", "`$fopenw`"),
        ("  initial if ($test$plusargs(\"x\")) $display(1);\n", "`$test$plusargs`"),
        ("`define F(a) $fin``a\n  initial `F(ish);\n", "`$finish`"),
        ("`define S $sys``tem\n  initial `S(\"ls\");\n", "`$system`"),
        ("// synopsys translate_off\n  initial $display(1);\n// synopsys translate_on\n", "pragma"),
        ("/* synthesis translate_off */\n", "pragma"),
        ("  (* blackbox *) wire w;\n", "`(* blackbox *)`"),
        ("  (* anyseq *) reg r;\n", "`(* anyseq *)`"),
        ("  (* keep, full_case *) reg r;\n", "`(* full_case *)`"),
        ("  initial $display(`__FILE__);\n", "`__FILE__"),
        ("`unconnected_drive pull1\n", "`unconnected_drive"),
        ("`pragma protect begin\n", "`pragma"),
        ("`undefineall\n", "`undefineall"),
        ('`include "/proc/self/environ"\n', "not one of the answer's own files"),
        ('`include "../../etc/passwd"\n', "not one of the answer's own files"),
        ("`define P \"x.vh\"\n`include `P\n", "not a literal"),
    ],
)
def test_what_one_tool_reads_differently_or_no_design_needs_is_named(text, words, rules):
    assert words in reason(text, rules), (text, rules)


def test_a_macro_only_the_harness_defines_may_be_used_and_a_tool_s_may_not():
    """ChipBench's shared headers define ``WORD_SIZE`` in its test bench: a view without it
    does not build (no view gains), while a tool's own macro gives each tool its own value."""
    assert not check({"rtl/top.sv": HEADER + "  wire [`WORD_SIZE-1:0] w;\nendmodule\n"}).findings
    for name in ("SYNTHESIS", "YOSYS", "VERILATOR", "__ICARUS__", "SV_COV_START"):
        text = HEADER + f"  localparam integer S = `{name} + 0;\nendmodule\n"
        assert f"`{name}" in check({"rtl/top.sv": text}).reason, name
    assert "`WORD_SIZE" in check({"rtl/top.sv": "`undef WORD_SIZE\n" + HEADER + "  wire [`WORD_SIZE:0] w;\nendmodule\n"}).reason


def test_an_include_guard_on_a_tool_s_macro_is_refused_and_one_of_the_answer_s_own_is_not():
    guarded = "`ifndef TOP_VH\n`define TOP_VH\n" + HEADER + "endmodule\n`endif\n"
    assert not check({"rtl/top.sv": guarded}).findings
    for macro in sorted(TOOL_MACROS)[:6]:
        text = f"`ifndef {macro}\n`define {macro}\n" + HEADER + "endmodule\n`endif\n"
        assert f"`ifndef {macro}" in check({"rtl/top.sv": text}).reason


def test_an_answer_s_own_macros_and_ordinary_constructs_are_clean():
    text = (
        "`timescale 1ns/1ps\n`default_nettype none\n`define W 4\n`define INC(x) ((x) + 1)\n`ifdef W\n`else\n`endif\n"
        "module TopModule(input wire clk, input wire [`W-1:0] a, output reg [`W-1:0] y);\n"
        "  (* keep *) wire [`W-1:0] n = `INC(a);\n  always @(*) begin end\n  always @(posedge clk) y <= n;\n"
        "  initial $display(\"%0d %s\", $clog2(`W), `\"W`\");\nendmodule\n`default_nettype wire\n"
    )
    assert not check({"rtl/top.sv": text}).findings
    assert not check({"rtl/top.sv": text}, rules=NEVER).findings


def test_an_included_file_is_read_as_part_of_the_answer():
    top = HEADER + '`include "helper.vh"\nendmodule\n'
    helper = "  initial $finish_and_return(0);\n"
    assert "`$finish_and_return`" in check({"rtl/top.sv": top, "rtl/helper.vh": helper}, rules=NEVER).reason
    assert "not one of the answer's own files" in check({"rtl/top.sv": top}, rules=NEVER).reason
    assert not check({"rtl/top.sv": top, "rtl/helper.vh": "  wire w = a;\n"}, rules=NEVER).findings
    # The harness's absolute path to the answer's own file, and a path from the answer's root.
    for name in ("/code/rtl/helper.vh", "rtl/helper.vh"):
        text = HEADER + f'`include "{name}"\nendmodule\n'
        assert "`$finish_and_return`" in check({"rtl/top.sv": text, "rtl/helper.vh": helper}, rules=NEVER).reason


def test_an_agent_s_workspace_is_read_whole(tmp_path: Path):
    """An agent can edit any file of its workspace: each RTL file counts, and an include may
    name any of them (a file of another extension included)."""
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "top.sv").write_text(HEADER + '`include "notes.txt"\nendmodule\n')
    (tmp_path / "rtl" / "notes.txt").write_text("  final $finish_and_return(0);\n")
    files = {"rtl/top.sv": (tmp_path / "rtl" / "top.sv").read_text()}
    assert "`$finish_and_return`" in check(files, rules=NEVER, workspace=tmp_path).reason
    (tmp_path / "rtl" / "notes.txt").write_text("  wire w = a;\n")
    (tmp_path / "rtl" / "other.sv").write_text("module other; initial $fopenw(\"results.xml\"); endmodule\n")
    assert "`$fopenw`" in check(files, rules=NEVER, workspace=tmp_path).reason
    (tmp_path / "rtl" / "other.sv").unlink()
    assert not check(files, rules=NEVER, workspace=tmp_path).findings


def test_a_link_or_a_flood_of_files_in_a_workspace_is_never_read_as_clean(tmp_path: Path, monkeypatch):
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "top.sv").write_text(HEADER + "endmodule\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.sv"
    outside.write_text("module other; initial $finish_and_return(0); endmodule\n")
    (tmp_path / "rtl" / "other.sv").symlink_to(outside)
    files = {"rtl/top.sv": HEADER + "endmodule\n"}
    assert "a link" in check(files, rules=NEVER, workspace=tmp_path).reason
    # A repository problem's own link (or file), unchanged from the tree it started from, is the problem's.
    base = tmp_path.parent / f"{tmp_path.name}-base"
    (base / "rtl").mkdir(parents=True)
    (base / "rtl" / "other.sv").symlink_to(outside)
    assert not check(files, rules=NEVER, workspace=tmp_path, baseline=base).findings
    (tmp_path / "rtl" / "other.sv").unlink()
    monkeypatch.setattr("cvdp_gym.gate.answer_gate.MAX_WORKSPACE_RTL", 3)
    for index in range(5):
        (tmp_path / f"a{index}.sv").write_text("module m; endmodule\n")
    assert "more than 3 Verilog files" in check(files, rules=NEVER, workspace=tmp_path).reason


def test_a_cocotb_design_writes_only_data_files_and_reads_nothing_outside():
    def opened(name: str, mode: str) -> str:
        return reason(f'  integer fd;\n  initial fd = $fopen("{name}", "{mode}");\n', NEVER)

    assert "not a data file" in opened("results.xml", "w")
    assert "not a data file" in opened("../rundir/results.xml", "w")
    assert "not a data file" in opened("conftest.py", "a")
    assert "outside the answer's working folder" in opened("/proc/self/environ", "r")
    assert "outside the answer's working folder" in opened("/src/test_runner.py", "r")
    assert opened("trace.txt", "w") == ""


def test_the_allowlists_are_closed_and_ordered_by_kind():
    assert {"$finish", "$stop", "$fatal", "$exit", "$system", "$finish_and_return", "$fopenr"}.isdisjoint(DESIGN)
    assert {"$fopen", "$fopenr", "$readmemh", "$fgets", "$system"}.isdisjoint(BENCH)
    assert PROPERTIES < DESIGN and "$finish" in BENCH
