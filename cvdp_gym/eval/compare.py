"""``cvdp-gym compare``: two or more eval runs, each against the first (the baseline).

A run is the folder ``cvdp-gym eval --out`` wrote: its ``results.jsonl`` (one row per
graded answer) and the settings in ``report.json``'s ``meta`` (else ``run.json``). Runs
are compared on the problems both hold, problem by problem: a problem's pass@1 estimate is
the share of its samples that passed, and the run with the higher one wins it.

For the difference in pass@1 (the mean over common problems of the per-problem
differences) the comparison gives two things, for two questions (see
:mod:`cvdp_gym.eval.intervals`):

- how large: a paired bootstrap 95% interval, resampling problems (seeded: the same runs
  always give the same interval); it uses every sample of every problem;
- is there any difference: McNemar's exact two-sided p-value on the problems won and lost
  (ties dropped); problems are the units, so it is exact with one sample per problem and a
  sign test on per-problem rates with several.

Rows are read back strictly: a run folder without ``results.jsonl``, a malformed line or a
row without this version's fields is a ``RunDirError`` naming the file (and line); only a
torn last line (an interrupted run) is skipped, with a warning naming it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cvdp_gym.errors import JsonlError, RunDirError
from cvdp_gym.eval.intervals import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    mcnemar_exact,
    paired_bootstrap,
    wilson,
)
from cvdp_gym.eval.passk import problem_counts
from cvdp_gym.eval.run import RESULTS
from cvdp_gym.eval.tables import markdown_table
from cvdp_gym.grading.result import NOT_JUDGED
from cvdp_gym.jsonl import decode_line, parse_json

__all__ = ["RunData", "compare_runs", "read_run"]

#: Fields every results row of this version has, with their types.
REQUIRED = {"id": str, "sample": int, "passed": bool, "verdict": str}
#: ``meta`` keys that describe one run's execution, not its settings.
NOT_SETTINGS = frozenset({"graded", "wall_s", "notes"})
UNKNOWN = "unknown"
INTERVAL_LABEL = "paired bootstrap over problems, percentile 95% interval"
TEST_LABEL = "McNemar's exact two-sided test on problems won and lost (ties dropped)"


@dataclass
class RunData:
    """One eval run read back: per problem ``[samples, passed]``, its category, its settings."""

    path: Path
    counts: dict[str, list[int]]
    categories: dict[str, str]
    settings: dict[str, Any]
    samples: int
    warnings: list[str] = field(default_factory=list)
    #: The rows kept (the last of each ``(id, sample)``, judged answers only), by problem and sample.
    rows: list[dict[str, Any]] = field(default_factory=list)

    def rate(self, problem: str) -> float:
        n, c = self.counts[problem]
        return c / n

    def summary(self) -> dict[str, Any]:
        return {"dir": str(self.path), "problems": len(self.counts), "samples": self.samples, "settings": self.settings}


def read_run(path: str | Path) -> RunData:
    """The rows and settings of an eval run folder; ``RunDirError`` when it cannot be compared."""
    path = Path(path)
    if not path.is_dir():
        raise RunDirError(f"{path}: no such run folder")
    results = path / RESULTS
    if not results.is_file():
        raise RunDirError(f"{results}: missing; not a folder that `cvdp-gym eval --out` wrote")
    warnings: list[str] = []
    rows = _read_rows(results, warnings)
    kept = {}
    for key, row in rows.items():
        if row["verdict"] == NOT_JUDGED:  # left out of every figure, as eval's report does by default
            continue
        kept[key] = row
    if len(kept) < len(rows):
        warnings.append(f"{results}: {len(rows) - len(kept)} answer(s) not judged (cid009/cid010 without a judge) left out, as eval leaves them out")
    if not kept:
        raise RunDirError(f"{results}: no graded answers")
    ordered = [row for _, row in sorted(kept.items())]
    counts = problem_counts(ordered)
    categories: dict[str, str] = {}
    for row in ordered:
        categories.setdefault(row["id"], row.get("category") or UNKNOWN)
    settings = _settings(path, warnings)
    per_problem = sorted({n for n, _ in counts.values()})
    spread = str(per_problem[0]) if len(per_problem) == 1 else f"{per_problem[0]}-{per_problem[-1]}"
    settings["graded samples per problem"] = spread
    return RunData(path, counts, categories, settings, len(kept), warnings, ordered)


def _read_rows(results: Path, warnings: list[str]) -> dict[tuple[str, int], dict[str, Any]]:
    """Rows by ``(id, sample)`` (a later row replaces an earlier one, as ``--resume`` does)."""
    try:
        lines = results.read_bytes().split(b"\n")
    except OSError as exc:
        raise RunDirError(f"{results}: cannot read: {exc.strerror or exc}") from None
    torn = len(lines) if lines[-1].strip() else None  # a last line with no newline: cut off mid-write
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for number, raw in enumerate(lines, 1):
        where = f"{results}:{number}"
        try:
            text = decode_line(raw, where, first=number == 1)
            if not text.strip():
                continue
            row = parse_json(text, where)
        except JsonlError as exc:
            if number == torn:
                warnings.append(f"{where}: torn last line skipped (an interrupted run; `eval --resume` finishes it)")
                continue
            raise RunDirError(str(exc)) from None
        bad = [name for name, kind in REQUIRED.items() if not _is(row, name, kind)]
        if bad:
            raise RunDirError(
                f"{where}: not a results row of this cvdp-gym version (missing or wrong: {', '.join(bad)})"
            )
        rows[(row["id"], row["sample"])] = row
    return rows


def _is(row: Any, name: str, kind: type) -> bool:
    if not isinstance(row, dict) or name not in row:
        return False
    value = row[name]
    return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


def _settings(path: Path, warnings: list[str]) -> dict[str, Any]:
    """The run's settings: ``report.json``'s meta (else ``run.json``) less its execution fields."""
    for name, pick in (("report.json", lambda d: d.get("meta")), ("run.json", lambda d: d)):
        file = path / name
        if not file.is_file():
            continue
        try:
            meta = pick(json.loads(file.read_text(encoding="utf-8")))
        except (OSError, ValueError, AttributeError) as exc:
            raise RunDirError(f"{file}: cannot read: {type(exc).__name__}: {exc}") from None
        if not isinstance(meta, dict):
            raise RunDirError(f"{file}: not a report of this cvdp-gym version (no meta object)")
        if name == "run.json":
            warnings.append(f"{path}: no report.json; settings from run.json only")
        return {key: value for key, value in meta.items() if key not in NOT_SETTINGS}
    warnings.append(f"{path}: no report.json or run.json; its settings are unknown")
    return {}


def group_comparison(base: RunData, other: RunData, problems: list[str], *, seed: int, resamples: int) -> dict[str, Any]:
    """Pass@1 of both runs on ``problems``, the paired difference, its interval and p-value."""
    a = [base.rate(p) for p in problems]
    b = [other.rate(p) for p in problems]
    n = len(problems)
    wins = sum(y > x for x, y in zip(a, b, strict=True))
    losses = sum(y < x for x, y in zip(a, b, strict=True))
    base_rate, rate = (sum(a) / n, sum(b) / n) if n else (0.0, 0.0)
    return {
        "problems": n,
        "baseline_pass@1": base_rate,
        "baseline_pass@1_ci95": list(wilson(base_rate, n)),
        "pass@1": rate,
        "pass@1_ci95": list(wilson(rate, n)),
        "difference": rate - base_rate,
        "difference_ci95": list(paired_bootstrap([y - x for x, y in zip(a, b, strict=True)], resamples=resamples, seed=seed)),
        "wins": wins,
        "losses": losses,
        "ties": n - wins - losses,
        "p_value": mcnemar_exact(wins, losses),
    }


def _quality_scores(run: RunData) -> dict[str, float]:
    """Per problem, the mean design-quality score of its answers that have one (``eval --quality``)."""
    scores: dict[str, list[float]] = defaultdict(list)
    for row in run.rows:
        score = ((row.get("grade") or {}).get("quality") or {}).get("score")
        if isinstance(score, (int, float)):
            scores[row["id"]].append(float(score))
    return {p: sum(v) / len(v) for p, v in scores.items()}


def quality_comparison(base: RunData, other: RunData, *, seed: int, resamples: int) -> dict[str, Any] | None:
    """Mean quality score of both runs on the problems both measured, the paired difference
    and its bootstrap interval; None when either run measured none."""
    a, b = _quality_scores(base), _quality_scores(other)
    both = sorted(set(a) & set(b))
    if not both:
        return None
    x, y = [a[p] for p in both], [b[p] for p in both]
    return {
        "problems": len(both),
        "baseline_score": sum(x) / len(x),
        "score": sum(y) / len(y),
        "difference": (sum(y) - sum(x)) / len(both),
        "difference_ci95": list(paired_bootstrap([q - p for p, q in zip(x, y, strict=True)], resamples=resamples, seed=seed)),
    }


def quality_line(comparison: dict[str, Any]) -> str | None:
    """One line on the design-quality scores of both runs, where both measured some."""
    q = comparison.get("quality")
    if not q:
        return None
    low, high = q["difference_ci95"]
    return (
        f"design quality (mean score over the {q['problems']} problems both measured; 0.5 = the reference's): "
        f"baseline {q['baseline_score']:.3f}, run {q['score']:.3f}, Δ {q['difference']:+.3f} [{low:+.3f}, {high:+.3f}]"
    )


def _differs(base: RunData, other: RunData, only_base: list[str], only_other: list[str]) -> tuple[dict[str, list[Any]], str]:
    """The settings that differ, and one line saying what differs (problems and settings)."""
    keys = sorted(set(base.settings) | set(other.settings))
    settings = {k: [base.settings.get(k), other.settings.get(k)] for k in keys if base.settings.get(k) != other.settings.get(k)}
    parts = []
    if only_base or only_other:
        parts.append(
            f"problems only in the baseline: {len(only_base)}{_some(only_base)}; only in this run: {len(only_other)}{_some(only_other)}"
        )
    if settings:
        parts.append("settings: " + "; ".join(f"{k} {_show(v[0])} vs {_show(v[1])}" for k, v in settings.items()))
    return settings, ("differs: " + " | ".join(parts)) if parts else "same problems and settings"


def _some(ids: list[str], shown: int = 3) -> str:
    if not ids:
        return ""
    return " (" + ", ".join(ids[:shown]) + (", ..." if len(ids) > shown else "") + ")"


def _show(value: Any) -> str:
    return "(none)" if value is None else json.dumps(value) if not isinstance(value, str) else repr(value)


def compare_pair(base: RunData, other: RunData, *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES) -> dict[str, Any]:
    """``other`` against ``base`` on their common problems, overall and per category."""
    common = sorted(set(base.counts) & set(other.counts))
    if not common:
        raise RunDirError(f"{other.path}: no problem in common with the baseline {base.path}")
    only_base = sorted(set(base.counts) - set(other.counts))
    only_other = sorted(set(other.counts) - set(base.counts))
    settings, line = _differs(base, other, only_base, only_other)
    by_cat: dict[str, list[str]] = defaultdict(list)
    for p in common:
        by_cat[base.categories[p]].append(p)

    def moved(better: bool) -> list[dict[str, Any]]:
        return [
            {"id": p, "category": base.categories[p], "baseline": base.rate(p), "run": other.rate(p)}
            for p in common if (other.rate(p) > base.rate(p) if better else other.rate(p) < base.rate(p))
        ]

    return {
        "run": str(other.path),
        "baseline": str(base.path),
        "common_problems": len(common),
        "only_in_baseline": only_base,
        "only_in_run": only_other,
        "settings_differ": settings,
        "differs": line,
        "overall": group_comparison(base, other, common, seed=seed, resamples=resamples),
        "by_category": {c: group_comparison(base, other, by_cat[c], seed=seed, resamples=resamples) for c in sorted(by_cat)},
        "improved": moved(True),
        "regressed": moved(False),
        "quality": quality_comparison(base, other, seed=seed, resamples=resamples),
    }


def compare_runs(runs: list[RunData], *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES) -> dict[str, Any]:
    """The comparison written as compare.json: each run after the first against the first."""
    if len(runs) < 2:
        raise RunDirError("compare needs at least two run folders")
    base = runs[0]
    return {
        "method": {
            "pass@1": "per problem, the share of its samples that passed; a run's pass@1 is their mean over the common problems",
            "pass@1_ci95": "Wilson score interval over problems",
            "difference_ci95": INTERVAL_LABEL,
            "p_value": TEST_LABEL,
            "seed": seed,
            "resamples": resamples,
        },
        "baseline": base.summary(),
        "runs": [r.summary() for r in runs[1:]],
        "comparisons": [compare_pair(base, other, seed=seed, resamples=resamples) for other in runs[1:]],
        "warnings": [w for r in runs for w in r.warnings],
    }


# ---------------------------------------------------------------- rendering

#: Problems listed per direction in the terminal (compare.md and compare.json list them all).
MOVED_SHOWN = 20


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _rate_cell(rate: float, ci: list[float]) -> str:
    return f"{_pct(rate)} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _points(value: float) -> str:
    return f"{100 * value:+.1f}"


def columns() -> list[str]:
    return [
        "group", "problems", "baseline pass@1 [95% CI]", "pass@1 [95% CI]", "Δ pass@1 (pts)",
        "Δ 95% CI (bootstrap)", "wins", "losses", "ties", "p (McNemar exact)",
    ]


def rows_of(comparison: dict[str, Any]) -> list[list[str]]:
    """One row of cells per group (overall, then each category), matching ``columns``."""
    out = []
    for name, g in [("overall", comparison["overall"]), *comparison["by_category"].items()]:
        low, high = g["difference_ci95"]
        out.append([
            name, str(g["problems"]), _rate_cell(g["baseline_pass@1"], g["baseline_pass@1_ci95"]),
            _rate_cell(g["pass@1"], g["pass@1_ci95"]), _points(g["difference"]), f"[{_points(low)}, {_points(high)}]",
            str(g["wins"]), str(g["losses"]), str(g["ties"]), f"{g['p_value']:.3g}",
        ])
    return out


def _moved_line(label: str, moved: list[dict[str, Any]], limit: int | None) -> str:
    shown = moved if limit is None else moved[:limit]
    items = ", ".join(f"{m['id']} ({_pct(m['baseline'])} → {_pct(m['run'])})" for m in shown)
    more = f", ... {len(moved) - len(shown)} more (compare.md lists all)" if len(shown) < len(moved) else ""
    return f"{label} ({len(moved)}): {items or '-'}{more}"


def moved_lines(comparison: dict[str, Any], limit: int | None = None) -> list[str]:
    """The problems this run does better on (fail → pass with one sample each) and worse on."""
    return [
        _moved_line("better than the baseline (fail → pass)", comparison["improved"], limit),
        _moved_line("worse than the baseline (pass → fail)", comparison["regressed"], limit),
    ]


def method_notes(report: dict[str, Any]) -> list[str]:
    method = report["method"]
    return [
        f"pass@1: {method['pass@1']}; its interval: {method['pass@1_ci95']}.",
        f"Δ 95% CI: {method['difference_ci95']} ({method['resamples']} resamples, seed {method['seed']}).",
        f"p: {method['p_value']}.",
    ]


def title_of(comparison: dict[str, Any]) -> str:
    return f"{comparison['run']} vs {comparison['baseline']} (baseline), {comparison['common_problems']} common problems"


def to_markdown(report: dict[str, Any]) -> str:
    lines = ["# cvdp-gym compare", "", f"- baseline: {report['baseline']['dir']}"]
    lines += [f"- run: {r['dir']}" for r in report["runs"]]
    for comparison in report["comparisons"]:
        lines += ["", f"## {title_of(comparison)}", "", comparison["differs"], ""]
        lines += markdown_table(columns(), rows_of(comparison))
        lines += ["", *(f"- {line}" for line in [*moved_lines(comparison), quality_line(comparison)] if line)]
    lines += ["", "## Notes", "", *(f"- {n}" for n in method_notes(report) + report["warnings"]), ""]
    return "\n".join(lines)


def write_comparison(report: dict[str, Any], out_dir: Path) -> None:
    """compare.json and compare.md in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "compare.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out_dir / "compare.md").write_text(to_markdown(report), encoding="utf-8")
