#!/usr/bin/env python
"""False rewards, failed references and seconds per answer of the reference-equivalence grader,
beside the two published recipes, on problems that have both a reference and an official test bench.

For each problem (the bundled CVDP problems with one target; VerilogEval v2 spec-to-rtl and
RTLLM v2.0 from a copy: ``--benchmark-dir NAME=DIR`` or their variables, else the made-up
copies in tests/fixtures/benchmarks), the answers are its reference and ``--mutants`` seeded
wrong answers (``cvdp_gym.data.mutants``: operators, constants, conditions, reset values,
widths, case items, state transitions...). The problem's own test bench (CVDP's cocotb
harness, VerilogEval's and RTLLM's flows) says which answers are wrong: a mutant whose
behaviour it fails (``test_failure``, ``timeout``) is wrong for sure (the reference passes
it); one it rejects before simulating (a build error, or a VerilogEval warning rule an
equivalent design can break) is counted apart. Then each grader judges every answer against the
reference alone: this project's ``reference`` grader in each mode (``simulation``,
``formal``, ``both``) and the two recipes re-implemented from their papers' descriptions
(``codev-r1``: random stimulus, strict X; ``verithoughts``: 50 steps from all-zero in Yosys).

Printed per grader: wrong answers it passed (false rewards: a reward teaching the bug), the
references it failed, its verdict on the mutants the test bench cannot tell from the
reference (equivalent rewrites, or a test bench's hole), what it could not decide or grade,
and seconds per answer. Goal: fewer false rewards than both recipes, no reference failed,
and at least as fast per answer as CodeV-R1's test bench.

    .venv/bin/python scripts/bench_reference.py [--mutants 3] [--limit 40] [--jobs 2] [--json out.json] [--results runs/verdicts.jsonl]

Every verdict is appended to ``--results`` as it comes (one JSON line per answer and grader);
a run given the same file again grades only what it lacks.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from cvdp_gym.data import load_dataset
from cvdp_gym.data.benchmarks import BENCHMARKS
from cvdp_gym.data.mutants import BEHAVIOUR_KINDS, problem_mutants
from cvdp_gym.data.problems import Problem
from cvdp_gym.harness import HarnessRunner
from cvdp_gym.harness.results import HarnessResult
from cvdp_gym.sandbox import make_sandbox

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "benchmarks"
GRADERS = ("simulation", "formal", "both", "codev-r1", "verithoughts")
REFERENCE, WRONG, HIDDEN, BUILD = "reference", "wrong", "passes its test bench", "rejected unbuilt"
#: Test-bench failure classes that say the behaviour is wrong (the others: it was not built or
#: bound, e.g. VerilogEval's warning rules, which an equivalent design can break).
BEHAVIOUR = ("test_failure", "timeout")
console = Console(width=None if sys.stdout.isatty() else 170)


@dataclasses.dataclass
class Answer:
    problem: Problem  # the original: graded by its own test bench
    twin: Problem  # the same problem graded against its reference alone
    name: str
    files: dict[str, str]
    kind: str = ""  # REFERENCE, WRONG or HIDDEN once the test bench has judged it


def twin_of(problem: Problem) -> Problem | None:
    """``problem`` graded by equivalence with its reference (None: not one reference file)."""
    if not problem.reference or len(problem.targets) != 1 or problem.targets[0] not in problem.reference:
        return None
    top = problem.extra.get("module") or ("TopModule" if problem.grader == "verilog-eval-v2" else None)
    return dataclasses.replace(
        problem, grader="reference", toolchain="cvdp-sim", harness={}, defect=None,
        extra={"top": top or Path(problem.targets[0]).stem, "name": problem.id},
    )


def problems(limit: int, given: dict[str, str]) -> list[Problem]:
    """The bundled CVDP problems, and VerilogEval v2 spec-to-rtl and RTLLM v2.0 (``limit`` of each)."""
    chosen = [p for p in load_dataset("bundled") if not p.agentic and p.scoring == "harness" and p.repo is None][:limit]
    for spec, name, copy in (("verilog-eval-v2:spec-to-rtl", "verilog-eval-v2", "verilog-eval"), ("rtllm-v2", "rtllm-v2", "rtllm")):
        folder = given.get(name) or os.environ.get(BENCHMARKS[name].env_var) or str(FIXTURES / copy)
        chosen += [p for p in load_dataset(spec, benchmark_dir=folder) if not p.defect][:limit]
    return chosen


def answers_of(chosen: list[Problem], mutants: int, seed: int) -> list[Answer]:
    out = []
    for problem in chosen:
        twin = twin_of(problem)
        if twin is None:
            continue
        target = problem.targets[0]
        out.append(Answer(problem, twin, REFERENCE, dict(problem.reference)))
        for mutant in problem_mutants(problem, mutants, seed=seed, kinds=BEHAVIOUR_KINDS):
            out.append(Answer(problem, twin, f"mutant:{mutant.kind}", {target: mutant.text}))
    return out


def graded(runner: HarnessRunner, answer: Answer, grader: str) -> tuple[HarnessResult, float]:
    problem = answer.problem if grader == "test bench" else dataclasses.replace(
        answer.twin, extra={**answer.twin.extra, "equivalence": {"mode": grader}},
    )
    start = time.monotonic()
    result = runner.run(problem, answer.files)
    return result, time.monotonic() - start


def _read_results(path: str | None) -> dict[tuple[str, str, str], tuple[HarnessResult, float]]:
    """The verdicts an earlier run appended to ``path``: (problem, answer, grader) -> (result, s)."""
    if not path or not Path(path).exists():
        return {}
    out = {}
    for line in Path(path).read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line torn by an interruption
            continue
        result = HarnessResult(row["problem"], row["passed"], row["failure_class"], row["reason"])
        result.official = row.get("official") or {}
        out[(row["problem"], row["answer"], row["grader"])] = (result, row["seconds"])
    return out


def _append_result(path: str | None, answer: Answer, grader: str, result: HarnessResult, seconds: float) -> None:
    if path:
        row = {"problem": answer.problem.id, "answer": answer.name, "grader": grader, "passed": result.passed,
               "failure_class": result.failure_class, "reason": result.reason[:300], "seconds": round(seconds, 3),
               "official": {"formal": {"verdict": (result.official.get("formal") or {}).get("verdict")}}}
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", type=int, default=3, help="wrong answers per problem")
    parser.add_argument("--limit", type=int, default=40, help="problems of each source at most")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--benchmark-dir", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--json", help="write every answer's verdicts here")
    parser.add_argument("--results", help="append each verdict here as it comes; a second run on it grades only the rest")
    args = parser.parse_args()

    runner = HarnessRunner(make_sandbox("bubblewrap"))
    answers = answers_of(problems(args.limit, dict(item.split("=", 1) for item in args.benchmark_dir)), args.mutants, args.seed)
    verdicts: dict[tuple[int, str], tuple[HarnessResult, float]] = {}
    done = _read_results(args.results)
    for answer in answers:
        for grader in ("test bench", *GRADERS):
            if (answer.problem.id, answer.name, grader) in done:
                verdicts[(id(answer), grader)] = done[(answer.problem.id, answer.name, grader)]
    jobs = [(a, g) for a in answers for g in ("test bench", *GRADERS) if (id(a), g) not in verdicts]
    lock = threading.Lock()
    with Progress(console=console, transient=True) as progress, ThreadPoolExecutor(args.jobs) as pool:
        task = progress.add_task(f"{len(answers)} answers x {len(GRADERS) + 1} graders ({len(verdicts)} already)", total=len(jobs))

        def one(job: tuple[Answer, str]) -> None:
            result, seconds = graded(runner, *job)
            with lock:
                verdicts[(id(job[0]), job[1])] = (result, seconds)
                _append_result(args.results, job[0], job[1], result, seconds)
                progress.advance(task)
                finished = int(progress.tasks[0].completed)
                if not console.is_terminal and (finished % 100 == 0 or finished == len(jobs)):
                    console.print(f"{finished}/{len(jobs)} verdicts", highlight=False)

        list(pool.map(one, jobs))

    # The test bench's word: the reference must pass it (else the problem is left out); a
    # mutant it fails is wrong; a mutant it passes is equivalent or in the test bench's hole.
    kept = []
    for answer in answers:
        bench, _ = verdicts[(id(answer), "test bench")]
        if answer.name == REFERENCE and not bench.passed:
            continue
        if answer.name == REFERENCE:
            answer.kind = REFERENCE
        else:
            answer.kind = HIDDEN if bench.passed else WRONG if bench.failure_class in BEHAVIOUR else BUILD
        kept.append(answer)
    left_out = {a.problem.id for a in answers} - {a.problem.id for a in kept if a.kind == REFERENCE}
    kept = [a for a in kept if a.problem.id not in left_out]
    count = defaultdict(int)
    for answer in kept:
        count[answer.kind] += 1
    sources = sorted({a.problem.benchmark for a in kept})
    title = (
        f"{len({a.problem.id for a in kept})} problems ({', '.join(sources)}), {count[REFERENCE]} references, "
        f"{count[WRONG]} wrong answers (their test bench fails the behaviour), {count[HIDDEN]} mutants their test bench "
        f"passes, {count[BUILD]} it rejects unbuilt"
    )
    table = Table(title=title)
    for column in ("grader", "false rewards (wrong passed)", "references failed", f"{HIDDEN}: passed / failed",
                   f"{BUILD}: passed", "undecided or not graded", "s/answer median", "s/answer mean"):
        table.add_column(column, justify="left" if column == "grader" else "right")
    rows: dict[str, Any] = {}
    for grader in GRADERS:
        mine = [(a, *verdicts[(id(a), grader)]) for a in kept]
        false = sum(r.passed for a, r, _ in mine if a.kind == WRONG)
        refs = sum(not r.passed for a, r, _ in mine if a.kind == REFERENCE)
        hidden = [r.passed for a, r, _ in mine if a.kind == HIDDEN]
        unbuilt = sum(r.passed for a, r, _ in mine if a.kind == BUILD)
        undecided = sum(
            r.failure_class in ("unsupported", "harness_error", "undecided")
            or (r.official.get("formal") or {}).get("verdict") == "undecided" for _, r, _ in mine
        )
        seconds = [s for _, _, s in mine]
        rows[grader] = {"false_rewards": false, "wrong": count[WRONG], "references_failed": refs,
                        "references": count[REFERENCE], "hidden_passed": sum(hidden), "hidden": len(hidden),
                        "unbuilt_passed": unbuilt, "unbuilt": count[BUILD],
                        "undecided": undecided, "median_s": statistics.median(seconds), "mean_s": statistics.mean(seconds)}
        table.add_row(
            grader, f"{false} / {count[WRONG]}", f"{refs} / {count[REFERENCE]}", f"{sum(hidden)} / {len(hidden) - sum(hidden)}",
            f"{unbuilt} / {count[BUILD]}", str(undecided), f"{statistics.median(seconds):.3f}", f"{statistics.mean(seconds):.3f}",
        )
    console.print(table)
    if left_out:
        console.print(f"left out (their reference fails their own test bench here): {', '.join(sorted(left_out))}")
    if args.json:
        detail = [
            {"problem": a.problem.id, "answer": a.name, "kind": a.kind,
             **{g: {"passed": verdicts[(id(a), g)][0].passed, "failure_class": verdicts[(id(a), g)][0].failure_class,
                    "seconds": round(verdicts[(id(a), g)][1], 3)} for g in GRADERS}}
            for a in kept
        ]
        Path(args.json).write_text(json.dumps({"summary": rows, "answers": detail}, indent=1) + "\n")
        console.print(f"every answer's verdicts in {args.json}")


if __name__ == "__main__":
    main()
