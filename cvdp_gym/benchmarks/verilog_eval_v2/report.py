"""VerilogEval v2's report arithmetic (``scripts/sv-iv-analyze``, ``Results.print``): ``pass_rate``
is the mean over problems of ``int((npass / nsamples) * 100)`` (printed with 2 decimals); beside
it the unbiased pass@1 (the mean of c/n) with Wilson's 95% interval over problems, and the
histogram of its classes. A section of :mod:`cvdp_gym.eval.benchmark_reports`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from cvdp_gym.benchmarks.verilog_eval_v2.flow import LABELS
from cvdp_gym.eval.report_kit import (
    NOT_GRADED,
    REACH_IN,
    REACH_IN_LABEL,
    Reading,
    Row,
    cell,
    official,
    official_pass,
    ours,
    pass1_cell,
    settings_note,
)

__all__ = ["REPORTS", "build_section", "ve2_pass_rate"]

VE2_SETTINGS = (
    "published VerilogEval v2 pass@1 settings: n=1 at temperature 0 / top_p 0.01 (low temperature), or n=20 at "
    "temperature 0.8 (the paper; the README says 0.85) / top_p 0.95 (high temperature); sv-generate's max_tokens is 1024"
)


def ve2_pass_rate(groups: Iterable[list[Row]], passed: Reading) -> float | None:
    """``sv-iv-analyze``'s ``pass_rate``: the mean over problems of ``int((npass/nsamples)*100)``."""
    rates = [int((sum(passed(r) for r in rows) / len(rows)) * 100) for rows in groups]
    return sum(rates) / len(rates) if rates else None


def build_section(
    section: dict[str, Any], everyone: list[list[Row]], clean: list[list[Row]], meta: dict[str, Any], *,
    published_settings: str = VE2_SETTINGS,
) -> None:
    """``sv-iv-analyze``'s figures and classes (``published_settings``: how the benchmark's
    published figures were sampled, for the notes)."""
    rate_official, rate_ours = ve2_pass_rate(everyone, official_pass), ve2_pass_rate(clean, ours)
    section["pass_rate_printed"] = None if rate_official is None else f"{rate_official:.2f}"
    section["figures"] = [
        {"name": "pass_rate (sv-iv-analyze: mean of int(100·npass/nsamples))", "k": 1,
         "cells": {"official": cell(rate_official, len(everyone)), "ours": cell(rate_ours, len(clean))}},
        {"name": "pass@1 (unbiased: mean of c/n), 95% CI", "k": 1,
         "cells": {"official": pass1_cell(everyone, official_pass), "ours": pass1_cell(clean, ours)}},
    ]
    rows = [r for rs in everyone for r in rs]
    official_classes = Counter(official(r).get("class") or NOT_GRADED for r in rows)
    our_classes = Counter(official(r).get("verdict_class") or NOT_GRADED for r in rows)
    order = [*LABELS, REACH_IN, NOT_GRADED]
    labels = {**LABELS, REACH_IN: REACH_IN_LABEL}
    section["classes"] = [
        {"class": c, "label": labels.get(c, "not graded: no log (request or grader error)"),
         "official": official_classes.get(c, 0), "ours": our_classes.get(c, 0)}
        for c in order if official_classes.get(c) or our_classes.get(c)
    ]
    section["headline"] = [{"label": "this run: pass@1, official rule", "value": section["figures"][1]["cells"]["official"]["value"]}]
    section["notes"] += [
        "pass_rate is sv-iv-analyze's figure (each problem's rate truncated to a whole percent before the mean); "
        "published pass@1 is the mean of c/n (the unbiased pass@1).",
        "classes (samples of every problem): official = sv-iv-analyze's class over the whole log; ours = the same "
        "rule over the test bench's own lines.",
        settings_note(section, meta) + "; " + published_settings + ".",
    ]


#: This plug-in's report arithmetic, by benchmark (:mod:`cvdp_gym.plugins`).
REPORTS = {"verilog-eval-v2": build_section}
