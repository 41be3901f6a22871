#!/usr/bin/env python
"""Seconds per answer of the verification tasks, configuration by configuration, cold and warm.

The problems are a benchmark copy's (``--dataset``, default the made-up VerilogEval v2 copy in
tests/fixtures/benchmarks); the answers are the reference-model benches of
``scripts/verification_baselines.py`` for the test-bench task and, for the assertion task,
one property per output that it equals itself (always true) and, for a clocked design, one
that the first output holds its value from cycle to cycle (``$stable``-style: often false),
cheap to write for any design and always graded.
Each configuration grades every answer twice with ``--jobs`` workers: **cold** (the
equivalence verdicts of the seeded bugs not yet known in this process: the first answer to a
problem pays for its pool) and **warm** (known: what every later answer to the problem
costs, the common case in training). One table: configuration, answers, seconds per answer
cold and warm, mean kill rate.

    .venv/bin/python scripts/bench_verification.py [--jobs 2] [--dataset verilog-eval-v2:spec-to-rtl --benchmark-dir DIR --limit 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from verification_baselines import bench  # noqa: E402

from cvdp_gym.data import load_dataset  # noqa: E402
from cvdp_gym.data.problems import Problem  # noqa: E402
from cvdp_gym.equivalence.ports import read_design  # noqa: E402
from cvdp_gym.harness.results import HarnessResult  # noqa: E402
from cvdp_gym.harness.runner import HarnessRunner, RunOptions  # noqa: E402
from cvdp_gym.sandbox import Limits, make_sandbox  # noqa: E402
from cvdp_gym.tasks.design import DesignUnderTest  # noqa: E402
from cvdp_gym.tasks.mutants import forget_verdicts  # noqa: E402
from cvdp_gym.tasks.names import ASSERTION, TESTBENCH  # noqa: E402
from cvdp_gym.tasks.posing import TaskOptions, pose  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "benchmarks" / "verilog-eval"


def answers(problems: list[Problem], task: str) -> list[tuple[Problem, dict[str, str]]]:
    out = []
    for problem in problems:
        design = DesignUnderTest.from_dict(problem.extra["design"])
        try:
            described = read_design(design.text, design.top)
        except Exception:  # a reference slang cannot describe: not this benchmark's concern
            continue
        if task == TESTBENCH:
            out.append((problem, {problem.targets[0]: bench(design, described, cycles=200, check=True)}))
        else:
            clock = described.clocks[0] if described.clocks else None
            event = f"@(posedge {clock}) " if clock else ""
            props = [f"assert property ({event}{p.name} == {p.name});" for p in described.outputs]
            if clock:
                props += [f"assert property ({event}1 |=> {p.name} == $past({p.name}));" for p in described.outputs[:1]]
            out.append((problem, {problem.targets[0]: "\n".join(props) + "\n"}))
    return out


def grade_all(runner: HarnessRunner, work: list[tuple[Problem, dict[str, str]]], jobs: int) -> tuple[float, list[HarnessResult]]:
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda item: runner.run(item[0], item[1], seed=0), work))
    return time.monotonic() - start, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="verilog-eval-v2:spec-to-rtl")
    parser.add_argument("--benchmark-dir", default=str(FIXTURE))
    parser.add_argument("--limit", type=int, default=12)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    source = load_dataset(args.dataset, benchmark_dir=args.benchmark_dir).problems[: args.limit]
    runner = HarnessRunner(make_sandbox("bubblewrap"), RunOptions(limits=Limits(wall_s=300)))
    configurations = [
        ("testbench, 8 bugs", pose(source, TaskOptions(TESTBENCH)), TESTBENCH),
        ("testbench, 8 bugs + coverage", pose(source, TaskOptions(TESTBENCH, coverage=True)), TESTBENCH),
        ("assertion, 4 bugs, depth 12", pose(source, TaskOptions(ASSERTION)), ASSERTION),
    ]
    table = Table(title=f"verification tasks: seconds per answer ({args.dataset}, {args.jobs} jobs)")
    for column in ("configuration", "answers", "cold s/answer", "warm s/answer", "mean kill rate", "graded"):
        table.add_column(column, justify="left" if column == "configuration" else "right")
    console = Console(width=160)
    for name, problems, task in configurations:
        forget_verdicts()  # cold: no equivalence verdict known
        work = answers(problems, task)
        if not work:
            continue
        cold, results = grade_all(runner, work, args.jobs)
        warm, _ = grade_all(runner, work, args.jobs)
        kills = [r.tests.passed / r.tests.total for r in results if r.tests.total]
        graded = sum(r.failure_class not in ("unsupported", "undecided", "harness_error") for r in results)
        table.add_row(
            name, str(len(work)), f"{cold / len(work):.2f}", f"{warm / len(work):.2f}",
            f"{statistics.fmean(kills):.3f}" if kills else "-", f"{graded}/{len(work)}",
        )
        console.print(f"[dim]{name}: done[/]")
    console.print(table)


if __name__ == "__main__":
    main()
