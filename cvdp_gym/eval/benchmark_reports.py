"""Each benchmark's own report, computed from ``eval`` rows as its own scripts compute it, beside ours.

Contract: :func:`benchmark_reports` takes results rows (:func:`cvdp_gym.eval.run.result_row`) and
returns report.json's ``benchmark_reports``: one section per benchmark and task other than CVDP
(CVDP's is :mod:`cvdp_gym.eval.official`), keyed ``"<benchmark>:<task>"`` (``"<benchmark>"`` for
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
the benchmark's own figure is inflated. Each benchmark's arithmetic:

- VerilogEval v2 (``scripts/sv-iv-analyze``, ``Results.print``): ``pass_rate`` = the mean over
  problems of ``int((npass / nsamples) * 100)`` (printed with 2 decimals); beside it the unbiased
  pass@1 (the mean of c/n) with Wilson's 95% interval over problems; the histogram of its classes.
- VerilogEval v1 (``evaluate_functional_correctness``): the unbiased pass@k for k = 1, 10, 100,
  each only when every problem has at least k samples (its ``(total >= k).all()``).
- RTLLM (``auto_run.py``, ``cal_atk``): per design ``1 − C(n−c, k)/C(n, k)`` of the compiled
  (syntax) and the passing (functional) samples, averaged over the designs *and an appended 0*
  (designs + 1: 51 for v2.0, 30 for v1.1), beside the plain mean over designs, for auto_run's
  rule and the open flows' (``open``). "As auto_run.py on its own copy" also scores 0 the designs
  its own quirks never test (:data:`AUTO_RUN_QUIRKS`). Icarus stands in for VCS.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from cvdp_gym.eval.intervals import wilson
from cvdp_gym.eval.passk import pass_at_k
from cvdp_gym.eval.published import published
from cvdp_gym.harness.flows.verilog_eval import LABELS
from cvdp_gym.harness.results import REACH_IN

__all__ = ["AUTO_RUN_QUIRKS", "TITLES", "benchmark_reports", "ve2_pass_rate"]

Row = dict[str, Any]
Reading = Callable[[Row], bool]
VE2, VE1, RTLLM2, RTLLM11 = "verilog-eval-v2", "verilog-eval-v1", "rtllm-v2", "rtllm-v1.1"
TITLES = {VE2: "VerilogEval v2", VE1: "VerilogEval v1", RTLLM2: "RTLLM v2.0", RTLLM11: "RTLLM v1.1"}
#: The designs in each RTLLM version's auto_run.py list (its figure divides by these + 1).
RTLLM_DESIGNS = {RTLLM2: 50, RTLLM11: 29}
#: VerilogEval v1's k values (``evaluate_functional_correctness``'s default) and RTLLM's published ones.
VE1_KS, RTLLM_KS = (1, 10, 100), (1, 5, 10)
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
NOT_GRADED = "-"
REACH_IN_LABEL = "reached outside its own design (the static check's reach_in; never run as a pass)"
OFFICIAL_COLUMN = {"key": "official", "label": "official rule, every problem"}
OURS_COLUMN = {"key": "ours", "label": "ours (test bench's own lines), defects left out"}
VE2_SETTINGS = (
    "published VerilogEval v2 pass@1 settings: n=1 at temperature 0 / top_p 0.01 (low temperature), or n=20 at "
    "temperature 0.8 (the paper; the README says 0.85) / top_p 0.95 (high temperature); sv-generate's max_tokens is 1024"
)


def official(row: Row) -> dict[str, Any]:
    return row.get("official") or {}


def official_pass(row: Row) -> bool:
    """The benchmark's own verdict: RTLLM's by the problem's rule, VerilogEval's ``passed``."""
    verdict = official(row)
    return bool(verdict.get(verdict["rule"]) if verdict.get("rule") else verdict.get("passed"))


def ours(row: Row) -> bool:
    return bool(row.get("passed"))


def compiled(row: Row) -> bool:
    return bool(official(row).get("compiled"))


def name_of(row: Row) -> str:
    """The benchmark's own problem name (``verilog-eval-v2.spec-to-rtl.Prob001_zero`` → ``Prob001_zero``)."""
    prefix = ".".join(p for p in (row.get("benchmark"), row.get("task")) if p) + "."
    return row["id"][len(prefix):] if row["id"].startswith(prefix) else row["id"]


