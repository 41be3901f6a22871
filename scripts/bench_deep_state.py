#!/usr/bin/env python
"""Deep state: how many mutants the reference grader calls equivalent differ after all.

The backed verdict (``testbench+reference``) rests on the reference-equivalence grader's
default settings (3,000 simulated cycles, a formal bound of 20 steps, then induction). A
mutant whose difference lies deeper (a counter that wraps at 0x2000 instead of 0, a divider's
last step, an FSM state reached after a long sequence, a reset between edges) can pass both.
This script takes a ``cvdp-gym audit``'s mutants that the grader judged equivalent and runs
the same grader again with a far stronger setting (``--cycles``, default 200,000, and
``--depth``), then prints how many it now finds different, per benchmark, with their names.
A mutant the stronger run shows different is a false reward of the backed verdict at the
default settings; one it still calls equivalent is likely equivalent (or deeper still).

    .venv/bin/python scripts/bench_deep_state.py --audit runs/audit/rtllm-v2 [--cycles 200000] [--depth 40] [--jobs 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_backed_verdict import answers_of

from cvdp_gym.audit.run import audit_mutants
from cvdp_gym.data import load_dataset
from cvdp_gym.grading.backed import EQUIVALENT, equivalence, reference_check
from cvdp_gym.harness import HarnessRunner

console = Console(width=None if sys.stdout.isatty() else 170)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--audit", action="append", required=True, type=Path, help="a folder `cvdp-gym audit --out` wrote")
    parser.add_argument("--cycles", type=int, default=200_000)
    parser.add_argument("--depth", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    runner = HarnessRunner()
    table = Table(title=f"mutants the default reference grader calls equivalent, checked again ({args.cycles} cycles, depth {args.depth})")
    for column in ("benchmark", "judged equivalent", "differ when checked deeper", "still equivalent", "undecided", "s/mutant"):
        table.add_column(column, justify="left" if column == "benchmark" else "right")
    out = {}
    for folder in args.audit:
        report, answers = answers_of(folder)
        meta = report["meta"]
        name = str(meta["dataset"])
        dataset = load_dataset(name, benchmark_dir=meta.get("benchmark_dir"))
        equivalent = [a for a in answers if a.truth == "right" and a.name != "reference"]

        def deeper(answer, dataset=dataset, meta=meta):
            problem = dataset[answer.problem]
            files = audit_mutants(problem, int(meta["mutants_per_problem"]), int(meta["seed"]))[answer.name]
            check = reference_check(problem)
            twin = check.twin
            settings = {**dict(twin.extra.get("equivalence") or {}), "cycles": args.cycles, "depth": args.depth}
            twin = dataclasses.replace(twin, extra={**twin.extra, "equivalence": settings})
            start = time.monotonic()
            run = runner.run(twin, check.answer(files))
            return answer, equivalence(run.passed, run.failure_class), run.reason, time.monotonic() - start

        with console.status(f"{folder}: {len(equivalent)} mutants judged equivalent, checked again"), ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(deeper, equivalent))
        differ = [(a.problem, a.name, why[:160]) for a, verdict, why, _ in results if verdict == "different"]
        undecided = [(a.problem, a.name, why[:160]) for a, verdict, why, _ in results if verdict not in ("different", EQUIVALENT)]
        seconds = sum(s for *_, s in results) / max(1, len(results))
        table.add_row(name, str(len(results)), str(len(differ)), str(len(results) - len(differ) - len(undecided)),
                      str(len(undecided)), f"{seconds:.2f}")
        out[name] = {"judged_equivalent": len(results), "differ": differ, "undecided": undecided}
        for pid, name, why in differ:
            console.print(f"  differs: {pid} {name}: {why}")
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
