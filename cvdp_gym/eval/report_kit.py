"""What a benchmark plug-in's ``report`` part builds its section with: rows, readings, cells.

A plug-in's ``REPORTS`` maps its benchmark's name to a :data:`SectionBuilder`, which fills a
section of :func:`cvdp_gym.eval.benchmark_reports.benchmark_reports` (its contract: the two
readings, ``official`` and ``ours``, and a cell's shape) from these helpers. A plug-in imports
them from here, never from :mod:`cvdp_gym.eval.benchmark_reports`, the module whose table
loads it (a plug-in importing its loader is an import cycle: ``scripts/import_graph.py``
counts the table's load as an edge).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cvdp_gym.data.benchmarks.catalog import BENCHMARKS
from cvdp_gym.eval.intervals import wilson
from cvdp_gym.eval.passk import pass_at_k
from cvdp_gym.harness.results import REACH_IN

__all__ = [
    "NOT_GRADED",
    "OFFICIAL_COLUMN",
    "OURS_COLUMN",
    "REACH_IN",
    "REACH_IN_LABEL",
    "OfficialTable",
    "Reading",
    "Row",
    "SectionBuilder",
    "cell",
    "compiled",
    "mean_pass_at_k",
    "name_of",
    "official",
    "official_pass",
    "ours",
    "pass1_cell",
    "settings_note",
    "title",
]

Row = dict[str, Any]
Reading = Callable[[Row], bool]
#: Fills a section's ``figures``, ``headline`` and notes from its rows: ``(section, every
#: problem's rows, the rows of problems without a known defect, the run's meta)``.
SectionBuilder = Callable[[dict[str, Any], list[list[Row]], list[list[Row]], dict[str, Any]], None]
NOT_GRADED = "-"
REACH_IN_LABEL = "reached outside its own design (the static check's reach_in; never run as a pass)"
OFFICIAL_COLUMN = {"key": "official", "label": "official rule, every problem"}
OURS_COLUMN = {"key": "ours", "label": "ours (test bench's own lines), defects left out"}



def title(benchmark: str) -> str:
    """The benchmark's title (``RTLLM v2.0``), or its name if no plug-in knows it."""
    return BENCHMARKS[benchmark].title if benchmark in BENCHMARKS else benchmark


def official(row: Row) -> dict[str, Any]:
    """The benchmark's own verdict of ``row`` (empty when none was taken)."""
    return row.get("official") or {}


def official_pass(row: Row) -> bool:
    """The benchmark's own verdict: RTLLM's by the problem's rule, VerilogEval's ``passed``."""
    verdict = official(row)
    return bool(verdict.get(verdict["rule"]) if verdict.get("rule") else verdict.get("passed"))


def ours(row: Row) -> bool:
    """The trusted verdict: only the test bench's own lines count."""
    return bool(row.get("passed"))


def compiled(row: Row) -> bool:
    """Whether the benchmark's own run compiled the answer (RTLLM's syntax figure)."""
    return bool(official(row).get("compiled"))


def name_of(row: Row) -> str:
    """The benchmark's own problem name (``verilog-eval-v2.spec-to-rtl.Prob001_zero`` → ``Prob001_zero``)."""
    prefix = ".".join(p for p in (row.get("benchmark"), row.get("task")) if p) + "."
    return row["id"][len(prefix):] if row["id"].startswith(prefix) else row["id"]


def cell(value: float | None, of: int, ci: tuple[float, float] | None = None) -> dict[str, Any]:
    """One figure's cell: a percentage (None: not computable) of ``of``, with its interval in percent."""
    return {"value": value, "of": of, "ci95": None if ci is None else [100 * ci[0], 100 * ci[1]]}


def mean_pass_at_k(groups: list[list[Row]], passed: Reading, k: int, *, extra_zero: bool = False) -> float | None:
    """The mean over problems of the unbiased pass@k, in percent (``extra_zero``: auto_run.py's appended 0)."""
    if not groups or any(len(rows) < k for rows in groups):
        return None
    values = [pass_at_k(len(rows), sum(passed(r) for r in rows), k) for rows in groups]
    return 100 * sum(values) / (len(values) + extra_zero)


def pass1_cell(groups: list[list[Row]], passed: Reading) -> dict[str, Any]:
    """pass@1 (the mean of c/n) with Wilson's 95% interval over problems (:mod:`cvdp_gym.eval.intervals`)."""
    value = mean_pass_at_k(groups, passed, 1)
    return cell(value, len(groups), None if value is None else wilson(value / 100, len(groups)))


def settings_note(section: dict[str, Any], meta: dict[str, Any]) -> str:
    """The note saying how many samples per problem, at what temperature, a section's figures are of."""
    low, high = section["samples_per_problem"]
    samples = str(low) if low == high else f"{low}–{high}"
    temperature = meta.get("temperature")
    sampling = f"temperature {temperature}" if temperature is not None else "temperature not recorded (answers from a file)"
    return f"this run: {samples} sample(s) per problem, {sampling}"


@dataclass(frozen=True)
class OfficialTable:
    """A benchmark's official report table over its rows, beside ours (report.json's
    ``official_report``): CVDP's, as its official reporter computes it."""

    #: The benchmark whose rows it reads (``Problem.benchmark``).
    name: str
    #: The section from the rows at each k: ``(rows, ks) -> section``.
    report: Callable[[list[Row], list[int]], dict[str, Any]]
    #: The section's column names, and its formatted cells (one row per group).
    columns: Callable[[dict[str, Any]], list[str]]
    rows_of: Callable[[dict[str, Any]], list[list[str]]]
