"""The report's verification section: test benches and assertions scored by the bugs they catch.

Rows of a verification task (``eval --task testbench`` or ``--task assertion``: their ``task``
ends in ``:testbench`` or ``:assertion``) are summarised per task and benchmark: answers, the
**valid** rate (the answer holds on the reference: a test bench that passes it, properties
that hold and are not vacuous), the mean **kill rate** over all answers (0 for an invalid one)
with its bootstrap 95% interval, the **full-catch** rate (every drawn bug caught: the pass
rate), and, for test benches, the mean line and toggle coverage of the reference. Those rows
are left out of the benchmarks' own tables (their official reading is of designs).
"""

from __future__ import annotations

import statistics
from typing import Any

from rich.console import Console

from cvdp_gym.eval.intervals import bootstrap_mean
from cvdp_gym.eval.tables import markdown_table, print_table
from cvdp_gym.tasks.names import ASSERTION, BENCH_TASKS

__all__ = ["is_task_row", "markdown_lines", "print_section", "summary_columns", "summary_rows", "verification_section"]

Row = dict[str, Any]


def task_of(row: Row) -> str | None:
    """``testbench``, ``testbench-cocotb`` or ``assertion`` for a verification task's row, else None."""
    task = str(row.get("task") or "").rpartition(":")[2]
    return task if task in (*BENCH_TASKS, ASSERTION) else None


def is_task_row(row: Row) -> bool:
    return task_of(row) is not None


def _kill_rate(row: Row) -> float:
    total = int(row.get("tests_total") or 0)
    return int(row.get("tests_passed") or 0) / total if total and row.get("syntax_ok") else 0.0


def _valid(row: Row) -> bool:
    reference = (row.get("official") or {}).get("reference") or {}
    return bool(reference.get("passed")) and not row.get("excluded")


def _coverage(row: Row, kind: str) -> float | None:
    pair = ((row.get("official") or {}).get("coverage") or {}).get(kind)
    return pair[0] / pair[1] if isinstance(pair, list) and len(pair) == 2 and pair[1] else None


def verification_section(rows: list[Row]) -> dict[str, Any] | None:
    """The section of report.json, or None when no row is a verification task's."""
    groups: dict[str, list[Row]] = {}
    for row in rows:
        task = task_of(row)
        if task is not None:
            groups.setdefault(f"{task} · {row.get('benchmark') or 'cvdp'}", []).append(row)
    if not groups:
        return None
    summary = {}
    for name, group in sorted(groups.items()):
        scored = [r for r in group if not r.get("excluded")]
        kills = [_kill_rate(r) for r in scored]
        line = [c for c in (_coverage(r, "line") for r in scored) if c is not None]
        toggle = [c for c in (_coverage(r, "toggle") for r in scored) if c is not None]
        summary[name] = {
            "answers": len(group),
            "excluded": len(group) - len(scored),
            "valid_rate": round(sum(map(_valid, scored)) / len(scored), 4) if scored else None,
            "mean_kill_rate": round(statistics.fmean(kills), 4) if kills else None,
            "ci": [round(v, 4) for v in bootstrap_mean(kills)] if len(kills) > 1 else None,
            "full_catch_rate": round(sum(bool(r.get("passed")) for r in scored) / len(scored), 4) if scored else None,
            "mean_line_coverage": round(statistics.fmean(line), 4) if line else None,
            "mean_toggle_coverage": round(statistics.fmean(toggle), 4) if toggle else None,
        }
    return {"by_task": summary}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def summary_columns() -> list[str]:
    return ["task · benchmark", "answers", "valid", "mean kill rate [95% CI]", "full catch", "line cov.", "toggle cov.", "excluded"]


def summary_rows(section: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, entry in section["by_task"].items():
        ci = f" [{_pct(entry['ci'][0])}, {_pct(entry['ci'][1])}]" if entry.get("ci") else ""
        rows.append([
            name, str(entry["answers"]), _pct(entry["valid_rate"]), _pct(entry["mean_kill_rate"]) + ci,
            _pct(entry["full_catch_rate"]), _pct(entry["mean_line_coverage"]), _pct(entry["mean_toggle_coverage"]),
            str(entry["excluded"]),
        ])
    return rows


def markdown_lines(section: dict[str, Any] | None) -> list[str]:
    """The section as report.md lines (none without it)."""
    if not section:
        return []
    return [
        "", "## Verification tasks (the seeded bugs each answer catches)", "",
        "Valid: holds on the reference (no false alarm; assertions also not vacuous). Kill rate: drawn bugs caught "
        "(0 for an invalid answer). Full catch: every drawn bug caught. Coverage: of the reference under the bench "
        "(Verilator).", "",
        *markdown_table(summary_columns(), summary_rows(section)),
    ]


def print_section(section: dict[str, Any] | None, console: Console) -> None:
    """The section as a rich table."""
    if section:
        print_table(console, "verification tasks (the seeded bugs each answer catches)", summary_columns(), summary_rows(section))
