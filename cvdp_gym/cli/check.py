"""``cvdp-gym check``: run every problem's reference solution (and known-wrong candidates) and
compare the verdicts with the expected ones.

The command only parses options, shows progress and prints the table; building and running
the jobs is :mod:`cvdp_gym.check`. Ctrl-C stops at once: what finished stays in ``--out``,
the command that resumes is printed, and the exit code is 130.
"""

from __future__ import annotations

import os
import shlex
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cvdp_gym.cli._options import (
    DatasetArg,
    ResumeOpt,
    console,
    executor_option,
    fail,
    progress_bar,
    repos_note,
)
from cvdp_gym.cli.options import Group, HarnessOptions, ProblemOptions, grouped
from cvdp_gym.data.problems import REFERENCE_GRADER

if TYPE_CHECKING:
    from cvdp_gym.check import CheckInterrupted

#: After Ctrl-C, how long a run whose sandbox is killed may take to clean up before we exit anyway.
CLEANUP_GRACE_S = 5.0


@grouped
def check_command(
    ctx: typer.Context,
    dataset: DatasetArg = "bundled",
    *,
    candidates: Annotated[Path | None, typer.Option(help="JSONL of extra candidates: {id, name, files, expected}.")] = None,
    with_bundled_candidates: Annotated[bool, typer.Option("--bundled-candidates/--no-bundled-candidates", help="For the bundled set, also run its known-wrong candidates.")] = True,
    problems: Annotated[ProblemOptions, Group(only=("benchmark_dir", "ids", "category", "difficulty", "lenient"))],
    harness: Annotated[HarnessOptions, Group(only=("sandbox", "toolchain", "timeout", "executor", "jobs", "repos", "seed", "seeds"), jobs=1, seeds=3)],
    out: Annotated[Path, typer.Option(help="Results JSONL, written as runs finish.")] = Path("runs/check.jsonl"),
    resume: ResumeOpt = False,
) -> None:
    """Run every problem's reference solution (and candidates) and report the verdicts."""
    from cvdp_gym.check import CheckInterrupted, build_jobs, load_candidates, run_jobs
    from cvdp_gym.data import DatasetError
    from cvdp_gym.data.bundle import bundled_candidates
    from cvdp_gym.jsonl import JsonlError

    data = problems.load(dataset)
    extra: list = []
    if dataset == "bundled" and with_bundled_candidates:
        extra.extend(bundled_candidates())
    if candidates is not None:
        try:
            extra.extend(load_candidates(candidates))
        except DatasetError as exc:
            raise fail(str(exc)) from None
    job_list = build_jobs(data, extra)
    runner = harness.runner()
    heavy = repos_note(data.problems, runner)
    if heavy:
        console.print(f"[yellow]note:[/] {escape(heavy)}", soft_wrap=True)
    jobs = harness.jobs
    pool = executor_option(harness.executor, jobs)
    if pool is not None:
        jobs = max(jobs, pool.capacity)
    if harness.seeds < 1:
        raise fail("--seeds must be at least 1")

    progress = progress_bar("check")
    try:
        with progress:
            task = progress.add_task("check", total=len(job_list), last="")
            outcomes = run_jobs(
                job_list,
                runner,
                jobs_parallel=jobs,
                out_path=out,
                resume=resume,
                on_done=lambda o: progress.update(task, advance=1, last=escape(f"{o.problem_id}/{o.name}: {o.result.verdict}")),
                executor=pool,
                seed=harness.seed,
                seeds=harness.seeds,
            )
    except CheckInterrupted as stop:
        _check_interrupted(stop, out, _resume_command(ctx))
    except JsonlError as exc:  # --resume with a results file we cannot read
        raise fail(str(exc)) from None
    finally:
        if pool is not None:
            pool.close()

    table = Table(title=f"cvdp-gym check: {data.source} ({len(outcomes)} runs)")
    for column in ("problem", "candidate", "verdict", "expected", "tests", "seed", "time (s)", "reason"):
        table.add_column(column, overflow="fold")
    for o in outcomes:
        r = o.result
        tests = f"{r.tests.passed}/{r.tests.total}" if r.tests.total else "-"
        style = "yellow" if o.labelled_defect and not r.passed else "green" if o.matches else "red"
        verdict = f"[{style}]{r.verdict}[/]" + (" [yellow]flaky[/]" if o.flaky else "")
        verdict += " (labelled defect)" if o.labelled_defect and not r.passed else ""
        seeds_shown = ", ".join(f"{v['seed']}: {v['verdict']}" for v in o.seed_verdicts) if o.flaky else ("-" if r.seed is None else str(r.seed))
        table.add_row(
            o.problem_id, o.name, verdict, o.expected, tests, escape(seeds_shown), f"{r.wall_s:.2f}", r.reason[:120]
        )
    console.print(table)
    _print_comprehension(data)
    _print_consistency(data, outcomes)
    _print_training(data, outcomes)
    mismatches = [o for o in outcomes if not o.matches]
    flaky = [o for o in outcomes if o.flaky]
    refs = [o for o in outcomes if o.name == "reference"]
    times = [o.result.wall_s for o in refs if o.result.passed]
    passed = sum(o.result.passed for o in refs)
    console.print(
        f"references passed: {passed}/{len(refs)}{_interval(passed, len(refs))}; "
        f"verdicts as expected: {len(outcomes) - len(mismatches)}/{len(outcomes)}"
        + (f"; median reference time {statistics.median(times):.2f} s" if times else "")
        + (f"; [yellow]flaky[/] (verdict changes with the seed): {len(flaky)}" if flaky else "")
        + f"; results in {out}"
    )
    if mismatches:
        raise typer.Exit(1)


