"""``rtl-train demo``: every stage of the offline miniature, its table, summary and plot."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from rtl_trainer.demo.settings import STUDENT_SOURCE, DemoSettings
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


def run_demo(out: str | Path = "runs/demo", settings: DemoSettings | None = None, console: Console | None = None) -> dict[str, Any]:
    """Run (or resume) every stage and return the summary written to ``summary.json``."""
    s, console, out, base = open_demo(out, settings, console)
    times: dict[str, float] = {}
    started = time.monotonic()
    t = time.monotonic()
    teacher_dir, student_dir = build_models(out, base)
    times["models"] = time.monotonic() - t
    t = time.monotonic()
    teacher = sft_stage("teacher-sft", teacher_dir, s.teacher_sft_steps, out, base, s, console)
    times["teacher_sft"] = time.monotonic() - t
    t = time.monotonic()
    weak = sft_stage("student-sft", student_dir, s.student_sft_steps, out, base, s, console, source=STUDENT_SOURCE)
    times["student_sft"] = time.monotonic() - t
    t = time.monotonic()
    evals = {
        "teacher": eval_stage("teacher", teacher, teacher_dir, out, base, s),
        "student_start": eval_stage("student_start", weak, student_dir, out, base, s),
    }
    times["eval_start"] = time.monotonic() - t
    t = time.monotonic()
    distilled = train_stage("distill", weak, teacher, student_dir, s.distill_steps, out, base, s, console)
    times["distill"] = time.monotonic() - t
    t = time.monotonic()
    evals["student_distilled"] = eval_stage("student_distilled", distilled, student_dir, out, base, s)
    times["eval_distilled"] = time.monotonic() - t
    t = time.monotonic()
    rl = train_stage("rl", weak, None, student_dir, s.rl_steps, out, base, s, console) if s.rl_steps else None
    times["rl"] = time.monotonic() - t
    if rl:
        t = time.monotonic()
        evals["student_rl"] = eval_stage("student_rl", rl, student_dir, out, base, s)
        times["eval_rl"] = time.monotonic() - t
    times["total"] = time.monotonic() - started
    runs = [out / "distill"] + ([out / "rl"] if rl else [])
    plot = plot_runs(runs, out / "learning.png", ("env/all/pass_rate", "env/all/reward/total", "teacher_kl", "entropy"),
                     title="tiny student: on-policy distillation vs RL (bundled CVDP problems)")
    kl = [row["teacher_kl"] for row in RunLog(out / "distill").metrics() if "teacher_kl" in row]
    kl_first, kl_last, ends = end_means(kl)
    learning = {
        "pass_rate_start": evals["student_start"]["pass_rate"],
        "pass_rate_distilled": evals["student_distilled"]["pass_rate"],
        "pass_rate_rise": evals["student_distilled"]["pass_rate"] - evals["student_start"]["pass_rate"],
        "teacher_kl_first_steps": kl_first,
        "teacher_kl_last_steps": kl_last,
    }
    if rl:
        learning["pass_rate_rl"] = evals["student_rl"]["pass_rate"]
    summary = {
        "pass_rate": {k: v["pass_rate"] for k, v in evals.items()},
        "learning": learning,
        "evals": evals,
        "times_s": times,
        "plot": str(plot),
        "settings": asdict(s),
        "math": _math(s),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    table = Table(title="offline distillation demo (real simulator grading)")
    table.add_column("model")
    table.add_column("pass rate")
    table.add_column("mean reward")
    for name, report in evals.items():
        table.add_row(name, f"{report['pass_rate']:.2f}", f"{report['mean_reward']:.3f}")
    console.print(table)
    console.print(
        f"distillation: pass rate {learning['pass_rate_start']:.2f} -> {learning['pass_rate_distilled']:.2f} "
        f"({learning['pass_rate_rise']:+.2f}); teacher KL {learning['teacher_kl_first_steps']:.3f} -> "
        f"{learning['teacher_kl_last_steps']:.3f} (mean of the first and last {ends} steps)"
    )
    console.print(f"stage times (s): {json.dumps({k: round(v, 1) for k, v in times.items()})}; plot: {plot}")
    return summary


def _math(s: DemoSettings) -> dict[str, Any]:
    """What computed the figures: two machines with the same get the same figures."""
    import torch

    return {"device": s.device, "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpu_kernels": torch.backends.cpu.get_cpu_capability()}
