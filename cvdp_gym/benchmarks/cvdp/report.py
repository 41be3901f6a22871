"""CVDP's report arithmetic: the official CVDP report's table, computed from ``eval`` results the
way the official tool computes it, so a number here can stand next to a published one. ``eval``
reads it by name (``OFFICIAL_TABLES``, :data:`cvdp_gym.eval.benchmark_reports.OFFICIAL_TABLES`) into
report.json's ``official_report``.

The official reporter (``src/report.py`` for one run, ``run_reporter.py`` for ``n`` samples)
splits categories in two (``src/constants.py``):

- **threshold** categories (every harness category): a problem passes a sample when all its
  tests pass; its value is ``1 − (1 − c/n)^k`` (the official, biased pass@k; ``c`` passing
  samples of ``n``), shown here beside the unbiased ``1 − C(n−c, k)/C(n, k)``;
- **score** categories (cid006, cid008, cid009, cid010): a problem's value is its mean
  credit over its samples (BLEU-2, or the judge's score), whatever ``k`` is.

A group's figure (category × difficulty, a category, a difficulty, everything) is the
mean of its problems' values: the official "Passed Problems / Total Problems", where a
score problem adds its fractional credit to "Passed Problems". (The official multi-sample
reporter gives every problem of a category × difficulty that group's per-sample mean and
averages those over samples: the same figure when every problem has all ``n`` samples.)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from cvdp_gym.data.problems import COMPREHENSION_CATEGORIES, CVDP, difficulty_order
from cvdp_gym.eval.passk import pass_at_k
from cvdp_gym.eval.report_kit import OfficialTable, SectionBuilder

Row = dict[str, Any]
OVERALL = "all"
TOTAL = "total"
LABEL = (
    "the official CVDP report's figures: threshold categories (harness problems) 1 − (1 − c/n)^k per problem, "
    "beside the unbiased 1 − C(n−c, k)/C(n, k); score categories (marked *: cid006/cid008 BLEU-2, cid009/cid010 "
    "judge score) the mean credit per problem, for every k; each group is the mean over its problems"
)


def is_score_category(category: str) -> bool:
    return category in COMPREHENSION_CATEGORIES


def _credit(row: Row) -> float:
    credit = row.get("credit")
    return float(credit) if credit is not None else float(bool(row.get("passed")))


def problem_values(rows: Iterable[Row], k: int) -> list[dict[str, Any]]:
    """Per problem: its category, difficulty, samples and its official and unbiased values at ``k``."""
    by_problem: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_problem[row["id"]].append(row)
    out = []
    for pid, samples in sorted(by_problem.items()):
        category, difficulty = samples[0].get("category") or "unknown", samples[0].get("difficulty") or "unknown"
        n = len(samples)
        if is_score_category(category):
            official = unbiased = sum(_credit(r) for r in samples) / n
        else:
            c = sum(bool(r.get("passed")) for r in samples)
            official = 1.0 - (1.0 - c / n) ** k  # the official formula needs no k <= n
            unbiased = pass_at_k(n, c, k) if n >= k else None
        out.append({"id": pid, "category": category, "difficulty": difficulty, "samples": n, "official": official, "unbiased": unbiased})
    return out


def _group(values: list[dict[str, Any]]) -> dict[str, Any]:
    eligible = [v["unbiased"] for v in values if v["unbiased"] is not None]
    passed = sum(v["official"] for v in values)
    return {
        "problems": len(values),
        "passed": passed,
        "official": passed / len(values) if values else None,
        "unbiased": sum(eligible) / len(eligible) if eligible else None,
        "unbiased_problems": len(eligible),
    }


def official_table(rows: list[Row], k: int) -> list[dict[str, Any]]:
    """Rows of the official table at ``k``: each category × difficulty, each category's
    total, each difficulty's total, then everything (``category`` ``all``)."""
    values = problem_values(rows, k)
    table = []
    categories = sorted({v["category"] for v in values})
    for category in categories:
        mine = [v for v in values if v["category"] == category]
        for difficulty in sorted({v["difficulty"] for v in mine}, key=difficulty_order):
            table.append({"category": category, "difficulty": difficulty, "score": is_score_category(category),
                          **_group([v for v in mine if v["difficulty"] == difficulty])})
        table.append({"category": category, "difficulty": TOTAL, "score": is_score_category(category), **_group(mine)})
    for difficulty in sorted({v["difficulty"] for v in values}, key=difficulty_order):
        table.append({"category": OVERALL, "difficulty": difficulty, "score": False,
                      **_group([v for v in values if v["difficulty"] == difficulty])})
    table.append({"category": OVERALL, "difficulty": TOTAL, "score": False, **_group(values)})
    return table


def official_report(rows: list[Row], ks: list[int]) -> dict[str, Any]:
    """The ``official_report`` section of report.json: the table at every ``k``."""
    return {"label": LABEL, "tables": {str(k): official_table(rows, k) for k in ks}}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def columns(section: dict[str, Any]) -> list[str]:
    cols = ["category", "difficulty", "problems"]
    for k in section["tables"]:
        cols += [f"pass@{k} official", f"pass@{k} unbiased"]
    return cols


def rows_of(section: dict[str, Any]) -> list[list[str]]:
    """Formatted cells, one row per group, matching :func:`columns`."""
    tables = list(section["tables"].values())
    out = []
    for i, first in enumerate(tables[0]):
        name = first["category"] + ("*" if first["score"] else "")
        cells = [name, first["difficulty"], str(first["problems"])]
        for table in tables:
            entry = table[i]
            unbiased = _pct(entry["unbiased"])
            if entry["unbiased"] is not None and entry["unbiased_problems"] < entry["problems"]:
                unbiased += f" ({entry['unbiased_problems']}/{entry['problems']})"
            cells += [_pct(entry["official"]), unbiased]
        out.append(cells)
    return out


#: CVDP has no ``benchmark_reports`` section (the benchmarks' own-script sections): its own
#: report is the official table, below.
REPORTS: dict[str, SectionBuilder] = {}
#: The official CVDP report's table, by benchmark name (:mod:`cvdp_gym.plugins`).
OFFICIAL_TABLES = (OfficialTable(CVDP, official_report, columns, rows_of),)
