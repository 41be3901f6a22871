"""RTLLM's report arithmetic (``auto_run.py``, ``cal_atk``): per design ``1 − C(n−c, k)/C(n, k)``
of the compiled (syntax) and the passing (functional) samples, averaged over the designs *and an
appended 0* (designs + 1: 51 for v2.0, 30 for v1.1), beside the plain mean over designs, for
auto_run's rule and the open flows' (``open``). "As auto_run.py on its own copy" also scores 0
the designs its own quirks never test (:data:`AUTO_RUN_QUIRKS`). Icarus stands in for VCS.
A section of :mod:`cvdp_gym.eval.benchmark_reports`.
"""

from __future__ import annotations

from typing import Any

from cvdp_gym.eval.report_kit import (
    OURS_COLUMN,
    Reading,
    Row,
    cell,
    compiled,
    mean_pass_at_k,
    name_of,
    official,
    ours,
    settings_note,
    title,
)

__all__ = ["AUTO_RUN_QUIRKS", "REPORTS", "build_section"]

RTLLM2, RTLLM11 = "rtllm-v2", "rtllm-v1.1"
#: The designs in each RTLLM version's auto_run.py list (its figure divides by these + 1).
RTLLM_DESIGNS = {RTLLM2: 50, RTLLM11: 29}
#: RTLLM's published k values.
RTLLM_KS = (1, 5, 10)
#: Designs auto_run.py on its own copy never tests, so they score 0 in its figure.
AUTO_RUN_QUIRKS = {
    RTLLM2: {
        "freq_divbyfrac": "auto_run.py's design list spells it freq_divfrac, so freq_divfrac/makefile is never found",
        "freq_div": "its makefile compiles /home/coguest/luyao/SmallDesigns/chatgpt35/t5/freq_div.v (the authors' "
                    "machine) instead of the answer",
    },
    RTLLM11: {
        "freq_div": "its makefile compiles /home/coguest/luyao/SmallDesigns/chatgpt35/t5/freq_div.v (the authors' "
                    "machine) instead of the answer",
    },
}


def auto_run_passed(row: Row) -> bool:
    return bool(official(row).get("auto_run"))


def open_passed(row: Row) -> bool:
    return bool(official(row).get("open"))


def build_section(section: dict[str, Any], everyone: list[list[Row]], clean: list[list[Row]], meta: dict[str, Any]) -> None:
    benchmark, designs = section["benchmark"], len(everyone)
    quirks = AUTO_RUN_QUIRKS.get(benchmark, {})
    rules = sorted({str(official(r).get("rule") or "auto_run") for rs in everyone for r in rs})
    run_rule = rules[0] if len(rules) == 1 else None

    def on_own_copy(passed: Reading) -> Reading:
        """``passed``, except on the designs auto_run.py's own copy never tests (n samples, none passing)."""
        return lambda row: name_of(row) not in quirks and passed(row)

    def readings(name: str, k: int, passed: Reading, *, own: bool, our: Reading | None) -> dict[str, Any]:
        return {"name": name, "k": k, "cells": {
            "own_copy": cell(mean_pass_at_k(everyone, on_own_copy(passed), k, extra_zero=True) if own else None, designs + 1),
            "auto_run": cell(mean_pass_at_k(everyone, passed, k, extra_zero=True), designs + 1),
            "mean": cell(mean_pass_at_k(everyone, passed, k), designs),
            "ours": cell(mean_pass_at_k(clean, our, k) if our else None, len(clean)),
        }}

    ks = [k for k in RTLLM_KS if all(len(rs) >= k for rs in everyone)]
    section["figures"] = [
        figure
        for k in ks
        for figure in (
            readings(f"syntax pass@{k} (compiled)", k, compiled, own=True, our=compiled),
            readings(f"functional pass@{k}, auto_run rule", k, auto_run_passed, own=True, our=ours if run_rule == "auto_run" else None),
            readings(f"functional pass@{k}, open rule", k, open_passed, own=False, our=ours if run_rule == "open" else None),
        )
    ]
    section["columns"] = [
        {"key": "own_copy", "label": f"as auto_run.py on its own copy (÷{designs + 1}, its quirk designs 0)"},
        {"key": "auto_run", "label": f"auto_run.py's arithmetic, no quirks (÷{designs + 1})"},
        {"key": "mean", "label": f"mean over designs (÷{designs})"},
        OURS_COLUMN,
    ]
    functional = section["figures"][1]["cells"]  # pass@1 by auto_run's rule (every design has a sample)
    section["headline"] = [
        {"label": f"this run: functional pass@1, as auto_run.py on its own copy (÷{designs + 1})", "value": functional["own_copy"]["value"]},
        {"label": f"this run: functional pass@1, auto_run.py's arithmetic (÷{designs + 1})", "value": functional["auto_run"]["value"]},
        {"label": f"this run: functional pass@1, mean over designs (÷{designs})", "value": functional["mean"]["value"]},
    ]
    syntax_any = sum(any(on_own_copy(compiled)(r) for r in rs) for rs in everyone)
    func_any = sum(any(on_own_copy(auto_run_passed)(r) for r in rs) for rs in everyone)
    section["notes"] += [
        "RTLLM's official flow runs Synopsys VCS; every figure here is auto_run.py's rule on Icarus "
        "(compiled: the simulator binary was built; auto_run rule: \"Pass\" or \"pass\" in the output within 8 s; "
        "open rule: TuRTLe's \"Passed\" and no \"ERROR\").",
        f"auto_run.py's cal_atk appends a 0 to the per-design list, so it divides by designs + 1 ({designs + 1} here); "
        f"× {designs + 1}/{designs} gives the mean over designs. It prints pass@1 only; pass@5 and pass@10 are the "
        "same arithmetic as papers report it. It expects one flat folder per design (v2.0 nests them: run it on a "
        "flattened copy).",
        *(f"auto_run.py quirk: {design}: {why}; it scores 0 in the \"own copy\" column." for design, why in quirks.items()),
        f"auto_run.py also prints total_syntax_success: {syntax_any}/{designs} and total_func_success: {func_any}/{designs} "
        "(designs with at least one compiled / passing sample, on its own copy).",
        f"ours applies the run's rule ({run_rule or ' and '.join(rules)}) to the test bench's own lines.",
        settings_note(section, meta) + ".",
    ]
    full = RTLLM_DESIGNS.get(benchmark)
    if full and designs != full:
        section["notes"].append(f"this run covers {designs} of {title(benchmark)}'s {full} designs; the ÷ columns count the designs run.")
    skipped = [k for k in RTLLM_KS if k not in ks]
    if skipped:
        section["notes"].append(f"pass@{', pass@'.join(map(str, skipped))} not computed: a design has fewer than k samples.")


#: This plug-in's report arithmetic, by benchmark (:mod:`cvdp_gym.plugins`).
REPORTS = {RTLLM2: build_section, RTLLM11: build_section}
