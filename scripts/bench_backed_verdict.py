#!/usr/bin/env python
"""False rewards and seconds per answer of ``verdict="testbench"`` beside ``"testbench+reference"``,
on the seeded mutants of a ``cvdp-gym audit`` (its runs reused, nothing graded twice).

For each audit folder (``--audit DIR``, written by ``cvdp-gym audit``), the answers are each
audited problem's reference and its mutants. What each answer is comes from the audit: a
reference is right; a mutant its test bench fails by behaviour (killed), or passes while the
equivalence grader shows it differs (missed), is wrong; a mutant equivalent to the reference
is right; one whose equivalence was undecided is counted apart; one rejected unbuilt is left
out. What each verdict does with it is the grader's rule on the same runs:

- ``testbench``: the reward when the test bench passes; cost: the test bench's run;
- ``testbench+reference``: the reward when the test bench passes and the equivalence grader
  finds the answer equivalent (``cvdp_gym.grading.backed``); cost: the test bench's run, plus
  the equivalence grader's where the test bench passed.

Printed per benchmark and verdict: wrong answers rewarded (false rewards), right answers
rewarded (references, equivalent mutants), answers left without a verdict (undecided), and
seconds per answer (the runs' own wall times). ``--check N`` grades N answers per benchmark
again through ``Grader(verdict="testbench+reference")`` (the real code path, uncached), says
whether each verdict agrees with the one read from the audit, and times them.

    .venv/bin/python scripts/bench_backed_verdict.py --audit runs/audit/verilog-eval-v2 --audit runs/audit/rtllm-v2 [--check 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cvdp_gym.audit.run import KILLED, MISSED, RESULTS, audit_mutants
from cvdp_gym.check import read_done
from cvdp_gym.data import load_dataset
from cvdp_gym.grading import Grader
from cvdp_gym.grading.backed import BACKED, EQUIVALENT, TESTBENCH, equivalence
from cvdp_gym.harness import HarnessRunner
from cvdp_gym.sandbox import make_sandbox

console = Console(width=None if sys.stdout.isatty() else 170)
RIGHT, WRONG, UNDECIDED = "right", "wrong", "undecided"


@dataclass
class Answer:
    problem: str
    name: str
    truth: str  # RIGHT, WRONG or UNDECIDED (from the audit)
    testbench: bool
    testbench_s: float
    equivalent: bool  # the equivalence grader found it equivalent (only where the test bench passed)
    equivalence_s: float

    def rewarded(self, verdict: str) -> bool:
        return self.testbench and (verdict == TESTBENCH or self.equivalent)

    def seconds(self, verdict: str) -> float:
        return self.testbench_s + (self.equivalence_s if verdict == BACKED and self.testbench else 0.0)


def answers_of(folder: Path) -> tuple[dict[str, Any], list[Answer]]:
    """The audit's report, and its answers with their runs."""
    report = json.loads((folder / "audit.json").read_text())
    runs = {key: outcome.result for key, outcome in read_done(folder / RESULTS).items()}
    out = []
    for problem in report["problems"]:
        if problem["status"] != "audited":
            continue
        pid = problem["id"]
        reference, check = runs[f"{pid}::reference"], runs.get(f"{pid}::equivalence:reference")
        same = problem["no_check"] == "" and check is None  # a training set: its test bench is the reference
        out.append(_answer(pid, "reference", RIGHT, reference, check, same))
        for mutant in (m for m in report["mutants"] if m["id"] == pid):
            truth = {KILLED: WRONG, MISSED: WRONG, EQUIVALENT: RIGHT, "undecided": UNDECIDED}.get(mutant["outcome"])
            if truth is not None:
                bench = runs[f"{pid}::{mutant['mutant']}"]
                out.append(_answer(pid, mutant["mutant"], truth, bench, runs.get(f"{pid}::equivalence:{mutant['mutant']}"), same))
    return report, out


def _answer(pid: str, name: str, truth: str, bench: Any, check: Any, same: bool) -> Answer:
    judged = bench if same else check
    equivalent = judged is not None and equivalence(judged.passed, judged.failure_class) == EQUIVALENT
    seconds = 0.0 if same or check is None else check.wall_s
    return Answer(pid, name, truth, bench.passed, bench.wall_s, bench.passed and equivalent, seconds)


