"""``cvdp-gym audit DATASET``: how many seeded wrong answers each problem's own test bench catches.

The command parses options, shows progress and prints the tables; making and grading the
mutants is :mod:`cvdp_gym.audit.run`, the figures :mod:`cvdp_gym.audit.report`. Every run is
appended to ``OUT/audit.jsonl`` as it finishes (``--resume`` grades only the rest); the
report is written to ``OUT/audit.json``, ``audit.md`` and ``audit.html``. Ctrl-C stops at
once: what finished stays, the command that resumes is printed, and the exit code is 130.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cvdp_gym.cli._options import DatasetArg, ResumeOpt, console, fail, progress_bar
from cvdp_gym.cli.check import _check_interrupted, _resume_command
from cvdp_gym.cli.options import Group, HarnessOptions, ProblemOptions, grouped


@grouped
def audit_command(
    ctx: typer.Context,
    dataset: DatasetArg,
    *,
    problems: Annotated[ProblemOptions, Group(only=("benchmark_dir", "ids", "lenient"))],
    mutants: Annotated[int, typer.Option("--mutants", "-k", help="Seeded single-site behaviour mutants per problem (at most).")] = 10,
    seed: Annotated[int, typer.Option(help="Seed of the mutants, and of the harnesses that draw at random.")] = 0,
    harness: Annotated[HarnessOptions, Group(only=("jobs", "timeout", "sandbox", "toolchain"), timeout=60.0)],
    out: Annotated[Path, typer.Option(help="Folder for audit.jsonl (written as runs finish), audit.json, audit.md and audit.html.")] = Path("runs/audit"),
    resume: ResumeOpt = False,
) -> None:
    """Measure each problem's test bench: seeded mutants of its reference it fails, once the equivalent ones are dropped."""
    from cvdp_gym.audit import plan, run_audit, summarize, tables, write_reports
    from cvdp_gym.audit.report import notes
    from cvdp_gym.check import CheckInterrupted
    from cvdp_gym.jsonl import JsonlError

    if mutants < 1:
        raise fail("--mutants must be at least 1")
    jobs, timeout, benchmark_dir = harness.jobs, harness.timeout, problems.benchmark_dir
    if jobs < 1:
        raise fail("--jobs must be at least 1")
    if seed < 0:
        raise fail("--seed must be at least 0")
    if out.exists() and not out.is_dir():
        raise fail(f"--out {out}: not a folder")
    data = problems.load(dataset)
    subjects, skipped = plan(data.problems, mutants, seed)
    if not subjects:
        why = "; ".join(sorted({w for _, w in skipped})) or "the selection is empty"
        raise fail(f"no problem of {dataset} can be audited ({why})")
    runner = harness.runner()
    start = time.monotonic()
    progress = progress_bar("audit")
    try:
        with progress:
            task = progress.add_task("audit", total=0, last="")
            audited = run_audit(
                subjects, runner, out=out, jobs=jobs, resume=resume, seed=seed,
                on_planned=lambda n: progress.update(task, total=(progress.tasks[0].total or 0) + n),
                on_done=lambda o: progress.update(task, advance=1, last=escape(f"{o.problem_id}/{o.name}: {o.result.verdict}")),
            )
    except CheckInterrupted as stop:
        _check_interrupted(stop, out / "audit.jsonl", _resume_command(ctx))
    except JsonlError as exc:  # --resume with a results file we cannot read
        raise fail(str(exc)) from None
    meta = {
        "dataset": dataset, "source": data.source, "benchmark_dir": str(benchmark_dir) if benchmark_dir else None,
        "mutants_per_problem": mutants, "seed": seed, "timeout_s": timeout,
        "sandbox": harness.sandbox, "toolchain": harness.toolchain or "root", "jobs": jobs, "wall_s": round(time.monotonic() - start, 1),
    }
    report = summarize(audited, skipped, meta)
    paths = write_reports(report, out)
    for title, columns, rows in tables(report):
        shown = Table(title=title)
        for i, column in enumerate(columns):
            shown.add_column(escape(column), justify="left" if i == 0 or i == len(columns) - 1 else "right", overflow="fold")
        for cells in rows:
            shown.add_row(*(escape(c) for c in cells))
        if rows:
            console.print(shown)
    for line in notes(report):
        console.print(line, style="dim", markup=False, highlight=False)
    console.print(f"report in {escape(str(paths['markdown']))}, {escape(str(paths['html']))} and {escape(str(paths['json']))}", soft_wrap=True)

