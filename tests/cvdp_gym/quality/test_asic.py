"""The ASIC flow with the real tools in the real sandbox: Yosys 0.40 + ABC to a made-up liberty
(``tests/fixtures/quality/tiny.lib``), OpenSTA 2019 from the quality tools folder.

Every assertion compares designs with each other (a ripple-carry adder is slower than a
parallel-prefix one, a needless register costs area) or checks a failure's reason: no number
is hard-coded. The expensive runs happen once per module (``measured``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cvdp_gym.quality.asic import measure_asic
from cvdp_gym.quality.liberty_cells import library_cells
from cvdp_gym.quality.synthesis_warnings import WARNING_KINDS
from tests.support import missing

TINY = Path(__file__).resolve().parents[2] / "fixtures" / "quality" / "tiny.lib"

RIPPLE = """
module add16(input logic [15:0] a, input logic [15:0] b, input logic cin,
             output logic [15:0] s, output logic cout);
  logic [16:0] c;
  assign c[0] = cin;
  for (genvar i = 0; i < 16; i++) begin : stage
    full_adder fa (.a(a[i]), .b(b[i]), .ci(c[i]), .s(s[i]), .co(c[i+1]));
  end
  assign cout = c[16];
endmodule
"""
FULL_ADDER = """
module full_adder(input logic a, b, ci, output logic s, co);
  assign s = a ^ b ^ ci;
  assign co = (a & b) | (ci & (a ^ b));
endmodule
"""
KOGGE_STONE = """
module add16(input logic [15:0] a, input logic [15:0] b, input logic cin,
             output logic [15:0] s, output logic cout);
  // Parallel prefix: generate/propagate pairs combined in log2(16) = 4 levels.
  logic [4:0][16:0] g, p;
  always_comb begin
    g[0][0] = cin;
    p[0][0] = 1'b0;
    for (int i = 0; i < 16; i++) begin
      g[0][i+1] = a[i] & b[i];
      p[0][i+1] = a[i] ^ b[i];
    end
    for (int l = 0; l < 4; l++)
      for (int i = 0; i < 17; i++)
        if (i >= (1 << l)) begin
          g[l+1][i] = g[l][i] | (p[l][i] & g[l][i - (1 << l)]);
          p[l+1][i] = p[l][i] & p[l][i - (1 << l)];
        end else begin
          g[l+1][i] = g[l][i];
          p[l+1][i] = p[l][i];
        end
    for (int i = 0; i < 16; i++) s[i] = p[0][i+1] ^ g[4][i];
    cout = g[4][16];
  end
endmodule
"""
COUNTER = """
module counter(input logic clk, input logic rst_n, input logic en, output logic [7:0] count);
  always_ff @(posedge clk or negedge rst_n)
    if (!rst_n) count <= '0;
    else if (en) count <= count + 8'd1;
endmodule
"""
COUNTER_PIPELINED = """
module counter(input logic clk, input logic rst_n, input logic en, output logic [7:0] count);
  logic [7:0] value;
  always_ff @(posedge clk or negedge rst_n)
    if (!rst_n) begin
      value <= '0;
      count <= '0;
    end else begin
      if (en) value <= value + 8'd1;
      count <= value;  // a register nobody needs
    end
endmodule
"""
LATCH = """
module hold(input logic en, input logic [3:0] d, output logic [3:0] q);
  always_comb if (en) q = d;
endmodule
"""
SLOPPY = """
module sloppy(input logic a, b, output logic y, output logic z);
  logic floating;
  assign y = floating & a;
  assign z = a;
  assign z = b;
endmodule
"""
BROKEN = """
module broken(input logic a, output logic y);
  assign y = a &
endmodule
"""
LOOP = """
module ring(input logic a, output logic y);
  logic x;
  assign x = ~(x & a);
  assign y = x;
