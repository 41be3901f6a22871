"""``cvdp-gym decontaminate TRAIN --against BENCH...``: which training items are near-copies
of evaluation problems, and the training set without them.

Prints the flagged items (training id, nearest evaluation problem, scores, why) and a text
histogram of every item's nearest specification ROUGE-L; with ``--out DIR`` writes
``report.md`` (the counts, the histogram, the flagged items, the closest pairs side by side),
``nearest_rouge_l.png`` (where matplotlib is installed), ``decontamination.json`` (every
item's nearest problems and scores) and the filtered training set (``<name>.clean.jsonl``:
the lines of each JSONL file the items were read from, less the flagged ones; else
``kept_ids.jsonl``). The logic is
:mod:`cvdp_gym.decontaminate`; this module parses options and prints.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from cvdp_gym.cli._options import BenchmarkDirOpt, JsonOpt, console, fail, progress_bar
from cvdp_gym.cli.options import Group, grouped

if TYPE_CHECKING:
    from cvdp_gym.data import Problem
    from cvdp_gym.decontaminate import ItemResult, Thresholds

#: Rows of the flagged table printed (every one is in the report and the JSON).
TABLE_ROWS = 50
#: Training sets at least this large are searched by several processes when --processes is not given.
PARALLEL_FROM = 2000


@dataclass(frozen=True)
class ThresholdOptions:
    """When a training item counts as a near-copy: a preset, and any threshold given over it."""

    preset: Annotated[str, typer.Option(help="Thresholds to start from: default (specification ROUGE-L > 0.5, code ROUGE-L > 0.8, 10-gram overlap > 0.5) or codev-r1 (specification ROUGE-L > 0.5 only).")] = "default"
    rouge_l: Annotated[float | None, typer.Option("--rouge-l", min=0.0, max=1.0, help="Flag a specification ROUGE-L above this (1: off).")] = None
    code_rouge_l: Annotated[float | None, typer.Option("--code-rouge-l", min=0.0, max=1.0, help="Flag a reference-code ROUGE-L above this (1: off).")] = None
    ngram: Annotated[int | None, typer.Option(min=1, help="n of the word n-grams (specification words, code tokens).")] = None
    ngram_overlap: Annotated[float | None, typer.Option(min=0.0, max=1.0, help="Flag when the item has more than this share of an evaluation problem's n-grams (1: off).")] = None

    def thresholds(self) -> Thresholds:
        """The preset with the thresholds given over it (``ConfigError`` for an unknown preset)."""
        from cvdp_gym.decontaminate import thresholds_for

        return thresholds_for(
            self.preset, spec_rouge_l=self.rouge_l, code_rouge_l=self.code_rouge_l, ngram=self.ngram, ngram_overlap=self.ngram_overlap,
        )


@grouped
def decontaminate_command(
    train: Annotated[str, typer.Argument(help="The training set: anything `--dataset` takes (a JSONL file, a training-set spec, 'bundled', a benchmark).")],
    against: Annotated[list[str], typer.Option("--against", help="An evaluation dataset (repeatable): 'bundled', CVDP .jsonl files, 'hf[:PATTERN]', a benchmark by name (`cvdp-gym benchmarks list`: verilog-eval-v2, rtllm-v2, chipbench, ...) or the path of a copy.")],
    thresholds_given: Annotated[ThresholdOptions, Group()],
    nearest: Annotated[int, typer.Option(min=1, help="Nearest evaluation problems reported per item.")] = 3,
    exact_above: Annotated[float | None, typer.Option(min=0.0, max=1.0, help="Nearest ROUGE-L scores above this (or above the flagging threshold, if lower) are exact; below it, the nearest of the 32 most promising candidates (0: all exact, slower).")] = None,
    processes: Annotated[int | None, typer.Option(min=1, help=f"Processes that search (default: 1, or the CPUs up to 8 from {PARALLEL_FROM} items).")] = None,
    out: Annotated[Path | None, typer.Option(help="Folder for report.md, the histogram, decontamination.json and the filtered training set.")] = None,
    worst: Annotated[int, typer.Option(min=0, help="Closest pairs shown side by side in report.md.")] = 10,
    benchmark_dir: BenchmarkDirOpt = None,
    json_out: JsonOpt = None,
) -> None:
    """Find training items that are near-copies of evaluation problems; write the training set without them."""
    from cvdp_gym.decontaminate import (
        EvaluationIndex,
        decontaminate,
        evaluation_problems,
    )
    from cvdp_gym.errors import ConfigError, CvdpGymError

    try:
        thresholds = thresholds_given.thresholds()
    except ConfigError as exc:
        raise fail(str(exc)) from None
    quiet = json_out == "-"
    try:
        with _status("loading the datasets", quiet):
            training = _load_training(train, benchmark_dir)
            evaluation = evaluation_problems(against, benchmark_dir=benchmark_dir)
        with _status(f"indexing {len(evaluation)} evaluation problems", quiet):
            index = EvaluationIndex(evaluation, thresholds.ngram)
    except (CvdpGymError, OSError) as exc:
        raise fail(str(exc)) from None
    count = processes or (min(8, os.cpu_count() or 1) if len(training) >= PARALLEL_FROM else 1)
    progress = progress_bar("decontaminate")
    progress.disable = quiet
    with progress:
        task = progress.add_task("decontaminate", total=len(training), last="")
        results = decontaminate(
            training, index, thresholds, nearest=nearest, exact_above=exact_above, processes=count,
            on_item=lambda r: progress.update(task, advance=1, last=escape(r.training_id) if r.flagged else ""),
        )
    training_by_id = {p.id: p for p in training}
    evaluation_by_id = {p.id: p for p in evaluation}
    try:
        written = _write(out, train, against, results, training_by_id, evaluation_by_id, thresholds, worst) if out else {}
        if json_out is not None:
            text = json.dumps(_json(train, against, thresholds, results, written), indent=2) + "\n"
            if quiet:
                sys.stdout.write(text)
                return
            Path(json_out).write_text(text, encoding="utf-8")
            written["json"] = Path(json_out)
    except OSError as exc:
        raise fail(f"{exc.filename or out}: {exc.strerror or exc}") from None
    _print(train, results, thresholds, len(evaluation), written)


def _status(text: str, quiet: bool) -> AbstractContextManager[Any]:
    """A spinner while ``text`` happens (nothing where standard output is the JSON)."""
    return nullcontext() if quiet else console.status(text, spinner="dots")


def _load_training(spec: str, benchmark_dir: Path | None) -> list[Problem]:
    from cvdp_gym.data import load_dataset
    from cvdp_gym.errors import DatasetError

    dataset = load_dataset(spec, include_unsupported=True, benchmark_dir=benchmark_dir)
    if not dataset.problems:
        raise DatasetError(f"{spec}: no training items")
    return dataset.problems


def _write(
    out: Path, train: str, against: list[str], results: list[ItemResult], training: dict[str, Problem],
    evaluation: dict[str, Problem], thresholds: Thresholds, worst: int,
) -> dict[str, Path]:
    from cvdp_gym.decontaminate.report import histogram_png, markdown_report, write_filtered

    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    png = out / "nearest_rouge_l.png"
    spec_threshold = thresholds.spec_rouge_l if thresholds.spec_rouge_l < 1 else None
    if histogram_png([r.nearest_spec_rouge_l for r in results], png, spec_threshold):
        written["histogram"] = png
    report = markdown_report(results, training, evaluation, thresholds, title=f"{train} against {', '.join(against)}",
                             worst=worst, png=png.name if "histogram" in written else None)
    written["report"] = out / "report.md"
    written["report"].write_text(report, encoding="utf-8")
    written["results"] = out / "decontamination.json"
    written["results"].write_text(json.dumps(_json(train, against, thresholds, results, {}), indent=2) + "\n", encoding="utf-8")
    for number, path in enumerate(write_filtered(results, training, out)):
        written["filtered" if number == 0 else f"filtered {number + 1}"] = path
    return written


def _json(train: str, against: list[str], thresholds: Thresholds, results: list[ItemResult], written: dict[str, Path]) -> dict[str, Any]:
    flagged = sum(r.flagged for r in results)
    return {"training": train, "against": against, "thresholds": thresholds.to_json(),
            "items": len(results), "flagged": flagged, "kept": len(results) - flagged,
            "files": {name: str(path) for name, path in written.items()}, "results": [r.to_json() for r in results]}


def _print(train: str, results: list[ItemResult], thresholds: Thresholds, evaluation_count: int, written: dict[str, Path]) -> None:
    from cvdp_gym.decontaminate.report import score_text, text_histogram

    flagged = [r for r in results if r.flagged]
    table = Table(title=f"cvdp-gym decontaminate: {escape(train)}: {len(flagged)} of {len(results)} flagged against {evaluation_count} evaluation problems")
    for column in ("training item", "nearest evaluation problem", "spec ROUGE-L", "code ROUGE-L", f"spec {thresholds.ngram}-gram", f"code {thresholds.ngram}-gram", "why"):
        table.add_column(column, overflow="fold")
    for result in flagged[:TABLE_ROWS]:
        match = result.nearest[0]
        table.add_row(escape(result.training_id), escape(match.evaluation_id), *(score_text(s) for s in (
            match.spec_rouge_l, match.code_rouge_l, match.spec_ngram_overlap, match.code_ngram_overlap)),
            escape(result.reasons[0] + (f" (+{len(result.reasons) - 1} more)" if len(result.reasons) > 1 else "")))
    if flagged:
        console.print(table)
        if len(flagged) > TABLE_ROWS:
            console.print(f"... and {len(flagged) - TABLE_ROWS} more (every one in report.md and the JSON)")
    else:
        console.print(f"[green]no training item flagged[/] ({len(results)} items against {evaluation_count} evaluation problems)")
    console.print(f"flagged when: {thresholds.describe()}")
    spec_threshold = thresholds.spec_rouge_l if thresholds.spec_rouge_l < 1 else None
    console.print("nearest-neighbour specification ROUGE-L (items):")
    console.print(escape(text_histogram([r.nearest_spec_rouge_l for r in results], spec_threshold)), highlight=False)
    for name, path in written.items():
        console.print(f"{name}: {escape(str(path))}", soft_wrap=True)
