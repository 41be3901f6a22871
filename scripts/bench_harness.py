#!/usr/bin/env python
"""Time the sandboxed harness runner on every bundled reference.

Prints, per problem and as medians: total wall time of a run, the harness's own time as
pytest reports it, and the sandbox overhead (total minus pytest's time: sandbox setup,
interpreter and pytest start-up, workspace creation and cleanup).

    .venv/bin/python scripts/bench_harness.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from rich.console import Console
from rich.table import Table

from cvdp_gym.data import load_dataset
from cvdp_gym.harness import HarnessRunner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per problem (the median is reported)")
    parser.add_argument("--dataset", default="bundled")
    args = parser.parse_args()

    runner = HarnessRunner()
    dataset = load_dataset(args.dataset)
    console = Console(width=140)
    table = Table(title=f"harness runner on {args.dataset} references (median of {args.repeat})")
    for column in ("problem", "simulator", "verdict", "total (s)", "pytest (s)", "overhead (s)"):
        table.add_column(column)
    totals, overheads = [], []
    runner.run(dataset.problems[0], dataset.problems[0].reference)  # warm the page cache
    for problem in dataset.problems:
        walls, harness_times, verdict = [], [], ""
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = runner.run(problem, problem.reference)
            walls.append(time.perf_counter() - start)
            harness_times.append(result.harness_s or 0.0)
            verdict = result.verdict
        wall, harness = statistics.median(walls), statistics.median(harness_times)
        overhead = wall - harness
        totals.append(wall)
        overheads.append(overhead)
        sim = next((s.split("=")[1].strip() for s in problem.harness.get("src/.env", "").splitlines() if s.startswith("SIM")), "?")
        table.add_row(problem.id, sim, verdict, f"{wall:.3f}", f"{harness:.3f}", f"{overhead:.3f}")
    console.print(table)
    console.print(
        f"median total: {statistics.median(totals):.3f} s (target <= 1.5 s); "
        f"median sandbox overhead: {statistics.median(overheads):.3f} s (target <= 0.3 s); "
        f"{len(totals)} problems"
    )


if __name__ == "__main__":
    main()
