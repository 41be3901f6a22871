#!/usr/bin/env python
"""Seconds per design of the quality stage, flow by flow, measured cold and from the cache.

The designs are the references of a benchmark copy (``--dataset``, default RTLLM v2's and
VerilogEval v2's made-up copies in tests/fixtures/benchmarks; a real copy for real sizes).
Each configuration measures every design with ``--jobs`` workers into an empty cache
(cold: Yosys, ABC, OpenSTA or nextpnr run), then again from that cache (warm: a lookup).
One table: configuration, designs measured, failures, wall seconds and seconds per design
cold and warm. Configurations: the ASIC flow on the test liberty (tests/fixtures/quality),
on each pinned library fetched here (``cvdp-gym quality fetch``), and the FPGA flow.

    .venv/bin/python scripts/bench_quality.py [--jobs 2] [--dataset rtllm-v2 --limit 20]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cvdp_gym.data.benchmarks.catalog import load_benchmark  # noqa: E402
from cvdp_gym.execution.cache import GradeCache  # noqa: E402
from cvdp_gym.grading.quality import QualitySettings, QualityStage, design_pair  # noqa: E402
from cvdp_gym.harness.runner import HarnessRunner  # noqa: E402
from cvdp_gym.quality.liberty import LIBERTIES, fetched  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
DEFAULT_SETS = [("rtllm-v2", FIXTURES / "benchmarks" / "rtllm"), ("verilog-eval-v2", FIXTURES / "benchmarks" / "verilog-eval")]


def designs(sets: list[tuple[str, Path | None]], limit: int) -> list[tuple[str, dict[str, str], str]]:
    """``(name, sources, top)`` of each problem's reference, at most ``limit`` a set."""
    out = []
    for spec, folder in sets:
        problems = [p for p in load_benchmark(spec, benchmark_dir=folder) if p.reference][:limit]
        for problem in problems:
            pair = design_pair(problem, dict(problem.reference))
            if not isinstance(pair, str):
                out.append((problem.id, pair[1], pair[2]))
    return out


def run(stage: QualityStage, items: list, jobs: int) -> tuple[float, int]:
    """Wall seconds to measure every design, and how many failed."""
    start = time.monotonic()
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda item: stage.measure(item[1], item[2]), items))
    return time.monotonic() - start, sum(not m.ok for m in results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--dataset", action="append", default=None, help="a benchmark spec (its fetched copy); repeatable")
    parser.add_argument("--limit", type=int, default=20, help="designs per dataset")
    args = parser.parse_args()
    console = Console(width=160)
    sets = [(spec, None) for spec in args.dataset] if args.dataset else DEFAULT_SETS
    items = designs(sets, args.limit)
    configs = [("asic, test liberty", QualitySettings(liberty=str(FIXTURES / "quality" / "tiny.lib")))]
    configs += [(f"asic, {name}", QualitySettings(liberty=name)) for name in LIBERTIES if fetched(name)]
    configs += [("fpga, hx8k ct256", QualitySettings(flow="fpga"))]
    sandbox = HarnessRunner().sandbox
    table = Table(title=f"quality stage: {len(items)} reference designs, {args.jobs} jobs")
    for column in ("configuration", "designs", "not measured", "cold s", "cold s/design", "warm s", "warm s/design", "cold/warm"):
        table.add_column(column, justify="left" if column == "configuration" else "right")
    for label, settings in configs:
        with tempfile.TemporaryDirectory() as folder:
            stage = QualityStage(sandbox, settings, cache=GradeCache(Path(folder) / "quality.sqlite"))
            cold, failed = run(stage, items, args.jobs)
            warm, _ = run(stage, items, args.jobs)
        n = max(1, len(items))
        table.add_row(
            label, str(len(items)), str(failed), f"{cold:.1f}", f"{cold / n:.2f}", f"{warm:.2f}", f"{warm / n:.4f}",
            f"{cold / max(warm, 1e-9):.0f}x",
        )
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
