"""The evaluation report: one dict (report.json), rendered as Markdown, a rich table and a PNG.

Every group (overall, each category, each difficulty) gets the same statistics, so a
reader can see where a model's pass rate comes from and which stage its failures stop at.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cvdp_gym.data.problems import DIFFICULTIES
from cvdp_gym.eval.passk import aggregate
from cvdp_gym.eval.run import PASSED

UNKNOWN = "unknown"
UNBIASED_LABEL = "mean over problems of 1 − C(n−c, k)/C(n, k)"
OFFICIAL_LABEL = "mean over problems of 1 − (1 − c/n)^k, as the official CVDP report computes it (biased)"

Row = dict[str, Any]


def _rate(rows: list[Row], field: str) -> float:
    return sum(bool(r.get(field)) for r in rows) / len(rows) if rows else 0.0


def group_stats(rows: list[Row], ks: Iterable[int]) -> dict[str, Any]:
    """Counts, pass@k (both estimators), stage rates, mean reward and verdicts of some samples."""
    per_problem: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        per_problem[r["id"]][0] += 1
        per_problem[r["id"]][1] += bool(r.get("passed"))
    passk = aggregate(((n, c) for n, c in per_problem.values()), ks)
    verdicts = Counter(r.get("verdict", "?") for r in rows)
    return {
        "problems": len(per_problem),
        "samples": len(rows),
        "solved_problems": sum(c > 0 for _, c in per_problem.values()),
        "pass@1": next((p.unbiased for p in passk if p.k == 1), None),
        "pass@k": [p.to_dict() for p in passk],
        "format_ok_rate": _rate(rows, "format_ok"),
        "syntax_ok_rate": _rate(rows, "syntax_ok"),
        "interface_ok_rate": _rate(rows, "interface_ok"),
        "mean_reward": sum(float(r.get("reward", 0.0)) for r in rows) / len(rows) if rows else 0.0,
        "passed_samples": verdicts.pop(PASSED, 0),
        "failure_classes": dict(sorted(verdicts.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def _difficulty_order(name: str) -> tuple[int, str]:
    return (DIFFICULTIES.index(name) if name in DIFFICULTIES else len(DIFFICULTIES), name)


def _grouped(rows: list[Row], field: str) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        groups[r.get(field) or UNKNOWN].append(r)
    return groups


def choose_ks(requested: Iterable[int] | None, max_samples: int, default: list[int]) -> tuple[list[int], list[int]]:
    """The k values to report (always with 1) and the requested ones above every sample count."""
    wanted = sorted(set(requested or default) | {1})
    return [k for k in wanted if k <= max_samples], [k for k in wanted if k > max_samples]


def build_report(rows: list[Row], ks: list[int], meta: dict[str, Any]) -> dict[str, Any]:
    """The report dict written as report.json."""
    by_cat = _grouped(rows, "category")
    by_diff = _grouped(rows, "difficulty")
    return {
        "meta": meta,
        "estimators": {"unbiased": UNBIASED_LABEL, "official_biased": OFFICIAL_LABEL},
        "ks": ks,
        "overall": group_stats(rows, ks),
        "by_category": {c: group_stats(by_cat[c], ks) for c in sorted(by_cat)},
        "by_difficulty": {d: group_stats(by_diff[d], ks) for d in sorted(by_diff, key=_difficulty_order)},
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _groups(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("overall", report["overall"]),
        *report["by_category"].items(),
        *report["by_difficulty"].items(),
    ]


def _passk_cell(entry: dict[str, Any], field: str) -> str:
    cell = _pct(entry[field])
    if entry["excluded_fewer_samples"] and entry["problems"]:
        cell += f" ({entry['problems']}/{entry['problems'] + entry['excluded_fewer_samples']})"
    return cell


def rate_columns(report: dict[str, Any]) -> list[str]:
    cols = ["group", "problems", "samples", "pass@1"]
    for k in report["ks"]:
        if k > 1:
            cols += [f"pass@{k}", f"pass@{k} official"]
    return [*cols, "format OK", "syntax OK", "interface OK", "mean reward"]


def rate_rows(report: dict[str, Any]) -> list[list[str]]:
    """One row of formatted cells per group, matching ``rate_columns``."""
    out = []
    for name, g in _groups(report):
        cells = [name, str(g["problems"]), str(g["samples"]), _pct(g["pass@1"])]
        for entry in g["pass@k"]:
            if entry["k"] > 1:
                cells += [_passk_cell(entry, "unbiased"), _passk_cell(entry, "official_biased")]
        cells += [_pct(g["format_ok_rate"]), _pct(g["syntax_ok_rate"]), _pct(g["interface_ok_rate"]), f"{g['mean_reward']:.3f}"]
        out.append(cells)
    return out


def failure_columns(report: dict[str, Any]) -> list[str]:
    return ["group", "passed", *report["overall"]["failure_classes"]]


def failure_rows(report: dict[str, Any]) -> list[list[str]]:
    classes = failure_columns(report)[2:]
    return [[name, str(g["passed_samples"]), *(str(g["failure_classes"].get(c, 0)) for c in classes)] for name, g in _groups(report)]


def notes(report: dict[str, Any]) -> list[str]:
    """What a reader needs to read the numbers right."""
    out = [
        f"pass@k (unbiased): {UNBIASED_LABEL}.",
        f"pass@k official: {OFFICIAL_LABEL}; it overstates pass@k for k > 1 (equal at k = 1).",
    ]
    partial = [e for e in report["overall"]["pass@k"] if e["excluded_fewer_samples"]]
    if partial:
        out.append("A pass@k cell 'x% (a/b)' covers only the a of b problems that have at least k samples.")
    for entry in partial:
            out.append(f"pass@{entry['k']} leaves out {entry['excluded_fewer_samples']} problem(s) with fewer than {entry['k']} samples.")
    out.extend(report["meta"].get("notes", []))
    return out


def _md_table(columns: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def to_markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    head = [f"# CVDP evaluation: {meta.get('source', '')}", ""]
    head += [f"- {key}: {value}" for key, value in meta.items() if key != "notes" and value not in (None, "")]
    body = [
        "", "## Pass rates", "", _md_table(rate_columns(report), rate_rows(report)),
        "", "## Verdicts (samples)", "", _md_table(failure_columns(report), failure_rows(report)),
        "", "## Notes", "", *(f"- {n}" for n in notes(report)), "",
    ]
    return "\n".join(head + body)


def print_report(report: dict[str, Any], console: Console) -> None:
    """The report as rich tables."""
    for title, columns, rows in (
        (f"cvdp-gym eval: {report['meta'].get('source', '')}", rate_columns(report), rate_rows(report)),
        ("verdicts (samples)", failure_columns(report), failure_rows(report)),
    ):
        table = Table(title=title)
        for i, column in enumerate(columns):
            table.add_column(column, justify="left" if i == 0 else "right", overflow="fold")
        for cells in rows:
            table.add_row(*cells)
        console.print(table)
    for note in notes(report):
        console.print(f"[dim]{note}[/]")


def write_png(report: dict[str, Any], path: Path) -> str | None:
    """pass@1 by category and difficulty, and verdicts by category; why not, if it could not."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib): report.png skipped"
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    for ax, (title, groups) in zip(axes[:2], (("category", report["by_category"]), ("difficulty", report["by_difficulty"])), strict=True):
        names = list(groups)
        ax.bar(names, [100 * (groups[n]["pass@1"] or 0.0) for n in names], color="tab:blue")
        ax.set_title(f"pass@1 by {title}")
        ax.set_ylabel("pass@1 (%)")
        ax.set_ylim(0, 100)
        ax.tick_params(axis="x", rotation=30)
    _verdict_bars(axes[2], report)
    fig.suptitle(f"overall pass@1 {_pct(report['overall']['pass@1'])} over {report['overall']['problems']} problems")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return None


def _verdict_bars(ax: Any, report: dict[str, Any]) -> None:
    """Samples per verdict, stacked per category."""
    cats = list(report["by_category"])
    verdicts = [PASSED, *report["overall"]["failure_classes"]]
    bottom = [0] * len(cats)
    for verdict in verdicts:
        counts = [
            report["by_category"][c]["passed_samples"] if verdict == PASSED else report["by_category"][c]["failure_classes"].get(verdict, 0)
            for c in cats
        ]
        ax.bar(cats, counts, bottom=bottom, label=verdict)
        bottom = [b + n for b, n in zip(bottom, counts, strict=True)]
    ax.set_title("verdicts by category (samples)")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize="small")
    ax.tick_params(axis="x", rotation=30)


def write_report(report: dict[str, Any], out_dir: Path) -> str | None:
    """report.json, report.md and report.png in ``out_dir``; returns why the PNG was skipped."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out_dir / "report.md").write_text(to_markdown(report), encoding="utf-8")
    return write_png(report, out_dir / "report.png")