def check_again(report: dict[str, Any], answers: list[Answer], count: int, jobs: int) -> dict[str, Any]:
    """``count`` answers (half of them test-bench passes, where the verdicts differ) graded again
    through the real grader under the backed verdict: agreement and seconds per answer."""
    meta = report["meta"]
    data = load_dataset(meta["dataset"], benchmark_dir=meta.get("benchmark_dir"))
    rng = random.Random(0)
    passes = [a for a in answers if a.testbench]
    chosen = rng.sample(passes, min(len(passes), count // 2))
    rest = [a for a in answers if a not in chosen]
    chosen += rng.sample(rest, min(len(rest), count - len(chosen)))
    files: dict[tuple[str, str], dict[str, str]] = {}
    for pid in {a.problem for a in chosen}:
        problem = data[pid]
        files[(pid, "reference")] = dict(problem.reference or {})
        for name, mutant in audit_mutants(problem, meta["mutants_per_problem"], meta["seed"]).items():
            files[(pid, name)] = mutant
    grader = Grader(HarnessRunner(make_sandbox("bubblewrap")), cache=None, verdict=BACKED)

    def one(answer: Answer) -> tuple[bool, float]:
        start = time.monotonic()
        result = grader.grade_files(data[answer.problem], files[(answer.problem, answer.name)])
        return result.passed == answer.rewarded(BACKED), time.monotonic() - start

    with ThreadPoolExecutor(jobs) as pool:
        done = list(pool.map(one, chosen))
    seconds = [s for _, s in done]
    return {"graded": len(done), "agree": sum(a for a, _ in done), "mean_s": statistics.mean(seconds) if seconds else None}


def rows_of(answers: list[Answer]) -> dict[str, dict[str, Any]]:
    out = {}
    wrong = [a for a in answers if a.truth == WRONG]
    right = [a for a in answers if a.truth == RIGHT]
    undecided = [a for a in answers if a.truth == UNDECIDED]
    for verdict in (TESTBENCH, BACKED):
        seconds = [a.seconds(verdict) for a in answers]
        out[verdict] = {
            "answers": len(answers), "wrong": len(wrong), "false_rewards": sum(a.rewarded(verdict) for a in wrong),
            "right": len(right), "right_rewarded": sum(a.rewarded(verdict) for a in right),
            "references": sum(a.name == "reference" for a in right),
            "references_rewarded": sum(a.rewarded(verdict) for a in right if a.name == "reference"),
            "undecided": len(undecided), "undecided_rewarded": sum(a.rewarded(verdict) for a in undecided),
            "mean_s": statistics.mean(seconds), "median_s": statistics.median(seconds),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--audit", action="append", required=True, metavar="DIR", help="a folder `cvdp-gym audit --out` wrote (repeatable)")
    parser.add_argument("--check", type=int, default=0, metavar="N", help="grade N answers per benchmark again through the grader")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()

    table = Table(title="False rewards and cost per answer: the test bench alone, and backed by the reference (seeded mutants of each reference)")
    for column in ("benchmark", "verdict", "answers", "false rewards (wrong answers rewarded)", "references rewarded",
                   "equivalent mutants rewarded", "undecided mutants rewarded", "s/answer mean", "s/answer median"):
        table.add_column(column, justify="left" if column in ("benchmark", "verdict") else "right", no_wrap=column in ("benchmark", "verdict"))
    figures: dict[str, Any] = {}
    for folder in map(Path, args.audit):
        report, answers = answers_of(folder)
        name = ", ".join(report["benchmarks"]) or folder.name
        rows = rows_of(answers)
        for verdict, r in rows.items():
            pct = f" ({100 * r['false_rewards'] / r['wrong']:.1f}%)" if r["wrong"] else ""
            table.add_row(
                name, verdict, str(r["answers"]), f"{r['false_rewards']} / {r['wrong']}{pct}",
                f"{r['references_rewarded']} / {r['references']}",
                f"{r['right_rewarded'] - r['references_rewarded']} / {r['right'] - r['references']}",
                f"{r['undecided_rewarded']} / {r['undecided']}", f"{r['mean_s']:.3f}", f"{r['median_s']:.3f}",
            )
        figures[name] = {"rows": rows}
        if args.check:
            figures[name]["check"] = check_again(report, answers, args.check, args.jobs)
    console.print(table)
    for name, entry in figures.items():
        if "check" in entry:
            c = entry["check"]
            console.print(f"{name}: {c['graded']} answers graded again through Grader(verdict='{BACKED}'): "
                          f"{c['agree']} agree with the audit's runs; {c['mean_s']:.3f} s/answer", highlight=False)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
        console.print(f"figures in {args.json}")


if __name__ == "__main__":
    main()
