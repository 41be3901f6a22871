"""Decontamination speed: training items per second against ~1,200 evaluation problems.

The evaluation set is synthetic unless ``--against`` names real ones (anything
``load_dataset`` reads: a VerilogEval or RTLLM clone, a CVDP file): 1,200 problems whose
specifications have 40 to 2,500 words drawn from a 5,000-word vocabulary with Zipf
frequencies (so common words make the token bound loose, as in English) and whose
reference modules have 2 to 60 statements. Training sets of 1,000 and 10,000 items are
drawn the same way, 1% of them planted near-copies of evaluation problems (one word in
eight changed, signals renamed). For each training-set size and each threshold setting,
side by side, it prints items per second (index building excluded, shown once) and the
flagged items, with 1 and 2 processes; and items per CPU-second (this process's and its
children's), the figure a shared machine's other load does not change.

  python scripts/bench_decontaminate.py [--sizes 1000,10000] [--processes 1,2] [--against SPEC ...]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from cvdp_gym.data.problems import Problem  # noqa: E402
from cvdp_gym.decontaminate import (  # noqa: E402
    EvaluationIndex,
    decontaminate,
    evaluation_problems,
    thresholds_for,
)

SETTINGS = {
    "codev-r1 (spec ROUGE-L > 0.5)": thresholds_for("codev-r1"),
    "default (10-grams)": thresholds_for("default"),
    "default, 5-grams": thresholds_for("default", ngram=5),
    "default, 13-grams": thresholds_for("default", ngram=13),
}
SYLLABLES = ["ka", "lo", "mi", "re", "su", "ta", "ne", "po", "di", "va", "ro", "xe", "ul", "an", "ir", "et"]
OPERATORS = ["+", "-", "&", "|", "^", "<<", ">>", "==", "!="]


def vocabulary(rng: random.Random, size: int = 5000) -> tuple[list[str], list[float]]:
    words = sorted({"".join(rng.choices(SYLLABLES, k=rng.randint(1, 4))) for _ in range(size * 3)})[:size]
    rng.shuffle(words)
    return words, [1.0 / (rank + 1) ** 1.1 for rank in range(len(words))]


def specification(rng: random.Random, words: tuple[list[str], list[float]]) -> str:
    length = int(min(2500, max(40, rng.lognormvariate(5.3, 0.8))))
    return " ".join(rng.choices(words[0], weights=words[1], k=length))


def module(rng: random.Random, words: list[str], name: str) -> str:
    signals = rng.sample(words, 8)
    ports = ",\n".join(f"  {'input' if i < 5 else 'output reg'} [{rng.randint(0, 31)}:0] {s}" for i, s in enumerate(signals))
    body = []
    for _ in range(int(min(60, max(2, rng.lognormvariate(2.5, 0.8))))):
        a, b, q = rng.choice(signals[:5]), rng.choice(signals[:5]), rng.choice(signals[5:])
        if rng.random() < 0.5:
            body.append(f"  always @(posedge clk) if ({a} {rng.choice(OPERATORS)} {rng.randint(0, 255)}) {q} <= {b};")
        else:
            body.append(f"  always @(*) {q} = {a} {rng.choice(OPERATORS)} {b}; // step {rng.randint(0, 99)}")
    return f"module {name} (\n  input clk,\n{ports}\n);\n" + "\n".join(body) + "\nendmodule\n"


def problem(identifier: str, spec: str, code: str, benchmark: str) -> Problem:
    return Problem(id=identifier, categories=(), agentic=False, prompt=spec, context={}, targets=("top.sv",),
                   harness={}, reference={"top.sv": code}, benchmark=benchmark)


def near_copy(rng: random.Random, original: Problem, words: list[str], identifier: str) -> Problem:
    spec = [w if rng.random() > 0.125 else rng.choice(words) for w in original.prompt.split()]
    code = next(iter((original.reference or {}).values()))
    for old in set(code.split()) & set(words):
        code = code.replace(old, f"{old}_r")
    return problem(identifier, " ".join(spec), code, "bench-train")


def synthetic(rng: random.Random, words: tuple[list[str], list[float]], count: int, prefix: str, benchmark: str) -> list[Problem]:
    return [problem(f"{prefix}{i:05d}", specification(rng, words), module(rng, words[0], f"m{i}"), benchmark) for i in range(count)]


def training_set(rng: random.Random, words: tuple[list[str], list[float]], size: int, evaluation: list[Problem]) -> list[Problem]:
    items = synthetic(rng, words, size, "train.", "bench-train")
    for i in rng.sample(range(size), max(1, size // 100)):
        items[i] = near_copy(rng, rng.choice(evaluation), words[0], items[i].id)
    return items


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the searching processes): on a
    shared machine, items per CPU-second is the figure that does not depend on the others' load."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="training-set sizes, comma-separated")
    parser.add_argument("--processes", default="1,2", help="counts of searching processes, comma-separated")
    parser.add_argument("--against", action="append", help="real evaluation datasets instead of the synthetic 1,200")
    parser.add_argument("--evaluation-size", type=int, default=1200)
    args = parser.parse_args()
    rng = random.Random(29)
    words = vocabulary(rng)
    evaluation = evaluation_problems(args.against) if args.against else synthetic(rng, words, args.evaluation_size, "eval.", "bench-eval")
    console = Console()
    sizes = [int(s) for s in args.sizes.split(",")]
    process_counts = [int(p) for p in args.processes.split(",")]
    trainings = {size: training_set(rng, words, size, evaluation) for size in sizes}
    table = Table(title=f"decontaminate against {len(evaluation)} evaluation problems: items/s, items/CPU-s (flagged / planted)")
    table.add_column("thresholds")
    table.add_column("processes", justify="right")
    for size in sizes:
        table.add_column(f"{size:,} items", justify="right")
    indexes: dict[int, EvaluationIndex] = {}
    for label, thresholds in SETTINGS.items():
        if thresholds.ngram not in indexes:
            start = time.perf_counter()
            indexes[thresholds.ngram] = EvaluationIndex(evaluation, thresholds.ngram)
            console.print(f"index of {len(evaluation)} problems, {thresholds.ngram}-grams: {time.perf_counter() - start:.2f} s")
        for processes in process_counts:
            cells = []
            for size in sizes:
                start, cpu_start = time.perf_counter(), cpu_seconds()
                results = decontaminate(trainings[size], indexes[thresholds.ngram], thresholds, processes=processes)
                seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
                flagged = sum(r.flagged for r in results)
                cells.append(f"{size / seconds:,.0f}/s, {size / cpu:,.0f}/CPU-s ({flagged} / {max(1, size // 100)})")
            table.add_row(label, str(processes), *cells)
    console.print(table)


if __name__ == "__main__":
    main()