def _print_consistency(data, outcomes: list) -> None:
    """A benchmark's own files against each other (``cvdp_gym.check.consistency``), and its labelled
    defects: found again here, or not."""
    from cvdp_gym.check.consistency import findings

    problems = [p for p in data.problems if p.flow is not None and p.grader != REFERENCE_GRADER]
    if not problems:
        return
    failed = {o.problem_id: o.result for o in outcomes if o.name == "reference" and not o.result.passed}
    table = Table(title="benchmark defects: its own files disagree, or its own reference fails here")
    for column in ("problem", "labelled", "found here"):
        table.add_column(column, overflow="fold")
    unlabelled = confirmed = 0
    for problem in problems:
        found = findings(problem)
        if problem.id in failed:
            found.append(f"its reference fails: {failed[problem.id].verdict}: {failed[problem.id].reason[:160]}")
        if not found and not problem.defect:
            continue
        unlabelled += bool(found) and not problem.defect
        confirmed += bool(found) and bool(problem.defect)
        labelled = escape(problem.defect) if problem.defect else "[red]no[/]"
        table.add_row(escape(problem.id), labelled, escape("; ".join(found)) if found else "[yellow]not found again[/]")
    if table.row_count:
        console.print(table)
    labels = sum(p.defect is not None for p in problems)
    console.print(
        f"benchmark defects: {labels} labelled ({confirmed} found again here), {unlabelled} found but not labelled"
        " (a labelled problem is graded and counted in the official figure; a failure there is never the answer's)"
    )


def _print_training(data, outcomes: list) -> None:
    """A training set's references against themselves and their broken copies, and a note for
    sets whose references nobody checked (``cvdp_gym.check.training_notes``)."""
    from cvdp_gym.check import training_notes

    for line in training_notes(data.problems, outcomes):
        note = line.startswith("note: ")
        console.print(("[yellow]note:[/] " if note else "") + escape(line.removeprefix("note: ")), soft_wrap=True)


def _interval(passed: int, total: int) -> str:
    """`` (95% CI a–b%)``: Wilson over the references (one per problem; see cvdp_gym.eval.intervals)."""
    from cvdp_gym.eval.intervals import wilson

    if not total:
        return ""
    low, high = wilson(passed / total, total)
    return f" (95% CI {100 * low:.1f}–{100 * high:.1f}%)"


def _print_comprehension(data) -> None:
    """The comprehension references scored against themselves (not counted as mismatches:
    their golden score is what the official tool's would be, 1.0 or not)."""
    from cvdp_gym.check import comprehension_checks

    checks = comprehension_checks(data)
    if not checks:
        return
    table = Table(title=f"comprehension references scored against themselves ({len(checks)}; official golden mode)")
    for column in ("problem", "category", "BLEU-2", "ROUGE-2", "verdict", "credit", "as JSON answer", "note"):
        table.add_column(column, overflow="fold")
    for c in checks:
        golden, answer = c.golden, c.as_answer
        cells = [f"{golden.scores[k]:.3f}" if k in golden.scores else "-" for k in ("bleu", "rouge")]
        verdict = "passed" if golden.passed else (golden.failure_class or "failed")
        credit = "-" if golden.credit is None else f"{golden.credit:.3f}"
        as_answer = "-" if answer.credit is None else f"{answer.credit:.3f}" + ("" if answer.passed else f" ({answer.failure_class})")
        table.add_row(c.problem_id, c.category, *cells, verdict, credit, as_answer, c.note)
    console.print(table)
    scored = [c for c in checks if c.golden.scoring == "bleu"]
    console.print(
        f"comprehension references passing their own BLEU/ROUGE-2 scoring: {sum(c.golden.passed for c in scored)}/{len(scored)}; "
        f"{len(checks) - len(scored)} judge problem(s) not judged (check asks no judge)"
    )


def _resume_command(ctx: typer.Context) -> str:
    """The command that continues this run: every option given (or not at its default), then --resume.

    Built from the parsed parameters rather than ``sys.argv``, so it is the same however
    the command was started (console script, ``python -m``, a test runner). Parameters
    are read by duck typing: typer ships its own copy of click's classes.
    """
    words = ["cvdp-gym", ctx.info_name or "check"]
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        kind = getattr(param, "param_type_name", "")
        if kind == "argument":
            words.append(str(value))
            continue
        if kind != "option" or param.name == "resume" or value is None:
            continue
        if value == param.default and param.name != "out":
            continue
        flag = max(param.opts, key=len)
        if getattr(param, "is_flag", False):
            words.append(flag if value else max(param.secondary_opts, key=len))
        elif param.multiple:
            for item in value:
                words += [flag, str(item)]
        else:
            words += [flag, str(value)]
    return shlex.join([*words, "--resume"])


def _check_interrupted(stop: CheckInterrupted, out: Path, command: str) -> None:
    """Say what was kept and how to go on, then exit 130 (the shell's code for Ctrl-C)."""
    console.print(
        f"[yellow]interrupted:[/] {len(stop.finished)} run(s) finished and are in {escape(str(out))}; "
        f"{stop.unfinished} cancelled or killed",
        soft_wrap=True,
    )
    console.print(f"resume with: {escape(command)}", soft_wrap=True, highlight=False)
    # Normally every run has stopped by now. One still cleaning up (its sandbox is already
    # killed) would hold the exit, as the pool joins its threads: give it a few seconds to
    # remove its run folder and cgroups, then leave without it.
    if stop.stuck and stop.settle(CLEANUP_GRACE_S):
        console.print(f"[yellow]note:[/] {stop.stuck} run(s) still cleaning up; exiting without them")
        console.file.flush()
        sys.stderr.flush()
        os._exit(130)
    raise typer.Exit(130)
