"""``cvdp-gym compare``: eval runs against the first (the baseline), problem by problem.

Only reads and prints; the comparison itself is :mod:`cvdp_gym.eval.compare`. A run folder
that cannot be read (no results.jsonl, a malformed line, rows of another version) is one
``error:`` line naming the file, exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cvdp_gym.cli._options import console, fail


def compare_command(
    runs: Annotated[list[Path], typer.Argument(help="Folders `cvdp-gym eval --out` wrote; the first is the baseline.", show_default=False)],
    out: Annotated[Path | None, typer.Option(help="Folder for compare.json and compare.md (default: print only).")] = None,
    seed: Annotated[int, typer.Option("--bootstrap-seed", help="Seed of the paired bootstrap (the same runs and seed give the same interval).")] = 0,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples of the problems.")] = 10_000,
) -> None:
    """Compare eval runs with the first: wins, losses, the paired pass@1 difference (95% interval, exact p), flipped problems."""
    from cvdp_gym.errors import RunDirError
    from cvdp_gym.eval.compare import compare_runs, read_run, write_comparison

    if len(runs) < 2:
        raise fail("compare needs at least two run folders (the first is the baseline)")
    if resamples < 1:
        raise fail("--resamples must be at least 1")
    try:
        report = compare_runs([read_run(path) for path in runs], seed=seed, resamples=resamples)
    except RunDirError as exc:
        raise fail(str(exc)) from None
    for warning in report["warnings"]:
        console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    _print(report)
    if out is not None:
        write_comparison(report, out)
        console.print(f"comparison in {escape(str(out / 'compare.md'))} and compare.json", soft_wrap=True)


def _print(report: dict) -> None:
    from cvdp_gym.eval.compare import (
        MOVED_SHOWN,
        columns,
        method_notes,
        moved_lines,
        quality_line,
        rows_of,
        title_of,
    )

    for comparison in report["comparisons"]:
        table = Table(title=escape(title_of(comparison)))
        for i, column in enumerate(columns()):
            table.add_column(column, justify="left" if i == 0 else "right", overflow="fold")
        for cells in rows_of(comparison):
            table.add_row(*map(escape, cells))
        console.print(table)
        console.print(escape(comparison["differs"]), soft_wrap=True)
        for line in [*moved_lines(comparison, MOVED_SHOWN), quality_line(comparison)]:
            if line:
                console.print(escape(line), soft_wrap=True)
    for note in method_notes(report):
        console.print(f"[dim]{escape(note)}[/]", soft_wrap=True)
