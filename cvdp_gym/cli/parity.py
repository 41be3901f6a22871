"""``cvdp-gym parity ANSWERS``: our verdicts next to the official runner's or scripts'.

CVDP (``--official-repo DIR``): runs :func:`cvdp_gym.parity.run_parity`. VerilogEval v2/v1
and RTLLM (``--dataset`` naming one, ``--benchmark-dir`` its clone): runs
:func:`cvdp_gym.parity.benchmarks.run_benchmark_parity` on ``references``, ``mutants[:N]``
or a JSONL of answers. Either way: a progress bar, the agreement table per category (for
the benchmarks also pass/fail agreement and where our trusted verdict differs from the
official pass), every disagreement with both sides' reasons and logs, and what was left
out and why (failures of the machine, not verdicts). The exit code is 1 when a verdict
disagrees.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from cvdp_gym.cli._options import JsonOpt, console, fail, load_problems, progress_bar
from cvdp_gym.cli.options import Group, HarnessOptions, ProblemOptions, grouped


@grouped
def parity_command(
    answers: Annotated[str, typer.Argument(help=(
        "'bundled' (the bundled references and known-wrong candidates) or a JSONL of answers: {id, name?, files: {path: text}}; "
        "for VerilogEval/RTLLM also 'references', 'mutants[:N]' (the references and N seeded wrong answers each, default 3) "
        "or lines {id, name?, response: text}."
    ))],
    official_repo: Annotated[Path | None, typer.Option(envvar="CVDP_OFFICIAL_REPO", help="A clone of NVlabs/cvdp_benchmark (its requirements installed for --python); CVDP only.")] = None,
    dataset: Annotated[str, typer.Option(help=(
        "The problems the answers answer: 'bundled', a CVDP .jsonl file, or a benchmark: NAME[:TASK] "
        "(`cvdp-gym benchmarks list`: verilog-eval-v2:spec-to-rtl, rtllm-v2, chipbench, ...) or the path of a copy."
    ))] = "bundled",
    *,
    problems: Annotated[ProblemOptions, Group(only=("benchmark_dir", "lenient"))],
    mutant_seed: Annotated[int, typer.Option(help="Seed of the mutants (ANSWERS mutants[:N]).")] = 0,
    hang_mutants: Annotated[int, typer.Option(help="Zero-delay-loop mutants in all (each costs the official time limit).")] = 3,
    python: Annotated[str | None, typer.Option(help="Python for the official runner (default: the clone's .venv or venv, else this one).")] = None,
    work: Annotated[Path, typer.Option(help="Folder for the official runner's datasets, work folders and logs.")] = Path("runs/parity"),
    threads: Annotated[int, typer.Option(help="The official runner's parallel threads (-t).")] = 2,
    harness: Annotated[HarnessOptions, Group(only=("sandbox", "toolchain", "timeout", "jobs", "seed"))],
    json_out: JsonOpt = None,
) -> None:
    """Run the official CVDP runner and this tool on the same answers; print where the verdicts agree."""
    from cvdp_gym.errors import CvdpGymError
    from cvdp_gym.parity import (
        answers_from_file,
        bundled_answers,
        run_parity,
        summary_json,
    )
    from cvdp_gym.parity.benchmarks import is_benchmark_dataset

    if is_benchmark_dataset(dataset):
        _benchmark_parity(
            answers, dataset=dataset, benchmark_dir=problems.benchmark_dir, work=work, harness=harness,
            mutant_seed=mutant_seed, hang_mutants=hang_mutants, json_out=json_out,
        )
        return
    if official_repo is None:
        raise fail("--official-repo (or CVDP_OFFICIAL_REPO) is needed: a clone of NVlabs/cvdp_benchmark")
    data = load_problems(dataset, None, None, None, problems.lenient)
    if answers == "bundled":
        if dataset != "bundled":
            raise fail("ANSWERS 'bundled' goes with --dataset bundled")
        chosen = bundled_answers(data.problems)
    else:
        try:
            chosen, unknown = answers_from_file(answers, data.problems)
        except CvdpGymError as exc:
            raise fail(str(exc)) from None
        if unknown:
            console.print(f"[yellow]note:[/] {len(unknown)} answer(s) name problems not in {escape(dataset)}: {escape(', '.join(sorted(set(unknown))[:10]))}")
    if not chosen:
        raise fail("no answers to compare")
    runner = harness.runner()
    progress = progress_bar("parity")
    try:
        with progress:
            task = progress.add_task("parity", total=len(chosen), last="")
            rows = run_parity(
                chosen, runner=runner, official_repo=official_repo.resolve(), work=work, python=python,
                threads=threads, jobs=harness.jobs, seed=harness.seed,
                on_step=lambda step: progress.update(task, last=escape(step)),
                on_ours=lambda pid: progress.update(task, advance=1, last=escape(f"here: {pid}")),
            )
    except CvdpGymError as exc:
        raise fail(str(exc)) from None
    summary = summary_json(rows, {"answers": answers, "dataset": dataset, "official_repo": str(official_repo), "sandbox": harness.sandbox})
    _finish(rows, summary, json_out, _print)


def _finish(rows: list, summary: dict, json_out: str | None, show: Callable[[list, dict], None]) -> None:
    """Print the tables (or the JSON on standard output with ``--json -``), write ``--json``,
    and exit 1 when a verdict disagrees."""
    from cvdp_gym.parity import DISAGREE

    if json_out == "-":
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        show(rows, summary)
    if json_out not in (None, "-"):
        Path(json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(json_out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        console.print(f"rows in {escape(json_out)}")
    if any(r.status == DISAGREE for r in rows):
        raise typer.Exit(1)


def _print(rows: list, summary: dict) -> None:
    from cvdp_gym.parity import AGREE, DISAGREE, LEFT_OUT

    table = Table(title="verdict agreement: cvdp-gym vs the official runner")
    for column in ("category", "answers", "agree", "disagree", "left out"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for category, entry in summary["agreement"].items():
        name = f"[bold]{category}[/]" if category == "all" else category
        table.add_row(name, str(entry["answers"]), str(entry[AGREE]), str(entry[DISAGREE]), str(entry[LEFT_OUT]))
    console.print(table)
    medians = summary["median_s"]
    if medians["ours"] is not None:
        console.print(f"median per answer: here {medians['ours']} s, official runner {medians['official']} s")
    differ = [r for r in rows if r.status == DISAGREE]
    for row in differ:
        console.print(
            f"\n[red]disagree[/] {escape(row.answer.problem.id)} / {escape(row.answer.name)}: here {row.ours.verdict} "
            f"({escape(row.ours.reason[:200])}), seed {row.ours.seed}; official {row.official.outcome} ({escape(row.official.reason)})",
            soft_wrap=True,
        )
        if row.randomised:
            console.print(f"  randomised harness: {escape('; '.join(row.randomised))}", soft_wrap=True)
        _print_logs(row)
    _print_left_out(rows)


def _benchmark_parity(
    answers: str, *, dataset: str, benchmark_dir: Path | None, work: Path, harness: HarnessOptions,
    mutant_seed: int, hang_mutants: int, json_out: str | None,
) -> None:
    """VerilogEval/RTLLM: the benchmark's own scripts from its clone vs our flows."""
    from cvdp_gym.errors import CvdpGymError
    from cvdp_gym.parity.benchmarks import benchmark_answers, clone_for, run_benchmark_parity
    from cvdp_gym.parity.benchmarks.rows import benchmark_summary_json

    data = load_problems(dataset, None, None, None, False, benchmark_dir=benchmark_dir)
    try:
        clone = clone_for(dataset, benchmark_dir)
        chosen, unknown = benchmark_answers(answers, data.problems, seed=mutant_seed, hangs=hang_mutants)
    except CvdpGymError as exc:
        raise fail(str(exc)) from None
    if unknown:
        console.print(f"[yellow]note:[/] {len(unknown)} answer(s) name problems not in {escape(dataset)}: {escape(', '.join(sorted(set(unknown))[:10]))}")
    if not chosen:
        raise fail("no answers to compare")
    runner = harness.runner()
    progress = progress_bar("parity")
    try:
        with progress:
            here = progress.add_task("here", total=len(chosen), last="")
            theirs = progress.add_task("official", total=len(chosen), last="")
            rows = run_benchmark_parity(
                chosen, runner=runner, clone=clone, work=work, jobs=harness.jobs, seed=harness.seed,
                on_step=lambda step: progress.update(here, last=escape(step)),
                on_ours=lambda pid: progress.update(here, advance=1, last=escape(pid)),
                on_official=lambda pid: progress.update(theirs, advance=1, last=escape(pid)),
            )
    except CvdpGymError as exc:
        raise fail(str(exc)) from None
    meta = {"answers": answers, "dataset": dataset, "benchmark_dir": str(clone), "sandbox": harness.sandbox, "mutant_seed": mutant_seed}
    summary = benchmark_summary_json(rows, meta)
    _finish(rows, summary, json_out, _print_benchmark)


