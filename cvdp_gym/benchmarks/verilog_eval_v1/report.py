"""VerilogEval v1's report arithmetic (``evaluate_functional_correctness``): the unbiased pass@k
for k = 1, 10, 100, each only when every problem has at least k samples (its
``(total >= k).all()``). A section of :mod:`cvdp_gym.eval.benchmark_reports`.
"""

from __future__ import annotations

from typing import Any

from cvdp_gym.eval.report_kit import (
    Row,
    cell,
    mean_pass_at_k,
    official_pass,
    ours,
    pass1_cell,
    settings_note,
)

__all__ = ["REPORTS", "build_section"]

#: ``evaluate_functional_correctness``'s default k values.
VE1_KS = (1, 10, 100)


def build_section(section: dict[str, Any], everyone: list[list[Row]], clean: list[list[Row]], meta: dict[str, Any]) -> None:
    figures, skipped = [], []
    for k in VE1_KS:
        if k == 1:
            cells = {"official": pass1_cell(everyone, official_pass), "ours": pass1_cell(clean, ours)}
        else:
            cells = {"official": cell(mean_pass_at_k(everyone, official_pass, k), len(everyone)),
                     "ours": cell(mean_pass_at_k(clean, ours, k), len(clean))}
        if cells["official"]["value"] is None and cells["ours"]["value"] is None:
            skipped.append(k)
            continue
        figures.append({"name": f"pass@{k} (unbiased)" + (", 95% CI" if k == 1 else ""), "k": k, "cells": cells})
    section["figures"] = figures
    section["headline"] = [{"label": "this run: pass@1, official rule", "value": figures[0]["cells"]["official"]["value"]}]
    if skipped:
        section["notes"].append(
            f"pass@{', pass@'.join(map(str, skipped))} not computed: evaluate_functional_correctness reports pass@k "
            "only when every problem has at least k samples."
        )
    section["notes"].append(settings_note(section, meta) + ".")


#: This plug-in's report arithmetic, by benchmark (:mod:`cvdp_gym.plugins`).
REPORTS = {"verilog-eval-v1": build_section}
