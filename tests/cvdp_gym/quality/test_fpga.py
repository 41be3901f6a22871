"""The FPGA flow with the real tools: Yosys 0.40's ``synth_ice40`` and nextpnr-ice40 in the sandbox,
on small made-up designs (each measured once per module; the tests read the results)."""

from __future__ import annotations

import re

import pytest

from cvdp_gym.errors import ConfigError
from cvdp_gym.quality.fpga import NO_CLOCKED_PATH, measure_fpga
from cvdp_gym.toolchain.settings import root_dir, toolchain_dir


def counter(width: int, *, piped: bool = False) -> str:
    """A ``width``-bit counter; ``piped``: its output through one more register (needless)."""
    output = "always_ff @(posedge clk) q <= count;" if piped else "assign q = count;"
    return (
        f"module counter(input logic clk, input logic rst, output logic [{width - 1}:0] q);\n"
        f"  logic [{width - 1}:0] count;\n"
        "  always_ff @(posedge clk) if (rst) count <= '0; else count <= count + 1'b1;\n"
        f"  {output}\nendmodule\n"
    )


MULTIPLY = """\
module mul(input logic clk, input logic [15:0] a, input logic [15:0] b, output logic [31:0] p);
  logic [15:0] ra, rb;
  always_ff @(posedge clk) begin ra <= a; rb <= b; p <= ra * rb; end
endmodule
"""
#: 150 + 150 + 150 + 1 = 451 I/O bits: more than any iCE40 package has pins.
WIDE = """\
module wide(input logic clk, input logic [149:0] a, input logic [149:0] b, output logic [149:0] y);
  always_ff @(posedge clk) y <= a ^ b;
endmodule
"""
RAM = """\
module ram(input logic clk, input logic we, input logic [7:0] addr, input logic [15:0] d, output logic [15:0] q);
  logic [15:0] mem [0:255];
  always_ff @(posedge clk) begin if (we) mem[addr] <= d; q <= mem[addr]; end
endmodule
"""
LOOP = """\
module loop(input logic clk, input logic a, output logic y, output logic q);
  logic w;
  assign w = ~(w & a);
  assign y = w;
  always_ff @(posedge clk) q <= w;
endmodule
"""


def _quality_tools():
    """(host folder, mount point) of the quality tools, or why they cannot run here."""
    try:
        from cvdp_gym.toolchain import quality_tools
    except ImportError:  # the tools' module not merged yet: the same folder, found by hand
        folder, target = toolchain_dir() / "quality", "/opt/cvdp-quality"
        if not (folder / "bin" / "nextpnr-ice40").is_file():
            return None, f"no nextpnr-ice40 in {folder}"
        if not (root_dir() / target.lstrip("/")).is_dir():
            return None, f"the simulation root has no mount point {target}"
        return (folder, target), ""
    problem = quality_tools.problem()
    return (None, problem) if problem else (quality_tools.mount(), "")


@pytest.fixture(scope="module")
def tools():
    mount, why = _quality_tools()
    if mount is None:
        pytest.skip(f"quality tools missing ({why}): cvdp-gym toolchain install")
    return mount


@pytest.fixture(scope="module")
def measure(sandbox, tools, tmp_path_factory):
    """``measure(text, top, **options)``: one design measured in a fresh scratch folder."""

    def run(text: str, top: str, *, name: str = "design.sv", **options):
        options.setdefault("tools", tools)
        return measure_fpga(sandbox, {name: text}, top, scratch=tmp_path_factory.mktemp("fpga"), **options)

    return run


@pytest.fixture(scope="module")
def counters(measure):
    return {
        "16": measure(counter(16), "counter"),
        "16 again": measure(counter(16), "counter"),
        "8": measure(counter(8), "counter"),
        "8 piped": measure(counter(8, piped=True), "counter"),
    }


@pytest.fixture(scope="module")
def multipliers(measure):
    return {device: measure(MULTIPLY, "mul", device=device, package=package) for device, package in (("hx8k", "ct256"), ("up5k", "sg48"))}


def test_a_16_bit_counter_has_16_flip_flops_and_an_fmax(counters):
    measured = counters["16"]
    assert measured.ok, measured.failure
    metrics = measured.metrics
    assert (metrics.device, metrics.ffs, metrics.dsp_blocks, metrics.ram_blocks) == ("hx8k", 16, 0, 0)
    assert metrics.luts > 0 and metrics.carry > 0  # the adder's carry chain
    assert metrics.fmax_mhz is not None and metrics.fmax_mhz > 0
    assert metrics.notes == ()


def test_a_needless_pipeline_register_costs_flip_flops(counters):
    plain, piped = counters["8"].metrics, counters["8 piped"].metrics
    assert plain.ffs == 8 and piped.ffs == 16


def test_the_same_design_twice_measures_the_same(counters):
    assert counters["16"].metrics == counters["16 again"].metrics


