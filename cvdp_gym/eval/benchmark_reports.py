"""Each benchmark's own report, computed from ``eval`` rows as its own scripts compute it, beside ours.

Contract: :func:`benchmark_reports` takes results rows (:func:`cvdp_gym.eval.run.result_row`) and
returns report.json's ``benchmark_reports``: one section per benchmark and task other than CVDP
(CVDP's is its official table, ``OFFICIAL_TABLES``: :mod:`cvdp_gym.benchmarks.cvdp.report`), keyed ``"<benchmark>:<task>"`` (``"<benchmark>"`` for
RTLLM). A section's ``figures`` each have one cell per reading (``columns``); a cell is
``{"value": percentage or None, "of": the denominator, "ci95": [low, high] or None}``, in percent
(0–100) as the benchmarks print them and as papers publish them. The two readings:

- **official**: the benchmark's own verdict (``row["official"]``: its own rule over the whole
  log) in its own script's arithmetic, over every problem, those with a known defect included,
  as the script counts them;
- **ours**: the trusted verdict (``row["passed"]``: only the test bench's own lines count), with
  the problems that have a known defect left out of the denominator.

The verdicts differ where an answer printed the pass words itself (those rows are listed as
``forged``) or reached outside its own design into the test bench or the reference (the static
check's ``reach_in``: instantiating the reference, forcing the test bench's signals, naming its
instances; listed as ``reach_in`` where the benchmark's own rule passes them): both are where
the benchmark's own figure is inflated.

Each benchmark's arithmetic is its plug-in's ``report`` part (``REPORTS``, :mod:`cvdp_gym.plugins`),
built with the helpers of its kit, :mod:`cvdp_gym.eval.report_kit`; the built-in ones:

- VerilogEval v2 (``scripts/sv-iv-analyze``, ``Results.print``): ``pass_rate`` = the mean over
  problems of ``int((npass / nsamples) * 100)`` (printed with 2 decimals); beside it the unbiased
  pass@1 (the mean of c/n) with Wilson's 95% interval over problems; the histogram of its classes.
- VerilogEval v1 (``evaluate_functional_correctness``): the unbiased pass@k for k = 1, 10, 100,
  each only when every problem has at least k samples (its ``(total >= k).all()``).
- RTLLM (``auto_run.py``, ``cal_atk``): per design ``1 − C(n−c, k)/C(n, k)`` of the compiled
  (syntax) and the passing (functional) samples, averaged over the designs *and an appended 0*
  (designs + 1: 51 for v2.0, 30 for v1.1), beside the plain mean over designs, for auto_run's
  rule and the open flows' (``open``). "As auto_run.py on its own copy" also scores 0 the designs
  its own quirks never test (``cvdp_gym.benchmarks.rtllm.report.AUTO_RUN_QUIRKS``). Icarus stands in for VCS.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from cvdp_gym.eval.published import published
from cvdp_gym.eval.report_kit import (
    OFFICIAL_COLUMN,
    OURS_COLUMN,
    OfficialTable,
    Row,
    SectionBuilder,
    name_of,
    official,
    official_pass,
    ours,
    title,
)
from cvdp_gym.harness.results import REACH_IN
from cvdp_gym.plugins import PluginTable

__all__ = ["OFFICIAL_TABLES", "REPORTS", "OfficialTable", "SectionBuilder", "benchmark_reports"]

#: Each benchmark's own arithmetic, by benchmark name (the plug-ins' ``report`` parts).
REPORTS: PluginTable[SectionBuilder] = PluginTable("report", "REPORTS")


#: The official report tables, by benchmark name: the plug-ins' ``report`` parts that list
#: ``OFFICIAL_TABLES`` (CVDP's; the others report through ``REPORTS``).
OFFICIAL_TABLES: PluginTable[OfficialTable] = PluginTable("report", "OFFICIAL_TABLES", optional=True)


def _section(benchmark: str, task: str, rows: list[Row], meta: dict[str, Any]) -> dict[str, Any]:
    by_problem: dict[str, list[Row]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["id"], r["sample"])):
        by_problem[row["id"]].append(row)
    everyone = list(by_problem.values())
    defective = {pid: next(r["defect"] for r in rs if r.get("defect")) for pid, rs in by_problem.items() if any(r.get("defect") for r in rs)}
    clean = [rs for pid, rs in by_problem.items() if pid not in defective]
    sizes = [len(rs) for rs in everyone]
    section: dict[str, Any] = {
        "benchmark": benchmark, "task": task, "title": " ".join(p for p in (title(benchmark), task) if p),
        "problems": len(everyone), "problems_ours": len(clean), "samples": len(rows),
        "samples_per_problem": [min(sizes), max(sizes)],
        "columns": [OFFICIAL_COLUMN, OURS_COLUMN], "figures": [], "headline": [], "notes": [],
        "defects": [
            {"id": pid, "name": name_of(by_problem[pid][0]), "defect": why, "samples": len(by_problem[pid]),
             "official_passed": sum(official_pass(r) for r in by_problem[pid]), "passed": sum(ours(r) for r in by_problem[pid])}
            for pid, why in sorted(defective.items())
        ],
        "forged": [
            {"id": r["id"], "sample": r["sample"], "official": official(r)}
            for rs in everyone for r in rs if official_pass(r) and not ours(r) and r.get("verdict") != REACH_IN
        ],
        "reach_in": [
            {"id": r["id"], "sample": r["sample"], "reason": r.get("reason", ""), "official": official(r)}
            for rs in everyone for r in rs if official_pass(r) and r.get("verdict") == REACH_IN
        ],
    }
    REPORTS[benchmark](section, everyone, clean, meta)
    if section["defects"]:
        section["notes"].append(
            f"{len(defective)} problem(s) with a known benchmark defect: the official figures count them as the "
            f"benchmark's script does ({len(everyone)} problems); ours leaves them out ({len(clean)} problems)."
        )
    if section["forged"]:
        section["notes"].append(
            f"{len(section['forged'])} sample(s) passed only by the official rule: the answer printed the pass words itself."
        )
    reached = sum(r.get("verdict") == REACH_IN for r in rows)
    if reached:
        section["notes"].append(
            f"{reached} sample(s) reached outside their own design (reach_in: the reference, the test bench's signals or "
            f"files); {len(section['reach_in'])} of them pass by the official rule."
        )
    section["published"] = published(benchmark, task, "pass@1")
    return section


def benchmark_reports(rows: Iterable[Row], meta: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """One section per benchmark and task of ``rows`` that has its own report (CVDP and unknown ones left out)."""
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if row.get("benchmark") in REPORTS:
            groups[(row["benchmark"], row.get("task") or "")].append(row)
    return {
        (f"{benchmark}:{task}" if task else benchmark): _section(benchmark, task, groups[(benchmark, task)], meta or {})
        for benchmark, task in sorted(groups)
    }
