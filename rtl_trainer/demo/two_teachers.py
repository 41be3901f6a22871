"""``rtl-train demo --two-teachers``: one student, two teachers, each expert on half the problems.

Two copies of the tiny teacher are SFT'd on disjoint halves of the demo's problems, so each
passes its own half and not the other's. The weak student is then distilled with
``teachers`` rules that send each problem to the teacher that knows it, and the per-teacher
KL and the per-half pass rates show each half was taught by its own teacher. Reuses the main
demo's models and weak student; writes ``two_teachers.json`` and ``two_teachers.png``.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from rtl_trainer.demo.settings import STUDENT_SOURCE, DemoSettings, base_config
from rtl_trainer.demo.stages import (
    build_models,
    end_means,
    eval_stage,
    open_demo,
    sft_stage,
    train_stage,
)
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.plot import plot_runs

NAMES = ("a", "b")


def halves(ids: tuple[str, ...]) -> dict[str, list[str]]:
    """The problem sets of teachers ``a`` and ``b``: the first and second half of ``ids``."""
    middle = len(ids) // 2
    return {"a": list(ids[:middle]), "b": list(ids[middle:])}


def _set_rate(report: dict[str, Any], ids: list[str]) -> float:
    rates = [report["per_problem"][pid] for pid in ids if pid in report["per_problem"]]
    return sum(rates) / len(rates) if rates else 0.0


def run_two_teachers_demo(out: str | Path = "runs/demo", settings: DemoSettings | None = None,
                          console: Console | None = None) -> dict[str, Any]:
    """Run (or resume) the two-teacher stages and return what ``two_teachers.json`` holds."""
    s, console, out, base = open_demo(out, settings, console)
    started = time.monotonic()
    times: dict[str, float] = {}
    teacher_dir, student_dir = build_models(out, base)
    weak = sft_stage("student-sft", student_dir, s.student_sft_steps, out, base, s, console, source=STUDENT_SOURCE)
    sets = halves(s.ids)
    states: dict[str, str] = {}
    for name in NAMES:
        t = time.monotonic()
        half = replace(s, ids=tuple(sets[name]))
        states[name] = sft_stage(f"teacher-{name}-sft", teacher_dir, s.teacher_sft_steps, out,
                                 base_config(out, half), half, console)
        times[f"teacher_{name}_sft"] = time.monotonic() - t
    t = time.monotonic()
    evals = {f"teacher_{n}": eval_stage(f"teacher_{n}", states[n], teacher_dir, out, base, s) for n in NAMES}
    evals["student_start"] = eval_stage("student_start", weak, student_dir, out, base, s)
    times["evals_start"] = time.monotonic() - t
    rules = [{"name": n, "model": states[n], "renderer": base.teacher_renderer, "problems": sets[n]} for n in NAMES]
    t = time.monotonic()
    distilled = train_stage("distill", weak, None, student_dir, s.distill_steps, out, replace(base, teachers=rules), s,
                            console, name="distill-two-teachers")
    times["distill"] = time.monotonic() - t
    t = time.monotonic()
    evals["student_distilled"] = eval_stage("student_distilled_two_teachers", distilled, student_dir, out, base, s)
    times["eval_distilled"] = time.monotonic() - t
    rows = RunLog(out / "distill-two-teachers").metrics()
    kl = {}
    for name in NAMES:
        first, last, _ = end_means([r[f"teacher_kl/{name}"] for r in rows if f"teacher_kl/{name}" in r])
        kl[name] = {"first_steps": first, "last_steps": last}
    by_set = {label: {n: _set_rate(report, sets[n]) for n in NAMES} for label, report in evals.items()}
    times["total"] = time.monotonic() - started
    plot = plot_runs([out / "distill-two-teachers"], out / "two_teachers.png",
                     ("env/all/pass_rate", "teacher_kl/a", "teacher_kl/b", "teacher_kl"),
                     title="one student, two teachers (each SFT'd on half the problems)")
    summary = {"sets": sets, "pass_rate_by_set": by_set, "pass_rate": {k: v["pass_rate"] for k, v in evals.items()},
               "teacher_kl": kl, "times_s": times, "plot": str(plot), "settings": asdict(s)}
    (out / "two_teachers.json").write_text(json.dumps(summary, indent=2))
    table = Table(title="two teachers: pass rate on each teacher's problem set (real simulator grading)")
    for column in ("model", "set a", "set b", "all"):
        table.add_column(column)
    for label, rates in by_set.items():
        table.add_row(label, f"{rates['a']:.2f}", f"{rates['b']:.2f}", f"{evals[label]['pass_rate']:.2f}")
    console.print(table)
    console.print("teacher KL (mean of the first and last steps): " + ", ".join(
        f"{n} {kl[n]['first_steps']:.3f} -> {kl[n]['last_steps']:.3f}" for n in NAMES if kl[n]["first_steps"] is not None))
    console.print(f"stage times (s): {json.dumps({k: round(v, 1) for k, v in times.items()})}; plot: {plot}")
    return summary
