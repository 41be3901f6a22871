#!/usr/bin/env python
"""Measure grading speed: cache hits, early rejection of syntax errors, and throughput.

Prints the median time of a cache hit, the median time to reject an answer with a syntax
error (the lint stage: no simulation), and graded answers per second over the bundled set
(references and known-wrong candidates, Icarus problems) with 1 and with 2 workers.

    .venv/bin/python scripts/bench_grading.py
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.grading import Grader


def main() -> None:
    console = Console(width=120)
    dataset = load_dataset("bundled")
    fast = [p for p in dataset if "verilator" not in p.harness.get("src/.env", "")]
    by_id = {p.id: p for p in fast}
    answers = [(p, answer_text(p, p.reference)) for p in fast]
    answers += [(by_id[c.problem_id], answer_text(by_id[c.problem_id], c.files)) for c in bundled_candidates() if c.problem_id in by_id]

    with tempfile.TemporaryDirectory() as tmp:
        cached = Grader(cache=Path(tmp) / "grades.sqlite")
        problem, answer = answers[0]
        cached.grade_response(problem, answer)
        hits = []
        for _ in range(50):
            start = time.perf_counter()
            result = cached.grade_response(problem, answer)
            hits.append(time.perf_counter() - start)
            assert result.cached

    grader = Grader(cache=None)
    syntax = [(by_id[c.problem_id], answer_text(by_id[c.problem_id], c.files)) for c in bundled_candidates() if c.name == "syntax_error" and c.problem_id in by_id]
    grader.grade_response(*syntax[0])  # warm up
    rejects = []
    for problem, answer in syntax:
        start = time.perf_counter()
        result = grader.grade_response(problem, answer)
        rejects.append(time.perf_counter() - start)
        assert result.failure_class == "build_error", result.reason

    rates = {}
    for workers in (1, 2):
        start = time.perf_counter()
        results = asyncio.run(grader.grade_many(answers, concurrency=workers))
        elapsed = time.perf_counter() - start
        rates[workers] = len(results) / elapsed

    table = Table(title="grading speed (bundled set, Icarus problems)")
    table.add_column("measure")
    table.add_column("value")
    table.add_column("target")
    table.add_row("cache hit (median of 50)", f"{statistics.median(hits) * 1000:.2f} ms", "milliseconds")
    table.add_row(f"syntax-error rejection (median of {len(rejects)})", f"{statistics.median(rejects):.3f} s", "< 0.1 s")
    table.add_row(f"graded answers/s, 1 worker ({len(answers)} answers)", f"{rates[1]:.2f}", "")
    table.add_row("graded answers/s, 2 workers", f"{rates[2]:.2f}", "")
    table.add_row("speed-up with 2 workers", f"{rates[2] / rates[1]:.2f}x", ">= 1.6x")
    console.print(table)


if __name__ == "__main__":
    main()
