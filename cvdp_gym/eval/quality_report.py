"""The report's design-quality section: per benchmark and per answer, from each row's quality.

Rows whose grade carries a quality outcome (``eval --quality``: passing answers measured
against their references, ``grading.quality``) are summarised per benchmark: how many were
measured, the mean score with its bootstrap 95% interval, the median of each ratio to the
reference and the warnings the references do not have; those that could not be measured are
listed with their one-line reason. Per answer, the absolute figures of the design and of its
reference: area (µm²), worst-path delay and slack (ns), power (µW, of the kind the flow
states) and warnings on the ASIC flow; LUTs, flip-flops, RAM and DSP blocks and fmax on the
FPGA flow.
"""

from __future__ import annotations

import statistics
from typing import Any

from rich.console import Console

from cvdp_gym.eval.intervals import bootstrap_mean
from cvdp_gym.eval.tables import markdown_table, print_table

__all__ = ["answer_columns", "answer_rows", "markdown_lines", "print_section", "quality_section", "summary_columns", "summary_rows"]

Row = dict[str, Any]
_CVDP = "cvdp"


def _quality(row: Row) -> dict[str, Any]:
    return (row.get("grade") or {}).get("quality") or {}


def _figures(measurement: dict[str, Any] | None) -> dict[str, Any]:
    """The absolute figures of one measurement (empty when it failed)."""
    metrics = (measurement or {}).get("metrics") or {}
    if not metrics:
        return {}
    if measurement.get("flow") == "asic":
        keys = ("area_um2", "cells", "delay_ns", "slack_ns", "power_uw", "power_kind", "liberty", "clock_ns")
        figures = {k: metrics.get(k) for k in keys}
        figures["warnings"] = sum((metrics.get("warnings") or {}).values())
        return figures
    return {k: metrics.get(k) for k in ("device", "luts", "ffs", "ram_blocks", "dsp_blocks", "carry", "fmax_mhz")}


def quality_section(rows: list[Row]) -> dict[str, Any] | None:
    """The section of report.json, or None when no row has a quality outcome."""
    measured = [r for r in rows if _quality(r)]
    if not measured:
        return None
    groups: dict[str, list[Row]] = {}
    for row in measured:
        groups.setdefault(row.get("benchmark") or _CVDP, []).append(row)
    summary = {}
    for name, group in sorted(groups.items()):
        scored = [_quality(r) for r in group if _quality(r).get("score") is not None]
        scores = [q["score"] for q in scored]
        ratio_names = sorted({k for q in scored for k in q.get("ratios", {})})
        summary[name] = {
            "flow": _quality(group[0]).get("flow"),
            "answers": len(group),
            "scored": len(scored),
            "mean_score": round(statistics.fmean(scores), 4) if scores else None,
            "ci": [round(v, 4) for v in bootstrap_mean(scores)] if len(scores) > 1 else None,
            "median_ratios": {
                k: round(statistics.median(q["ratios"][k] for q in scored if k in q.get("ratios", {})), 4) for k in ratio_names
            },
            "extra_warnings": sum(int(q.get("extra_warnings") or 0) for q in scored),
            "not_measured": [
                {"id": r["id"], "sample": r.get("sample", 0), "why": _quality(r).get("failure")}
                for r in group if _quality(r).get("score") is None
            ],
        }
    answers = [
        {
            "id": r["id"], "sample": r.get("sample", 0), "score": _quality(r).get("score"),
            "ratios": _quality(r).get("ratios", {}), "failure": _quality(r).get("failure"),
            "design": _figures(_quality(r).get("candidate")), "reference": _figures(_quality(r).get("reference")),
        }
        for r in sorted(measured, key=lambda r: (r["id"], r.get("sample", 0)))
    ]
    return {"by_benchmark": summary, "answers": answers}


def _num(value: Any, digits: int = 2) -> str:
    return "-" if value is None else (f"{value:.{digits}f}" if isinstance(value, float) else str(value))


def summary_columns() -> list[str]:
    return ["benchmark", "flow", "measured", "mean score [95% CI]", "median ratios to the reference", "extra warnings", "not measured"]


def summary_rows(section: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, entry in section["by_benchmark"].items():
        ci = f" [{entry['ci'][0]:.3f}, {entry['ci'][1]:.3f}]" if entry.get("ci") else ""
        ratios = ", ".join(f"{k} {v:.3f}" for k, v in entry["median_ratios"].items()) or "-"
        rows.append([
            name, str(entry["flow"]), f"{entry['scored']}/{entry['answers']}",
            f"{_num(entry['mean_score'], 3)}{ci}", ratios, str(entry["extra_warnings"]), str(len(entry["not_measured"])),
        ])
    return rows


def answer_columns(section: dict[str, Any]) -> list[str]:
    flow = next(iter(section["by_benchmark"].values()))["flow"]
    figures = (
        ["area µm² (ref)", "delay ns (ref)", "slack ns", "power µW (ref)", "warnings"] if flow == "asic"
        else ["LUTs (ref)", "FFs (ref)", "RAM", "DSP", "fmax MHz (ref)"]
    )
    return ["answer", "score", *figures, "why not measured"]


def _pair(design: dict[str, Any], reference: dict[str, Any], key: str, digits: int = 2) -> str:
    return f"{_num(design.get(key), digits)} ({_num(reference.get(key), digits)})"


def answer_rows(section: dict[str, Any]) -> list[list[str]]:
    rows = []
    for answer in section["answers"]:
        design, reference = answer["design"], answer["reference"]
        if "area_um2" in design or "area_um2" in reference:
            figures = [
                _pair(design, reference, "area_um2", 1), _pair(design, reference, "delay_ns", 3),
                _num(design.get("slack_ns"), 3), _pair(design, reference, "power_uw", 3), _num(design.get("warnings")),
            ]
        else:
            figures = [
                _pair(design, reference, "luts", 0), _pair(design, reference, "ffs", 0), _num(design.get("ram_blocks")),
                _num(design.get("dsp_blocks")), _pair(design, reference, "fmax_mhz", 1),
            ]
        name = answer["id"] + (f"#{answer['sample']}" if answer["sample"] else "")
        rows.append([name, _num(answer["score"], 3), *figures, answer.get("failure") or ""])
    return rows


def markdown_lines(section: dict[str, Any] | None) -> list[str]:
    """The section as report.md lines (none without it)."""
    if not section:
        return []
    return [
        "", "## Design quality (passing answers against their references)", "",
        "Score: 0.5 at the reference's quality, 1.0 at half its area, delay and power (geometric mean of the capped "
        "ratios), 0.0 at twice; each warning the reference lacks takes a quarter of it.", "",
        *markdown_table(summary_columns(), summary_rows(section)), "", "### Per answer", "",
        *markdown_table(answer_columns(section), answer_rows(section)),
    ]


def print_section(section: dict[str, Any] | None, console: Console, *, shown: int = 30) -> None:
    """The section as rich tables (the per-answer one when it is short)."""
    if not section:
        return
    tables = [("design quality (passing answers against their references)", summary_columns(), summary_rows(section))]
    if len(section["answers"]) <= shown:
        tables.append(("design quality per answer: the design (its reference)", answer_columns(section), answer_rows(section)))
    for title, columns, rows in tables:
        print_table(console, title, columns, rows, left=(0, len(columns) - 1))
