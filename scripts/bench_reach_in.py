#!/usr/bin/env python
"""What the reach-in defence costs per answer on the test-bench benchmarks: each answer
graded as shipped (the static check, per-run names for the test bench and the reference,
RTLLM's X guard) and untouched (the benchmark's own names, no check), side by side.

The untouched configuration is the flows' own untouched run (``once(None, ...)``, what
they use for the ``official`` reading of a flagged answer) with the check skipped: this
script swaps the flows' ``scan`` and ``isolated_run`` for that, in this process only.
Answers: every problem's reference plus ``--mutants`` seeded wrong answers per problem, on
the copies ``bench_benchmarks.py`` finds (``--benchmark-dir NAME=DIR``, the benchmark's
environment variable, else the made-up copies in tests/fixtures/benchmarks). The two
configurations take turns ``--repeat`` times so that load drifts hit both; the table gives
the median seconds per answer of each and their ratio.

    .venv/bin/python scripts/bench_reach_in.py [--jobs 2] [--mutants 1] [--repeat 2] [--only rtllm-v2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_benchmarks import answers_for, copies, ours

from cvdp_gym.benchmarks.rtllm import flow as rtllm
from cvdp_gym.benchmarks.verilog_eval_v1 import flow as verilog_eval_v1
from cvdp_gym.benchmarks.verilog_eval_v2 import flow as verilog_eval
from cvdp_gym.data import load_dataset
from cvdp_gym.data.benchmarks import BENCHMARKS
from cvdp_gym.gate import Scan
from cvdp_gym.harness import runner

FLOW_MODULES = (verilog_eval, verilog_eval_v1, rtllm)
#: What the gate is, in a flow module and in the runner.
GATE_NAMES = ("check", "compiled_check", "calls_command")
console = Console(width=None if sys.stdout.isatty() else 150)


@contextmanager
def ungated() -> Iterator[None]:
    """The answer gate turned off (its text reading in the flows and in the runner, and the
    compiled image's reading in the flows); the run's names kept."""
    saved = [(m, {name: getattr(m, name) for name in GATE_NAMES if hasattr(m, name)}) for m in (*FLOW_MODULES, runner)]
    for module, names in saved:
        module.check = lambda *args, **kwargs: Scan()
        if "compiled_check" in names:
            module.compiled_check = lambda result, *args, **kwargs: result
            module.calls_command = lambda exe: "true"
    try:
        yield
    finally:
        for module, names in saved:
            for name, value in names.items():
                setattr(module, name, value)


@contextmanager
def untouched() -> Iterator[None]:
    """The flows without the defence: no gate, the benchmark's own names, no guard."""
    saved = [(m, m.isolated_run) for m in FLOW_MODULES]
    for module in FLOW_MODULES:
        module.isolated_run = lambda found, sources, once, keep_dir: once(None, keep_dir)
    try:
        with ungated():
            yield
    finally:
        for module, isolated_run in saved:
            module.isolated_run = isolated_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark-dir", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--only", action="append", default=[], help="only these benchmarks")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--mutants", type=int, default=1, help="wrong answers per problem beside its reference")
    parser.add_argument("--repeat", type=int, default=2, help="turns of each configuration")
    args = parser.parse_args()

    table = Table(title=f"seconds per answer: the reach-in defence on and off ({args.jobs} at once, no cache)")
    for column in ("benchmark", "copy", "answers", "untouched s/answer", "gate off s/answer", "shipped s/answer", "defence cost", "gate cost"):
        table.add_column(column, justify="left" if column in ("benchmark", "copy") else "right")
    for name, (root, real) in copies(args.benchmark_dir, args.only).items():
        for task in BENCHMARKS[name].tasks or ("",):
            spec = f"{name}:{task}" if task else name
            answers = answers_for(load_dataset(spec, benchmark_dir=root).problems, args.mutants)
            plain: list[float] = []
            isolated: list[float] = []
            no_gate: list[float] = []
            with console.status(f"{spec}: {len(answers)} answers, {args.repeat} turns each"):
                for _ in range(args.repeat):
                    with untouched():
                        plain.append(ours(answers, args.jobs) / len(answers))
                    with ungated():
                        no_gate.append(ours(answers, args.jobs) / len(answers))
                    isolated.append(ours(answers, args.jobs) / len(answers))
            before, off, after = statistics.median(plain), statistics.median(no_gate), statistics.median(isolated)
            table.add_row(
                spec, "real" if real else "made-up", str(len(answers)), f"{before:.3f}", f"{off:.3f}", f"{after:.3f}",
                f"{(after / before - 1) * 100:+.1f}%", f"{(after / off - 1) * 100:+.1f}%",
            )
    console.print(table)


if __name__ == "__main__":
    main()
