"""A model's Verilog test bench run on the reference design and on mutants, in one sandbox run.

Contract: ``run_verilog_designs(sandbox, bench, design_texts, sim_s=, limits=)`` returns one
:class:`~cvdp_gym.harness.bench_verdicts.DesignRun` per design (the reference first) and never
raises on what the bench or the designs hold: the bench (``tb.sv``) is compiled with each
design in turn (Icarus 13, ``-g2012``), each design as ``d<i>/design.sv`` with the same module
names, and simulated under its own limit (``timeout -s KILL sim_s``); what the bench wrote is
read by :func:`~cvdp_gym.harness.bench_verdicts.bench_verdict`. The reference runs first: a
bench that does not build or finish there is not run on the mutants. The cocotb bench's run is
:mod:`cvdp_gym.harness.cocotb_bench`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cvdp_gym.data.verification_tasks import BENCH_FILE, DESIGN_FILE
from cvdp_gym.harness.bench_verdicts import DesignRun, bench_verdict
from cvdp_gym.harness.testbench import run_script
from cvdp_gym.sandbox.base import Limits, Sandbox

__all__ = ["run_verilog_designs"]

_LOGS = ("compile.rc", "compile.log", "sim.rc", "sim.log")


def run_verilog_designs(
    sandbox: Sandbox, bench: str, design_texts: list[str], *, sim_s: float, limits: Limits, keep_dir: Path | None = None,
) -> list[DesignRun]:
    """The Verilog bench ``bench`` on each of ``design_texts`` (the reference first)."""
    if not design_texts:
        return []
    files = {BENCH_FILE: bench} | {f"d{i}/{DESIGN_FILE}": text for i, text in enumerate(design_texts)}
    folders = " ".join(f"d{i}" for i in range(len(design_texts)))
    script = (
        f"for d in {folders}; do ( cd $d; "
        f"iverilog -g2012 -o sim ../{BENCH_FILE} {DESIGN_FILE} > compile.log 2>&1; echo $? > compile.rc; "
        f"if [ -f sim ]; then timeout -s KILL {sim_s:g} vvp -n sim > sim.log 2>&1; echo $? > sim.rc; fi; "
        f"find . -mindepth 1 ! -name '*.log' ! -name '*.rc' ! -name '{DESIGN_FILE}' -delete ); "
        f"[ \"$(cat d0/sim.rc 2>/dev/null)\" = 0 ] || break; done"
    )
    logs = [f"d{i}/{name}" for i in range(len(design_texts)) for name in _LOGS]
    wall = min(limits.wall_s, len(design_texts) * (sim_s + 15.0))
    ran = run_script(sandbox, "icarus", script, files, logs, limits=dataclasses.replace(limits, wall_s=wall), keep_dir=keep_dir)
    return [bench_verdict(*(ran.logs.get(f"d{i}/{name}", "") for name in _LOGS)) for i in range(len(design_texts))]
