#!/usr/bin/env python
"""Time the harness runner on every bundled reference, per sandbox, side by side.

For each sandbox (bubblewrap on the pinned root, Docker on the stand-in image) and each
reference, the median of ``--repeat`` runs of:
- total: the whole ``HarnessRunner.run`` (workspace, sandbox or container, parsing, cleanup);
- in sandbox: the harness command's wall time as the sandbox measured it (interpreter and
  pytest start-up, cocotb import, build, simulation);
- simulator: the harness's own time as pytest reports it (build and simulation);
- ratio: total / simulator.

    .venv/bin/python scripts/bench_harness.py [--sandbox bubblewrap --sandbox docker] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from rich.console import Console
from rich.table import Table

from cvdp_gym.data import load_dataset
from cvdp_gym.harness import HarnessRunner
from cvdp_gym.sandbox import SANDBOXES, SandboxUnavailable, make_sandbox


def _simulator(problem) -> str:
    env = problem.harness.get("src/.env", "")
    return next((line.split("=")[1].strip() for line in env.splitlines() if line.startswith("SIM")), "?")


def bench(runners: dict, problems, repeat: int) -> dict[str, dict[str, tuple[float, float, float, str]]]:
    """Medians per sandbox and problem; the sandboxes take turns, so load drifts hit both alike."""
    for runner in runners.values():
        runner.run(problems[0], problems[0].reference)  # warm caches (page cache, image layers)
    samples = {name: {p.id: ([], [], [], "") for p in problems} for name in runners}
    for problem in problems:
        for _ in range(repeat):
            for name, runner in runners.items():
                walls, inside, harness, _verdict = samples[name][problem.id]
                start = time.perf_counter()
                result = runner.run(problem, problem.reference)
                walls.append(time.perf_counter() - start)
                inside.append(sum(s.wall_s for s in result.services))
                harness.append(result.harness_s or float("nan"))
                samples[name][problem.id] = (walls, inside, harness, result.verdict)
    return {
        name: {
            pid: (statistics.median(w), statistics.median(i), statistics.median(h), verdict)
            for pid, (w, i, h, verdict) in rows.items()
        }
        for name, rows in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sandbox", action="append", choices=SANDBOXES, help="repeatable (default: both)")
    parser.add_argument("--toolchain", default=None, help="root (default) or host (bubblewrap only)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per problem (the median is reported)")
    parser.add_argument("--dataset", default="bundled")
    parser.add_argument("--id", action="append", help="only these problems")
    args = parser.parse_args()

    console = Console(width=160)
    problems = [p for p in load_dataset(args.dataset, ids=args.id).problems if p.reference]
    runners = {}
    for name in args.sandbox or list(SANDBOXES):
        try:
            runners[name] = HarnessRunner(make_sandbox(name, toolchain=args.toolchain))
        except SandboxUnavailable as exc:
            console.print(f"[yellow]{name} skipped:[/] {exc}")
    with console.status(f"{', '.join(runners)}: {len(problems)} references x {args.repeat}, taking turns"):
        results = bench(runners, problems, args.repeat)
    table = Table(title=f"harness runner on {args.dataset} references (median of {args.repeat})")
    table.add_column("problem")
    table.add_column("sim")
    for name in results:
        for column in ("verdict", "total (s)", "in sandbox (s)", "simulator (s)", "ratio"):
            table.add_column(f"{name}\n{column}", justify="right")
    for problem in problems:
        row = [problem.id, _simulator(problem)]
        for rows in results.values():
            wall, inside, harness, verdict = rows[problem.id]
            row += [verdict, f"{wall:.2f}", f"{inside:.2f}", f"{harness:.2f}", f"{wall / harness:.2f}x"]
        table.add_row(*row)
    console.print(table)
    medians = {}
    for name, rows in results.items():
        walls = [r[0] for r in rows.values()]
        ratios = [r[0] / r[2] for r in rows.values()]
        medians[name] = statistics.median(walls)
        console.print(
            f"{name}: median total {statistics.median(walls):.2f} s, median total/simulator "
            f"{statistics.median(ratios):.2f}x (target <= 1.3x for bubblewrap), "
            f"median overhead outside the harness command "
            f"{statistics.median(r[0] - r[1] for r in rows.values()) * 1000:.0f} ms"
        )
    if "bubblewrap" in medians and "docker" in medians:
        console.print(f"docker / bubblewrap median total: {medians['docker'] / medians['bubblewrap']:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