def _print_benchmark(rows: list, summary: dict) -> None:
    from cvdp_gym.parity import AGREE, DISAGREE, LEFT_OUT

    table = Table(title="agreement: cvdp-gym's flows vs the benchmark's own scripts")
    for column in ("category", "answers", "agree", "disagree", "left out", "pass/fail agree", "verdict != official"):
        table.add_column(column, justify="left" if column == "category" else "right")
    pass_fail = summary["pass_fail"]
    for category, entry in summary["agreement"].items():
        name = f"[bold]{category or '-'}[/]" if category == "all" else (category or "-")
        extra = pass_fail.get(category, {"compared": 0, "pass_agree": 0, "verdict_differs": 0})
        table.add_row(
            name, str(entry["answers"]), str(entry[AGREE]), str(entry[DISAGREE]), str(entry[LEFT_OUT]),
            f"{extra['pass_agree']}/{extra['compared']}", str(extra["verdict_differs"]),
        )
    console.print(table)
    medians = summary["median_s"]
    if medians["ours"] is not None:
        console.print(f"median per answer: here {medians['ours']} s, the benchmark's scripts {medians['official']} s (amortised over a run)")
    for row in rows:
        if row.status != DISAGREE and not row.verdict_differs:
            continue
        what = "[red]disagree[/]" if row.status == DISAGREE else "[yellow]verdict != official pass[/]"
        console.print(
            f"\n{what} {escape(row.answer.problem.id)} / {escape(row.answer.name)}: here {escape(str(row.ours_reading))} "
            f"(verdict {row.ours.verdict}: {escape(row.ours.reason[:200])}); theirs {escape(str(row.theirs_reading))} "
            f"({escape(row.official.reason)})",
            soft_wrap=True,
        )
        if row.answer.problem.defect:
            console.print(f"  known defect: {escape(row.answer.problem.defect)}", soft_wrap=True)
        _print_logs(row)
    _print_left_out(rows)


def _print_logs(row: Any) -> None:
    """A disagreeing row's logs: where the official ones are, and both tails."""
    console.print(f"  official logs: {escape(', '.join(row.official.logs) or '-')}", soft_wrap=True)
    console.print(f"  here, log tail:\n{escape(row.ours.log_tail[-1500:])}", soft_wrap=True, highlight=False)
    console.print(f"  official, log tail:\n{escape(row.official.log_tail[-1500:])}", soft_wrap=True, highlight=False)


def _print_left_out(rows: Sequence[Any]) -> None:
    """The answers left out of the comparison, and why (they are not verdicts)."""
    from cvdp_gym.parity import LEFT_OUT

    left = [r for r in rows if r.status == LEFT_OUT]
    if left:
        why = Table(title=f"left out of the comparison: {len(left)} (not verdicts)")
        for column in ("problem", "answer", "why"):
            why.add_column(column, overflow="fold")
        for row in left:
            why.add_row(escape(row.answer.problem.id), escape(row.answer.name), escape(row.why_left_out))
        console.print(why)
