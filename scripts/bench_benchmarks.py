#!/usr/bin/env python
"""Seconds per answer on each benchmark beside CVDP: this tool's grader against the
benchmark's own flow, on the same answers, side by side.

For each benchmark copy found (``--benchmark-dir NAME=DIR`` or the benchmark's environment
variable; else the made-up copies in tests/fixtures/benchmarks), the answers are every
problem's reference plus ``--mutants`` wrong answers per problem (``cvdp_gym.data.mutants``,
seeded, no zero-delay loops: those only measure the 30 s limit). They are graded here with
``--jobs`` workers and no cache, and, where the benchmark's own scripts can run here (a clone
that carries them), by its own flow with the same parallelism (``cvdp_gym.parity.benchmarks``:
VerilogEval v2's ``configure`` + ``make -j``, v1's ``check_correctness``, RTLLM's
``auto_run.py`` with the VCS stand-in), each in the same sandbox on the same simulator. One
table: answers, wall seconds and seconds per answer for both, their ratio, and whether a
whole VerilogEval v2 task (156 answers) fits the one-minute target.

    .venv/bin/python scripts/bench_benchmarks.py [--jobs 2] [--mutants 0] [--only verilog-eval-v2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cvdp_gym.data import load_dataset
from cvdp_gym.data.benchmarks import BENCHMARKS
from cvdp_gym.data.problems import Problem
from cvdp_gym.envs.base import make_grader
from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.errors import ConfigError
from cvdp_gym.parity.answers import Answer
from cvdp_gym.parity.benchmarks import OFFICIAL_FLOWS, benchmark_answers
from cvdp_gym.parity.official import MACHINE
from cvdp_gym.sandbox import make_sandbox

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "benchmarks"
#: The made-up copy of each benchmark, used when no real one is given.
FIXTURE_COPIES = {
    "verilog-eval-v2": "verilog-eval", "verilog-eval-v1": "verilog-eval-v1", "rtllm-v2": "rtllm", "rtllm-v1.1": "rtllm-v1.1",
    "chipbench": "chipbench",
}
console = Console(width=None if sys.stdout.isatty() else 170)


@dataclass
class Timing:
    label: str
    answers: int
    seconds: float | None
    note: str = ""

    @property
    def per_answer(self) -> float | None:
        return None if self.seconds is None or not self.answers else self.seconds / self.answers


def copies(given: list[str], only: list[str]) -> dict[str, tuple[Path, bool]]:
    """Each benchmark's copy: ``(folder, real)``; a given one, its variable's, else the fixture."""
    named = dict(item.split("=", 1) for item in given)
    found: dict[str, tuple[Path, bool]] = {}
    for name, bench in BENCHMARKS.items():
        if (only and name not in only) or name not in FIXTURE_COPIES:  # the training sets have no flow of their own
            continue
        folder = named.get(name) or os.environ.get(bench.env_var)
        if folder:
            found[name] = (Path(folder), True)
        else:
            found[name] = (FIXTURES / FIXTURE_COPIES[name], False)
    return found


def answers_for(problems: list[Problem], mutants: int) -> list[Answer]:
    """Each reference, and ``mutants`` seeded wrong answers per problem (no hanging ones)."""
    spec = f"mutants:{mutants}" if mutants else "references"
    return benchmark_answers(spec, problems, hangs=0)[0]


def ours(answers: list[Answer], jobs: int) -> float:
    """Wall seconds for this tool to grade every answer, as the environments do (``jobs`` at once, no cache)."""
    grader = make_grader(cache=False)
    items = [(a.problem, answer_text(a.problem, a.files)) for a in answers]
    start = time.monotonic()
    asyncio.run(grader.grade_many(items, concurrency=jobs))
    return time.monotonic() - start


def official(answers: list[Answer], root: Path, jobs: int) -> tuple[float | None, str]:
    """Wall seconds for the benchmark's own scripts on the same answers (None: they cannot run here)."""
    flow = OFFICIAL_FLOWS[answers[0].problem.flow or ""]
    try:
        flow.check(root)
    except ConfigError:
        return None, "the copy has no scripts of the benchmark's own"
    sandbox = make_sandbox("bubblewrap")
    with tempfile.TemporaryDirectory(prefix="bench-official-") as work:
        start = time.monotonic()
        verdicts = flow.run(answers, sandbox=sandbox, clone=root, work=Path(work), jobs=jobs)
        seconds = time.monotonic() - start
    failed = sum(v.outcome == MACHINE for v in verdicts.values())
    return seconds, f"{failed} answer(s) the scripts could not run" if failed else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark-dir", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--only", action="append", default=[], help="only these benchmarks")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--mutants", type=int, default=0, help="wrong answers per problem beside its reference")
    parser.add_argument("--no-official", action="store_true", help="time this tool only")
    args = parser.parse_args()

    table = Table(title=f"seconds per answer: this tool vs the benchmark's own flow ({args.jobs} at once)")
    for column in ("benchmark", "copy", "answers", "ours s", "ours s/answer", "official s", "official s/answer", "ratio", "note"):
        table.add_column(column, justify="left" if column in ("benchmark", "copy", "note") else "right")
    for name, (root, real) in copies(args.benchmark_dir, args.only).items():
        bench = BENCHMARKS[name]
        tasks = bench.tasks or ("",)
        for task in tasks:
            spec = f"{name}:{task}" if task else name
            problems = load_dataset(spec, benchmark_dir=root).problems
            answers = answers_for(problems, args.mutants)
            mine = Timing("ours", len(answers), ours(answers, args.jobs))
            theirs = Timing("official", len(answers), None, "skipped")
            if not args.no_official:
                seconds, note = official(answers, root, args.jobs)
                theirs = Timing("official", len(answers), seconds, note)
            ratio = f"{theirs.seconds / mine.seconds:.1f}x" if theirs.seconds and mine.seconds else "-"
            note = theirs.note
            if name == "verilog-eval-v2" and real and mine.per_answer is not None:
                note = (note + "; " if note else "") + f"156 answers: {156 * mine.per_answer:.0f} s here (target < 60 s)"
            table.add_row(
                spec, "real" if real else "made-up", str(len(answers)), f"{mine.seconds:.1f}", f"{mine.per_answer:.3f}",
                "-" if theirs.seconds is None else f"{theirs.seconds:.1f}",
                "-" if theirs.per_answer is None else f"{theirs.per_answer:.3f}", ratio, note,
            )
    console.print(table)


if __name__ == "__main__":
    main()