def test_a_multiplier_is_luts_on_hx8k_and_a_dsp_block_on_up5k(multipliers):
    hx8k, up5k = multipliers["hx8k"], multipliers["up5k"]
    assert hx8k.ok and up5k.ok, (hx8k.failure, up5k.failure)
    assert hx8k.metrics.dsp_blocks == 0 and hx8k.metrics.luts > 100
    assert hx8k.metrics.fmax_mhz is not None  # input registers to the output register
    assert up5k.metrics.dsp_blocks == 1 and up5k.metrics.luts < hx8k.metrics.luts
    # 65 I/O bits do not fit sg48, the UltraPlus package: resources kept, no fmax.
    assert up5k.metrics.fmax_mhz is None and up5k.metrics.notes[0].startswith("place and route skipped: 65 I/O bits")


def test_too_many_io_bits_keep_the_resources_and_say_why_there_is_no_fmax(measure):
    measured = measure(WIDE, "wide")
    assert measured.ok, measured.failure
    assert measured.metrics.ffs == 150 and measured.metrics.luts > 0
    assert measured.metrics.fmax_mhz is None
    (note,) = measured.metrics.notes
    found = re.fullmatch(r"place and route skipped: 451 I/O bits, the package has (\d+)", note)
    assert found and 0 < int(found.group(1)) < 451, note


def test_a_memory_maps_to_a_ram_block(measure):
    measured = measure(RAM, "ram")
    assert measured.ok, measured.failure
    assert measured.metrics.ram_blocks == 1


def test_registers_only_at_the_ports_leave_no_clocked_path(measure):
    text = "module reg_xor(input logic clk, input logic [3:0] a, b, output logic [3:0] y);\n  always_ff @(posedge clk) y <= a ^ b;\nendmodule\n"
    measured = measure(text, "reg_xor")
    assert measured.ok, measured.failure
    assert measured.metrics.ffs == 4 and measured.metrics.fmax_mhz is None
    assert measured.metrics.notes == (NO_CLOCKED_PATH,)


@pytest.mark.parametrize(
    ("text", "top", "words"),
    [
        ("module broken(input a, output y);\n  assign y = a &;\nendmodule\n", "broken", "syntax error"),
        ("module shell(input a, output y);\n  nosuch u(.a(a), .y(y));\nendmodule\n", "shell", "nosuch"),
        (counter(4), "not_there", "not_there"),
    ],
    ids=["syntax error", "unknown module", "missing top"],
)
def test_a_design_that_does_not_elaborate_fails_in_one_line(measure, text, top, words):
    measured = measure(text, top)
    assert not measured.ok and measured.metrics is None
    assert measured.failure.startswith("synthesis failed: ") and words in measured.failure
    assert "\n" not in measured.failure


def test_a_combinational_loop_is_placed_and_timed_as_cut(measure):
    """A loop (what a latch built from LUTs is) is measured: nextpnr times it as cut
    (``--ignore-loops``) where it would refuse the whole design."""
    measured = measure(LOOP, "loop")
    assert measured.ok, measured.failure
    assert measured.metrics.luts >= 1 and measured.metrics.ffs == 1


def test_without_the_tools_resources_come_from_synthesis_alone(measure, counters):
    measured = measure(counter(16), "counter", tools=None)
    assert measured.ok, measured.failure
    with_tools = counters["16"].metrics
    assert (measured.metrics.luts, measured.metrics.ffs, measured.metrics.carry) == (with_tools.luts, with_tools.ffs, with_tools.carry)
    assert measured.metrics.fmax_mhz is None and "not run" in measured.metrics.notes[0]


def test_names_that_cannot_go_into_a_yosys_script_fail_before_any_run(sandbox, tmp_path):
    for sources, top in (({"../up.sv": counter(4)}, "counter"), ({"a b.sv": counter(4)}, "counter"), ({"c.sv": counter(4)}, "counter; shell")):
        measured = measure_fpga(sandbox, sources, top, scratch=tmp_path, tools=None)
        assert measured.failure and not measured.ok
    assert not (tmp_path / "work").exists()


def test_an_unknown_device_is_the_callers_error(sandbox, tmp_path):
    with pytest.raises(ConfigError, match="hx9000"):
        measure_fpga(sandbox, {"c.sv": counter(4)}, "counter", device="hx9000", scratch=tmp_path, tools=None)


def test_several_files_with_an_include_folder(sandbox, tmp_path):
    sources = {
        "include/width.vh": "`define WIDTH 8\n",
        "rtl/top.sv": '`include "width.vh"\nmodule top(input logic clk, input logic [`WIDTH-1:0] d, output logic [`WIDTH-1:0] q);\n'
        "  stage u(.clk(clk), .d(d), .q(q));\nendmodule\n",
        "rtl/stage.sv": "module stage(input logic clk, input logic [7:0] d, output logic [7:0] q);\n"
        "  always_ff @(posedge clk) q <= d;\nendmodule\n",
    }
    measured = measure_fpga(sandbox, sources, "top", scratch=tmp_path, tools=None)
    assert measured.ok, measured.failure
    assert measured.metrics.ffs == 8