endmodule
"""
PACKAGE_USER = """
`include "widths.svh"
module scaled(input logic [WIDTH-1:0] a, output logic [WIDTH-1:0] y);
  assign y = a * scale_pkg::FACTOR;
endmodule
"""
PACKAGE = """
package scale_pkg;
  localparam int FACTOR = 3;
endpackage
"""

DESIGNS = {
    "ripple": ({"add16.sv": RIPPLE, "full_adder.sv": FULL_ADDER}, "add16"),
    "prefix": ({"add16.sv": KOGGE_STONE}, "add16"),
    "counter": ({"counter.sv": COUNTER}, "counter"),
    "pipelined": ({"counter.sv": COUNTER_PIPELINED}, "counter"),
    "latch": ({"hold.sv": LATCH}, "hold"),
    "sloppy": ({"sloppy.sv": SLOPPY}, "sloppy"),
    # the user of a package listed before it, and a header only included
    "package": ({"rtl/scaled.sv": PACKAGE_USER, "rtl/scale_pkg.sv": PACKAGE, "rtl/widths.svh": "localparam int WIDTH = 8;\n"}, "scaled"),
}


@pytest.fixture(scope="module")
def tools() -> tuple[Path, str]:
    """The quality tools folder (OpenSTA) and where runs see it; skipped where not installed."""
    try:
        from cvdp_gym.toolchain import quality_tools
    except ImportError:
        from cvdp_gym.toolchain.settings import toolchain_dir

        host, target = toolchain_dir() / "quality", "/opt/cvdp-quality"
    else:
        host, target = quality_tools.mount()
    if not (host / "bin" / "sta").is_file():
        missing(f"quality tools (OpenSTA) not installed at {host}: cvdp-gym toolchain install")
    return host, target


@pytest.fixture(scope="module")
def measured(sandbox, tools, tmp_path_factory):
    """Every design of ``DESIGNS`` through the whole flow on tiny.lib, once."""
    results = {}
    for name, (sources, top) in DESIGNS.items():
        results[name] = measure_asic(
            sandbox, sources, top, TINY, scratch=tmp_path_factory.mktemp(name), tools=tools
        )
        print(f"[asic] {name}: {results[name].seconds:.2f} s")
    return results


def metrics_of(measured, name):
    measurement = measured[name]
    assert measurement.ok, measurement.failure
    assert measurement.flow == "asic"
    return measurement.metrics


def test_ripple_carry_adder_is_slower_than_parallel_prefix(measured):
    ripple, prefix = metrics_of(measured, "ripple"), metrics_of(measured, "prefix")
    assert ripple.delay_ns > prefix.delay_ns > 0
    assert ripple.slack_ns < prefix.slack_ns
    assert ripple.area_um2 < prefix.area_um2  # the prefix tree pays for its speed in cells
    assert ripple.power_uw > 0 and "vectorless" in ripple.power_kind


def test_needless_pipeline_register_costs_area_and_cells(measured):
    plain, pipelined = metrics_of(measured, "counter"), metrics_of(measured, "pipelined")
    assert pipelined.area_um2 > plain.area_um2
    assert pipelined.cells > plain.cells
    assert pipelined.power_uw > plain.power_uw  # eight more flip-flops clocked every cycle
    for metrics in (plain, pipelined):
        assert any("clock ports clk" in note for note in metrics.notes), metrics.notes
        assert metrics.slack_ns == pytest.approx(metrics.clock_ns - metrics.delay_ns, abs=0.5)


def test_inferred_latch_is_counted_and_still_measured(measured):
    latch = metrics_of(measured, "latch")
    assert latch.warnings["latch"] == 1
    assert latch.cells > 0 and latch.delay_ns is not None
    assert metrics_of(measured, "counter").warnings["latch"] == 0


def test_checks_count_undriven_and_multiple_drivers(measured):
    sloppy = metrics_of(measured, "sloppy")
    assert set(sloppy.warnings) == set(WARNING_KINDS)
    assert sloppy.warnings["undriven"] >= 1
    assert sloppy.warnings["multiple_drivers"] >= 1
    assert sloppy.warnings["combinational_loop"] == 0
    assert all(count == 0 for count in metrics_of(measured, "ripple").warnings.values())


def test_combinational_design_is_timed_on_a_virtual_clock(measured):
    prefix = metrics_of(measured, "prefix")
    assert any("virtual clock" in note for note in prefix.notes), prefix.notes
    assert 0 < prefix.delay_ns < prefix.clock_ns


def test_package_listed_after_its_user_and_included_header(measured):
    scaled = metrics_of(measured, "package")
    assert scaled.cells > 0 and scaled.delay_ns > 0
    # read in the given order, Yosys would take scale_pkg::FACTOR for an implicit wire
    assert scaled.warnings["other"] == 0


def test_same_design_twice_gives_identical_metrics(sandbox, tools, measured, tmp_path):
    sources, top = DESIGNS["counter"]
    again = measure_asic(sandbox, sources, top, TINY, scratch=tmp_path, tools=tools)
    assert again.metrics == measured["counter"].metrics


def test_without_opensta_area_and_cells_only(sandbox, measured, tmp_path):
    sources, top = DESIGNS["counter"]
    alone = measure_asic(sandbox, sources, top, TINY, scratch=tmp_path, tools=None)
    assert alone.ok, alone.failure
    full = measured["counter"].metrics
    assert (alone.metrics.area_um2, alone.metrics.cells) == (full.area_um2, full.cells)
    assert alone.metrics.delay_ns is None and alone.metrics.power_uw is None
    assert any("OpenSTA not available" in note for note in alone.metrics.notes)


@pytest.mark.parametrize(
    ("sources", "top", "liberty", "reason"),
    [
        ({"broken.sv": BROKEN}, "broken", TINY, "syntax error"),
        ({"counter.sv": COUNTER}, "no_such_top", TINY, "no_such_top"),
        ({"ring.sv": LOOP}, "ring", TINY, "combinational loop"),
        ({"counter.sv": COUNTER}, "counter", Path("/no/such/liberty.lib"), "liberty not found"),
        ({"counter.sv": COUNTER}, "counter", "garbage", "liberty"),
        ({"counter.sv": COUNTER}, "count er", TINY, "not a plain identifier"),
    ],
    ids=["syntax", "missing-top", "loop", "missing-liberty", "garbage-liberty", "bad-top"],
)
def test_bad_input_fails_in_one_line(sandbox, tools, tmp_path, sources, top, liberty, reason):
    if liberty == "garbage":
        liberty = tmp_path / "garbage.lib"
        liberty.write_text("this is not { a liberty\n")
    result = measure_asic(sandbox, sources, top, liberty, scratch=tmp_path / "run", tools=tools)
    assert not result.ok and result.metrics is None
    assert "\n" not in result.failure and reason in result.failure, result.failure


def test_a_time_limit_is_a_failure_marked_limited_and_never_cached(sandbox, tools, tmp_path):
    """A run a limit stopped says so (``limited``), and the quality stage keeps no measurement
    of it (another run may finish), while it keeps a failure the design caused."""
    from cvdp_gym.execution.cache import GradeCache
    from cvdp_gym.grading.quality import QualitySettings, QualityStage

    sources, top = DESIGNS["counter"]
    stopped = measure_asic(sandbox, sources, top, TINY, scratch=tmp_path / "run", tools=tools, wall_s=0.01)
    assert not stopped.ok and stopped.limited and "time limit" in stopped.failure
    broken = measure_asic(sandbox, {"broken.sv": BROKEN}, "broken", TINY, scratch=tmp_path / "broken", tools=tools)
    assert not broken.ok and not broken.limited
    kept = {}
    for name, outcome in (("stopped", stopped), ("broken", broken)):
        stage = QualityStage(sandbox, QualitySettings(liberty=str(TINY)), cache=GradeCache(tmp_path / f"{name}.sqlite"))
        stage._run = lambda sources, top, scratch, outcome=outcome: outcome  # the flow's real outcome, from above
        stage.measure(sources, top)
        kept[name] = len(stage.cache)
    assert kept == {"stopped": 0, "broken": 1}


def test_tiny_liberty_names_its_tie_cells_and_latch():
    cells = library_cells(TINY.read_text())
    assert (cells.tie_high, cells.tie_low) == ("TIEHI Y", "TIELO Y")
    assert cells.latch is not None and (cells.latch.enable, cells.latch.data, cells.latch.output) == ("G", "D", "Q")
