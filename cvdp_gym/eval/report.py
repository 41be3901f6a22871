"""The evaluation report: one dict (report.json), rendered as Markdown, a rich table and a PNG.

Every group (overall, each category, each difficulty) gets the same statistics, so a
reader can see where a model's pass rate comes from and which stage its failures stop at.
Beside them, the official CVDP report's table (CVDP's plug-in, :mod:`cvdp_gym.benchmarks.cvdp.report`,
read by name through ``benchmark_reports.OFFICIAL_TABLES``): pass@k as
the official tool computes it for harness categories, mean credit for comprehension ones; and
for VerilogEval and RTLLM problems, each benchmark's own report beside ours and the published
figures (``benchmark_reports``: :mod:`cvdp_gym.eval.benchmark_reports`, rendered by
:mod:`cvdp_gym.eval.benchmark_tables`).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console

from cvdp_gym.data.problems import difficulty_order
from cvdp_gym.eval import benchmark_tables, quality_report, verification_report
from cvdp_gym.eval.benchmark_reports import OFFICIAL_TABLES, benchmark_reports
from cvdp_gym.eval.intervals import wilson
from cvdp_gym.eval.passk import aggregate, pass_after_attempts, problem_counts
from cvdp_gym.eval.run import PASSED
from cvdp_gym.eval.tables import markdown_table, print_table

UNKNOWN = "unknown"
CVDP = "cvdp"
UNBIASED_LABEL = "mean over problems of 1 − C(n−c, k)/C(n, k)"
OFFICIAL_LABEL = "mean over problems of 1 − (1 − c/n)^k, as the official CVDP report computes it (biased)"

Row = dict[str, Any]


def _rate(rows: list[Row], field: str) -> float:
    return sum(bool(r.get(field)) for r in rows) / len(rows) if rows else 0.0


#: Per-episode fields of agentic rows (``cvdp_gym.eval.agentic``), in report order.
EPISODE_FIELDS = ("turns", "tool_calls", "malformed_calls", "commands_run", "episode_s")
#: Shown in the terminal per episode up to this many episodes (report.md always has them all).
EPISODES_SHOWN = 40


def _mean(rows: list[Row], field: str) -> float:
    return sum(float(r.get(field) or 0) for r in rows) / len(rows) if rows else 0.0


def episode_stats(rows: list[Row]) -> dict[str, Any] | None:
    """Means of turns, tool calls, malformed calls, commands and time over agentic episodes
    (None when no row is an episode), plus the malformed total and why episodes ended."""
    episodes = [r for r in rows if "turns" in r]
    if not episodes:
        return None
    ends = Counter(r.get("end_reason") or r.get("verdict", "?") for r in episodes)
    return {
        "episodes": len(episodes),
        **{f"mean_{field}": _mean(episodes, field) for field in EPISODE_FIELDS},
        "malformed_calls": sum(int(r.get("malformed_calls") or 0) for r in episodes),
        "end_reasons": dict(sorted(ends.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def refine_stats(rows: list[Row]) -> dict[str, Any] | None:
    """pass@1 after attempt 1..N and the mean answers over refine episodes
    (``cvdp_gym.eval.refine``; None when no row is one)."""
    episodes = [r for r in rows if "max_attempts" in r]
    if not episodes:
        return None
    most = max(int(r["max_attempts"] or 1) for r in episodes)
    return {
        "episodes": len(episodes),
        "max_attempts": most,
        "mean_attempts": _mean(episodes, "attempts"),
        "pass@1_after_attempt": pass_after_attempts((r.get("passed_at_attempt") for r in episodes), most),
    }


def group_stats(rows: list[Row], ks: Iterable[int]) -> dict[str, Any]:
    """Counts, pass@k (both estimators), stage rates, mean reward and verdicts of some samples
    (and, for agentic episodes, their turn, call and time statistics)."""
    per_problem = problem_counts(rows)
    passk = aggregate(((n, c) for n, c in per_problem.values()), ks)
    verdicts = Counter(r.get("verdict", "?") for r in rows)
    episodes = episode_stats(rows)
    pass1 = next((p.unbiased for p in passk if p.k == 1), None)
    stats = {
        "problems": len(per_problem),
        "samples": len(rows),
        "solved_problems": sum(c > 0 for _, c in per_problem.values()),
        "pass@1": pass1,
        # Wilson over problems (cvdp_gym.eval.intervals says why): the 95% interval printed beside pass@1.
        "pass@1_ci95": None if pass1 is None else list(wilson(pass1, len(per_problem))),
        "pass@k": [p.to_dict() for p in passk],
        "format_ok_rate": _rate(rows, "format_ok"),
        "syntax_ok_rate": _rate(rows, "syntax_ok"),
        "interface_ok_rate": _rate(rows, "interface_ok"),
        "mean_reward": sum(float(r.get("reward", 0.0)) for r in rows) / len(rows) if rows else 0.0,
        "mean_credit": _mean_credit(rows),
        "passed_samples": verdicts.pop(PASSED, 0),
        "failure_classes": dict(sorted(verdicts.items(), key=lambda kv: (-kv[1], kv[0]))),
    }
    if episodes:
        stats["episodes"] = episodes
    refine = refine_stats(rows)
    if refine:
        stats["refine"] = refine
    return stats


def _mean_credit(rows: list[Row]) -> float:
    """Mean official credit per sample (the pass bit for harness answers)."""
    credits = [float(r["credit"]) if r.get("credit") is not None else float(bool(r.get("passed"))) for r in rows]
    return sum(credits) / len(credits) if credits else 0.0


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
    episodes = [
        {key: r.get(key) for key in ("id", "sample", "verdict", *EPISODE_FIELDS, "end_reason", "transcript")}
        for r in rows if "turns" in r
    ]
    report = {
        "meta": meta,
        "estimators": {"unbiased": UNBIASED_LABEL, "official_biased": OFFICIAL_LABEL},
        "ks": ks,
        "overall": group_stats(rows, ks),
        "by_category": {c: group_stats(by_cat[c], ks) for c in sorted(by_cat)},
        "by_difficulty": {d: group_stats(by_diff[d], ks) for d in sorted(by_diff, key=difficulty_order)},
    }
    designs = [r for r in rows if not verification_report.is_task_row(r)]  # the benchmarks' tables read designs
    cvdp_rows = [r for r in designs if r.get("benchmark") in (None, "", CVDP)]
    if cvdp_rows:  # the official CVDP table is CVDP's; other benchmarks get their own below
        report["official_report"] = OFFICIAL_TABLES[CVDP].report(cvdp_rows, ks)
    benchmarks = benchmark_reports(designs, meta)
    if benchmarks:
        report["benchmark_reports"] = benchmarks
    quality = quality_report.quality_section(rows)
    if quality:
        report["quality"] = quality
    verification = verification_report.verification_section(rows)
    if verification:
        report["verification"] = verification
    if episodes:
        report["episodes"] = episodes
    return report


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _interval(ci: list[float] | None) -> str:
    return "-" if ci is None else f"{100 * ci[0]:.1f}–{100 * ci[1]:.1f}%"


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
    cols = ["group", "problems", "samples", "pass@1", "pass@1 95% CI"]
    for k in report["ks"]:
        if k > 1:
            cols += [f"pass@{k}", f"pass@{k} official"]
    return [*cols, "format OK", "syntax OK", "interface OK", "mean reward"]


def rate_rows(report: dict[str, Any]) -> list[list[str]]:
    """One row of formatted cells per group, matching ``rate_columns``."""
    out = []
    for name, g in _groups(report):
        cells = [name, str(g["problems"]), str(g["samples"]), _pct(g["pass@1"]), _interval(g.get("pass@1_ci95"))]
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


def episode_columns() -> list[str]:
    return ["group", "episodes", "mean turns", "mean tool calls", "malformed calls", "mean commands", "mean time (s)", "end reasons"]


def episode_group_rows(report: dict[str, Any]) -> list[list[str]]:
    """Per group: means over its episodes (agentic runs only)."""
    out = []
    for name, g in _groups(report):
        e = g.get("episodes")
        if e:
            ends = ", ".join(f"{k} {v}" for k, v in e["end_reasons"].items())
            out.append([
                name, str(e["episodes"]), f"{e['mean_turns']:.1f}", f"{e['mean_tool_calls']:.1f}",
                str(e["malformed_calls"]), f"{e['mean_commands_run']:.1f}", f"{e['mean_episode_s']:.1f}", ends,
            ])
    return out


def episode_table_columns() -> list[str]:
    return ["problem", "sample", "verdict", "turns", "tool calls", "malformed", "commands", "time (s)", "end"]


def episode_table_rows(report: dict[str, Any]) -> list[list[str]]:
    """One row per episode."""
    return [
        [e["id"], str(e["sample"]), e["verdict"], *(str(e[f] or 0) for f in EPISODE_FIELDS[:4]), f"{e['episode_s'] or 0:.1f}", e["end_reason"] or "-"]
        for e in report.get("episodes", [])
    ]


def refine_columns(report: dict[str, Any]) -> list[str]:
    attempts = report["overall"]["refine"]["max_attempts"]
    return ["group", "episodes", "mean answers", *(f"pass@1 after attempt {i}" for i in range(1, attempts + 1))]


def refine_rows(report: dict[str, Any]) -> list[list[str]]:
    """Per group: the fraction of refine episodes passed within 1, 2, ... N answers."""
    width = report["overall"]["refine"]["max_attempts"]
    out = []
    for name, g in _groups(report):
        r = g.get("refine")
        if r:
            rates = [_pct(v) for v in r["pass@1_after_attempt"]]
            out.append([name, str(r["episodes"]), f"{r['mean_attempts']:.2f}", *rates, *["-"] * (width - len(rates))])
    return out


def notes(report: dict[str, Any]) -> list[str]:
    """What a reader needs to read the numbers right."""
    out = [
        f"pass@k (unbiased): {UNBIASED_LABEL}.",
        f"pass@k official: {OFFICIAL_LABEL}; it overstates pass@k for k > 1 (equal at k = 1).",
        "pass@1 95% CI: Wilson score interval over problems (answers to one problem are not independent).",
    ]
    partial = [e for e in report["overall"]["pass@k"] if e["excluded_fewer_samples"]]
    if partial:
        out.append("A pass@k cell 'x% (a/b)' covers only the a of b problems that have at least k samples.")
    for entry in partial:
            out.append(f"pass@{entry['k']} leaves out {entry['excluded_fewer_samples']} problem(s) with fewer than {entry['k']} samples.")
    out.extend(report["meta"].get("notes", []))
    return out


def _md_table(columns: list[str], rows: list[list[str]]) -> str:
    return "\n".join(markdown_table(columns, rows))


def to_markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    head = [f"# CVDP evaluation: {meta.get('source', '')}", ""]
    head += [f"- {key}: {value}" for key, value in meta.items() if key != "notes" and value not in (None, "")]
    body = [
        "", "## Pass rates", "", _md_table(rate_columns(report), rate_rows(report)),
        "", "## Verdicts (samples)", "", _md_table(failure_columns(report), failure_rows(report)),
    ]
    if report.get("episodes"):
        body += [
            "", "## Agentic episodes", "", _md_table(episode_columns(), episode_group_rows(report)),
            "", "### Per episode", "", _md_table(episode_table_columns(), episode_table_rows(report)),
        ]
    if report["overall"].get("refine"):
        body += ["", "## Refinement: pass@1 after attempt i", "", _md_table(refine_columns(report), refine_rows(report))]
    if report.get("official_report"):
        section = report["official_report"]
        body += [
            "", "## The official CVDP report's table", "", f"Computed as {section['label']}.", "",
            _md_table(OFFICIAL_TABLES[CVDP].columns(section), OFFICIAL_TABLES[CVDP].rows_of(section)),
        ]
    body += benchmark_tables.markdown_lines(report.get("benchmark_reports", {}))
    body += quality_report.markdown_lines(report.get("quality"))
    body += verification_report.markdown_lines(report.get("verification"))
    body += ["", "## Notes", "", *(f"- {n}" for n in notes(report)), ""]
    return "\n".join(head + body)


def print_report(report: dict[str, Any], console: Console) -> None:
    """The report as rich tables."""
    tables = [
        (f"cvdp-gym eval: {report['meta'].get('source', '')}", rate_columns(report), rate_rows(report)),
        ("verdicts (samples)", failure_columns(report), failure_rows(report)),
    ]
    if report.get("episodes"):
        tables.append(("agentic episodes", episode_columns(), episode_group_rows(report)))
        if len(report["episodes"]) <= EPISODES_SHOWN:
            tables.append(("per episode", episode_table_columns(), episode_table_rows(report)))
    if report["overall"].get("refine"):
        tables.append(("refinement: pass@1 after attempt i", refine_columns(report), refine_rows(report)))
    if report.get("official_report"):
        section = report["official_report"]
        table = OFFICIAL_TABLES[CVDP]
        tables.append(("the official CVDP report's table (* score categories: mean credit)", table.columns(section), table.rows_of(section)))
    for title, columns, rows in tables:
        print_table(console, title, columns, rows)
    benchmark_tables.print_sections(report.get("benchmark_reports", {}), console)
    quality_report.print_section(report.get("quality"), console)
    verification_report.print_section(report.get("verification"), console)
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
