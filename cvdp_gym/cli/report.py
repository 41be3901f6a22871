"""``cvdp-gym report``: a static HTML report (index.html, images/, per-problem and
per-episode pages) of one or more eval run folders.

Only reads the run folders and writes ``--out``; the report itself is :mod:`cvdp_gym.report`.
A run folder that cannot be read (no results.jsonl, a malformed line, rows of another
version) is one ``error:`` line naming the file, exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from cvdp_gym.cli._options import console, fail


def report_command(
    runs: Annotated[list[Path], typer.Argument(help="Folders `cvdp-gym eval --out` wrote.", show_default=False)],
    out: Annotated[Path | None, typer.Option(help="Folder for index.html, images/ and the pages (default: html/ in the first run folder).")] = None,
) -> None:
    """Write a static HTML report of eval runs: pass@k with intervals, domains, consistency, failure classes and stages, time, transcripts."""
    from cvdp_gym.errors import RunDirError
    from cvdp_gym.report import write_html_report

    target = out if out is not None else runs[0] / "html"
    try:
        index = write_html_report(runs, target)
    except RunDirError as exc:
        raise fail(str(exc)) from None
    console.print(f"report in {escape(str(index))}", soft_wrap=True)
