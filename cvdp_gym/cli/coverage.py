"""``cvdp-gym coverage FILE...``: which problems of CVDP files this tool can score, and how.

Prints a per-category table (problems, scorable, by how: harness, BLEU, judge,
repo-context; what blocks the rest) and the reason for every problem it cannot score;
``--json PATH`` (``-``: standard output) writes every row. The logic is
:mod:`cvdp_gym.coverage`; this module parses options and prints.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cvdp_gym.cli._options import (
    BenchmarkDirOpt,
    JsonOpt,
    JudgeBaseUrlOpt,
    ReposOpt,
    ToolchainOpt,
    console,
    fail,
)


def coverage_command(
    files: Annotated[list[str], typer.Argument(help="CVDP .jsonl files, folders of them, 'bundled', or benchmarks (verilog-eval-v2, rtllm-v2, ...; or the path of a copy).")],
    benchmark_dir: BenchmarkDirOpt = None,
    repos: ReposOpt = None,
    judge_base_url: JudgeBaseUrlOpt = None,
    toolchain: ToolchainOpt = None,
    json_out: JsonOpt = None,
) -> None:
    """Report, for every problem, whether this tool can score it and how, or why not."""
    from cvdp_gym.coverage import by_category, coverage
    from cvdp_gym.errors import DatasetError
    from cvdp_gym.toolchain import detect

    try:
        chain = detect(toolchain)
    except ValueError as exc:
        raise fail(str(exc)) from None
    try:
        rows = coverage(files, toolchain=chain, repos=repos, judge=judge_base_url is not None, benchmark_dir=benchmark_dir)
    except DatasetError as exc:
        raise fail(str(exc)) from None
    if json_out is not None:
        report = {"files": files, "repos": str(repos) if repos else None, "judge": judge_base_url is not None,
                  "toolchain": chain.kind, "by_category": by_category(rows), "problems": [r.to_json() for r in rows]}
        text = json.dumps(report, indent=2) + "\n"
        if json_out == "-":
            sys.stdout.write(text)
            return
        Path(json_out).write_text(text, encoding="utf-8")
    _print(rows, by_category(rows))
    if json_out is not None:
        console.print(f"rows in {escape(json_out)}")


def _print(rows: list, table_data: dict) -> None:
    hows = sorted({h for entry in table_data.values() for h in entry["how"]})
    blockers = sorted({b for entry in table_data.values() for b in entry["blocked"]})
    table = Table(title=f"cvdp-gym coverage: {len(rows)} problems")
    for column in ("category", "problems", "scorable", *hows, *(f"[red]{b}[/]" for b in blockers)):
        table.add_column(column, justify="left" if column == "category" else "right")
    totals = {"problems": 0, "scorable": 0}
    for category, entry in table_data.items():
        totals["problems"] += entry["problems"]
        totals["scorable"] += entry["scorable"]
        table.add_row(
            category, str(entry["problems"]), str(entry["scorable"]),
            *(str(entry["how"].get(h, "") or "") for h in hows),
            *(str(entry["blocked"].get(b, "") or "") for b in blockers),
        )
    table.add_row(
        "[bold]all[/]", str(totals["problems"]), str(totals["scorable"]),
        *(str(sum(e["how"].get(h, 0) for e in table_data.values())) for h in hows),
        *(str(sum(e["blocked"].get(b, 0) for e in table_data.values())) for b in blockers),
    )
    console.print(table)
    blocked = [r for r in rows if not r.scorable]
    if blocked:
        why = Table(title=f"not scorable: {len(blocked)}")
        for column in ("problem", "category", "blocker", "reason"):
            why.add_column(column, overflow="fold")
        for row in blocked:
            why.add_row(escape(row.id), row.category, row.blocker or "", escape(row.reason))
        console.print(why)
    defects = [r for r in rows if r.defect]
    if defects:
        known = Table(title=f"known benchmark defects: {len(defects)} (graded and counted in the official figure; a failure is never the answer's)")
        for column in ("problem", "defect"):
            known.add_column(column, overflow="fold")
        for row in defects:
            known.add_row(escape(row.id), escape(row.defect or ""))
        console.print(known)
    randomised = [r for r in rows if r.randomised]
    if randomised:
        console.print(f"[yellow]randomised harnesses[/] (a verdict can change from run to run; check/eval --seeds K): {len(randomised)}")