def cell(value: float | None, of: int, ci: tuple[float, float] | None = None) -> dict[str, Any]:
    return {"value": value, "of": of, "ci95": None if ci is None else [100 * ci[0], 100 * ci[1]]}


def ve2_pass_rate(groups: Iterable[list[Row]], passed: Reading) -> float | None:
    """``sv-iv-analyze``'s ``pass_rate``: the mean over problems of ``int((npass/nsamples)*100)``."""
    rates = [int((sum(passed(r) for r in rows) / len(rows)) * 100) for rows in groups]
    return sum(rates) / len(rates) if rates else None


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


def _settings_note(section: dict[str, Any], meta: dict[str, Any]) -> str:
    low, high = section["samples_per_problem"]
    samples = str(low) if low == high else f"{low}–{high}"
    temperature = meta.get("temperature")
    sampling = f"temperature {temperature}" if temperature is not None else "temperature not recorded (answers from a file)"
    return f"this run: {samples} sample(s) per problem, {sampling}"


def _ve2(section: dict[str, Any], everyone: list[list[Row]], clean: list[list[Row]], meta: dict[str, Any]) -> None:
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
        _settings_note(section, meta) + "; " + VE2_SETTINGS + ".",
    ]


def _ve1(section: dict[str, Any], everyone: list[list[Row]], clean: list[list[Row]], meta: dict[str, Any]) -> None:
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
    section["notes"].append(_settings_note(section, meta) + ".")


def auto_run_passed(row: Row) -> bool:
    return bool(official(row).get("auto_run"))


def open_passed(row: Row) -> bool:
    return bool(official(row).get("open"))


def _rtllm(section: dict[str, Any], everyone: list[list[Row]], clean: list[list[Row]], meta: dict[str, Any]) -> None:
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
        _settings_note(section, meta) + ".",
    ]
    full = RTLLM_DESIGNS.get(benchmark)
    if full and designs != full:
        section["notes"].append(f"this run covers {designs} of {TITLES[benchmark]}'s {full} designs; the ÷ columns count the designs run.")
    skipped = [k for k in RTLLM_KS if k not in ks]
    if skipped:
        section["notes"].append(f"pass@{', pass@'.join(map(str, skipped))} not computed: a design has fewer than k samples.")


BUILDERS = {VE2: _ve2, VE1: _ve1, RTLLM2: _rtllm, RTLLM11: _rtllm}


def _section(benchmark: str, task: str, rows: list[Row], meta: dict[str, Any]) -> dict[str, Any]:
    by_problem: dict[str, list[Row]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["id"], r["sample"])):
        by_problem[row["id"]].append(row)
    everyone = list(by_problem.values())
    defective = {pid: next(r["defect"] for r in rs if r.get("defect")) for pid, rs in by_problem.items() if any(r.get("defect") for r in rs)}
    clean = [rs for pid, rs in by_problem.items() if pid not in defective]
    sizes = [len(rs) for rs in everyone]
    section: dict[str, Any] = {
        "benchmark": benchmark, "task": task, "title": " ".join(p for p in (TITLES.get(benchmark, benchmark), task) if p),
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
    BUILDERS[benchmark](section, everyone, clean, meta)
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
        if row.get("benchmark") in BUILDERS:
            groups[(row["benchmark"], row.get("task") or "")].append(row)
    return {
        (f"{benchmark}:{task}" if task else benchmark): _section(benchmark, task, groups[(benchmark, task)], meta or {})
        for benchmark, task in sorted(groups)
    }
