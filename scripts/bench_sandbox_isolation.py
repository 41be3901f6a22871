#!/usr/bin/env python
"""What keeping the host out of reach costs per bubblewrap run: device nodes of the run's own
and a read-only ``/proc`` (``cvdp_gym/sandbox/devices.py``) against bubblewrap's defaults
(the host's nodes bound in, ``/proc`` writable), side by side, on the same commands.

Both configurations run the exact ``bwrap`` command line the sandbox builds; the defaults'
line is that one with the isolation arguments taken out. The commands: ``true`` (the
sandbox's own start-up, where the difference shows most) and a VerilogEval-sized answer
compiled and simulated with Icarus (what an answer costs). Medians of ``--repeat`` runs,
the configurations taking turns so that load drifts hit both alike.

    .venv/bin/python scripts/bench_sandbox_isolation.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cvdp_gym.sandbox import BubblewrapSandbox, Mount
from cvdp_gym.sandbox.scratch import remove_tree

DESIGN = """
module TopModule(input clk, input reset, input [7:0] d, output reg [7:0] q);
  always @(posedge clk) if (reset) q <= 0; else q <= q + d;
endmodule
module tb;
  reg clk = 0, reset = 1; reg [7:0] d = 0; wire [7:0] q; integer i;
  TopModule dut(.clk(clk), .reset(reset), .d(d), .q(q));
  always #5 clk = ~clk;
  initial begin #12 reset = 0; for (i = 0; i < 2000; i = i + 1) begin d = $random; #10; end
    $display("Mismatches: 0 in 2000 samples"); $finish; end
endmodule
"""
COMMANDS = {
    "true": ["/bin/true"],
    "iverilog + vvp": ["/bin/sh", "-c", "iverilog -g2012 -o /work/x /work/a.sv && vvp -n /work/x > /dev/null"],
}


def without_isolation(argv: list[str]) -> list[str]:
    """``argv`` with the isolation arguments (``--remount-ro /proc``, ``--dev-bind`` of the run's nodes) removed."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--remount-ro" and argv[i + 1] == "/proc":
            i += 2
        elif argv[i] == "--dev-bind" and argv[i + 2].startswith("/dev/"):
            i += 3
        else:
            out.append(argv[i])
            i += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    sandbox = BubblewrapSandbox()
    base = Path(tempfile.mkdtemp(prefix="cvdp-bench-isolation-"))
    (base / "work").mkdir()
    (base / "work" / "a.sv").write_text(DESIGN)
    table = Table(title=f"bubblewrap run, median of {args.repeat} (ms)")
    for column in ("command", "bubblewrap defaults", "own /dev, read-only /proc", "ratio"):
        table.add_column(column, justify="right" if column != "command" else "left")
    try:
        for label, command in COMMANDS.items():
            times: dict[str, list[float]] = {"defaults": [], "isolated": []}
            for run in range(args.repeat + 1):  # the first of each is a warm-up, not counted
                scratch = base / f"scratch{run}"
                isolated = sandbox.command(
                    command, mounts=[Mount(base / "work", "/work", writable=True)], scratch=scratch, cwd="/work",
                    env={"PATH": "/usr/bin:/bin"}, sim_env=None,
                )
                for name, argv in (("defaults", without_isolation(isolated)), ("isolated", isolated)):
                    start = time.perf_counter()
                    done = subprocess.run(argv, capture_output=True)
                    if done.returncode != 0:
                        raise SystemExit(f"{label} ({name}) failed: {done.stdout.decode()}{done.stderr.decode()}")
                    if run:
                        times[name].append((time.perf_counter() - start) * 1000)
                remove_tree(scratch)
            default, isolated_ms = statistics.median(times["defaults"]), statistics.median(times["isolated"])
            table.add_row(label, f"{default:.1f}", f"{isolated_ms:.1f}", f"{isolated_ms / default:.3f}")
    finally:
        remove_tree(base)
    Console().print(table)


if __name__ == "__main__":
    main()
