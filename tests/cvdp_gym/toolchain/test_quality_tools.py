"""The quality tools folder: OpenSTA and nextpnr-ice40, pinned, mounted read-only in the real
sandbox, measuring small made-up designs (a three-cell liberty, an iCE40 counter)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from cvdp_gym.sandbox import Limits, Mount
from cvdp_gym.toolchain import quality_tools
from cvdp_gym.toolchain.doctor import optional_rows
from cvdp_gym.toolchain.envs import read_requirements
from tests.support import missing

FIXTURES = Path(__file__).parents[2] / "fixtures" / "quality"
#: three_cells.lib's delays along rb/Q -> g1 (NAND2) -> g2 (INV) -> rq/D, and rq's setup time.
CLOCK_TO_Q, NAND2, INV, SETUP = 0.1, 0.05, 0.04, 0.03
STA_SCRIPT = """\
read_liberty /code/three_cells.lib
read_verilog /code/tiny_netlist.v
link_design tiny_path
create_clock -name clk -period 2 [get_ports clk]
set_input_delay 0 -clock clk [list [get_ports a] [get_ports b]]
set_output_delay 0 -clock clk [get_ports q]
report_checks -path_delay max -digits 3
report_power
"""
COUNTER = """\
module counter (input clk, input rst, output reg [7:0] count);
  always @(posedge clk) count <= rst ? 8'd0 : count + 8'd1;
endmodule
"""


@pytest.fixture(scope="module")
def quality(toolchain):
    problem = quality_tools.problem()
    if problem is not None:
        missing(f"quality tools: {problem}; run cvdp-gym toolchain install")
    return quality_tools.folder()


def _run(sandbox, script: str, tmp_path: Path, files: dict[str, str]):
    """``script`` in the sandbox, the quality tools read-only at their mount, ``files`` in /code."""
    work = tmp_path / "work"
    work.mkdir()
    for name, text in files.items():
        (work / name).write_text(text)
    host, target = quality_tools.mount()
    return sandbox.run(
        ["sh", "-c", script],
        mounts=[Mount(work, "/code", writable=True), Mount(host, target)],
        scratch=tmp_path / "scratch",
        cwd="/code",
        env={"HOME": "/code"},
        sim_env=sandbox.toolchain.env("cocotb2"),
        limits=Limits(wall_s=120),
    )


@pytest.mark.sandbox
def test_sta_reports_the_path_and_leakage_of_a_made_up_liberty(quality, sandbox, tmp_path):
    files = {name: (FIXTURES / name).read_text() for name in ("three_cells.lib", "tiny_netlist.v")}
    files["sta.tcl"] = STA_SCRIPT
    script = f"{quality_tools.MOUNT_TARGET}/bin/sta -no_splash -no_init -exit sta.tcl; echo sta=$?; touch {quality_tools.MOUNT_TARGET}/x"
    out = _run(sandbox, script, tmp_path, files)
    assert "sta=0" in out.output and "Read-only file system" in out.output, out.output  # read-only mount
    assert "Startpoint: r" in out.output and "Endpoint: rq" in out.output, out.output
    arrival = float(re.search(r"([\d.]+)\s+data arrival time", out.output).group(1))
    assert arrival == pytest.approx(CLOCK_TO_Q + NAND2 + INV)
    assert re.search(rf"{2 - SETUP - arrival:.3f}\s+slack \(MET\)", out.output), out.output
    # Leakage: three DFFs at 5 nW, a NAND2 at 2 and an inverter at 1, reported in watts.
    total = re.search(r"^Total\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", out.output, re.MULTILINE)
    assert total and float(total.group(3)) == pytest.approx((3 * 5 + 2 + 1) * 1e-9), out.output


@pytest.mark.sandbox
def test_nextpnr_places_and_routes_a_synthesised_counter(quality, sandbox, tmp_path):
    script = (
        'yosys -q -p "synth_ice40 -top counter -json counter.json" counter.v && '
        f"{quality_tools.MOUNT_TARGET}/bin/nextpnr-ice40 --hx8k --package ct256 --json counter.json "
        "--seed 1"
    )
    out = _run(sandbox, script, tmp_path, {"counter.v": COUNTER})
    assert out.returncode == 0, out.output
    assert "Preparing to run" not in out.output  # its machine code came compiled
    frequencies = re.findall(r"Max frequency for clock '[^']*clk[^']*': ([\d.]+) MHz", out.output)
    assert frequencies and float(frequencies[-1]) > 0, out.output


def test_the_lock_records_the_pins_and_both_version_lines(quality):
    lock = quality_tools.lock_entry()
    assert lock is not None
    for deb in quality_tools.DEBS:
        assert lock["debian"][deb.name] == {"version": deb.version, "deb": deb.filename.rsplit("/", 1)[-1], "sha256": deb.sha256}
    pins = dict(line.split("==") for line in read_requirements(quality_tools.REQUIREMENTS))
    assert lock["python"] == pins
    assert lock["sta_version"] == f"OpenSTA {quality_tools.STA_VERSION}"
    assert lock["nextpnr_version"].endswith(quality_tools.NEXTPNR_VERSION)
    assert quality_tools.mount() == (quality, "/opt/cvdp-quality")
    assert [row[:2] for row in optional_rows()] == [("quality tools", True)]


def test_an_empty_or_other_recipe_folder_is_not_ready_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("CVDP_GYM_TOOLCHAIN", str(tmp_path))
    folder = quality_tools.folder()
    assert folder == tmp_path / "quality" and not quality_tools.ready()
    assert quality_tools.problem() == f"not installed at {folder}"
    assert quality_tools.lock_entry() is None
    (name, ok, detail, fix), = optional_rows()  # absent is optional: None, not False
    assert (name, ok, fix) == ("quality tools", None, "cvdp-gym toolchain install") and str(folder) in detail
    folder.mkdir()
    (folder / ".cvdp-gym-quality").write_text("0123456789abcdef\n")
    assert "by another cvdp-gym version" in quality_tools.problem()


def test_the_fingerprint_changes_with_a_pin(monkeypatch):
    before = quality_tools.fingerprint()
    opensta, *rest = quality_tools.DEBS
    monkeypatch.setattr(quality_tools, "DEBS", (dataclasses.replace(opensta, sha256="0" * 64), *rest))
    assert quality_tools.fingerprint() != before
