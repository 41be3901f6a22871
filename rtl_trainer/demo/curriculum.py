"""``rtl-train demo --with-curriculum``: problem samplers and refinement from the weak student."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from rtl_trainer.demo.settings import STUDENT_SOURCE, DemoSettings
from rtl_trainer.demo.stages import build_models, eval_stage, open_demo, sft_stage, train_stage
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.plot import plot_runs


def run_curriculum_demo(out: str | Path = "runs/demo", settings: DemoSettings | None = None,
                        console: Console | None = None) -> dict[str, Any]:
    """``rtl-train demo --with-curriculum``: adaptive vs uniform problem sampling for RL from
    the same weak student and the same steps, and a refinement evaluation of that student
    (pass@1 after 1 and after ``refine_attempts`` answers with grader feedback). Reuses
    the main demo's models and weak student (building them if absent); writes
    ``curriculum.json`` and ``curriculum.png``."""
    s, console, out, base = open_demo(out, settings, console)
    started = time.monotonic()
    _, student_dir = build_models(out, base)
    weak = sft_stage("student-sft", student_dir, s.student_sft_steps, out, base, s, console, source=STUDENT_SOURCE)
    times: dict[str, float] = {}
    runs: dict[str, Any] = {}
    for sampler in ("uniform", "adaptive"):
        t = time.monotonic()
        name = f"rl-{sampler}"
        config = replace(base, groups_per_step=s.curriculum_groups_per_step, problem_sampler=sampler,
                         adaptive_patience=1, adaptive_skip_steps=2)
        state = train_stage("rl", weak, None, student_dir, s.curriculum_steps, out, config, s, console, name=name)
        report = eval_stage(f"student_{name}", state, student_dir, out, base, s)
        rows = RunLog(out / name).metrics()
        runs[sampler] = {
            "pass_rate": report["pass_rate"],
            "mean_reward": report["mean_reward"],
            **{key: sum(r.get(key, 0.0) for r in rows) / max(1, len(rows))
               for key in ("by_group/frac_mixed", "by_group/frac_all_good", "by_group/frac_all_bad")},
            "train_pass_rate_last_4": sum(r["env/all/pass_rate"] for r in rows[-4:]) / max(1, len(rows[-4:])),
        }
        times[name] = time.monotonic() - t
    t = time.monotonic()
    start = eval_stage("student_start", weak, student_dir, out, base, s)
    refine_base = replace(base, env="CVDP-Refine-v0", refine_max_attempts=s.refine_attempts)
    refine = eval_stage("student_start_refine", weak, student_dir, out, refine_base, s, samples=s.refine_eval_samples)
    times["evals"] = time.monotonic() - t
    after = refine.get("pass_after_attempt") or [0.0]
    refinement = {"pass@1_after_1": after[0], f"pass@1_after_{s.refine_attempts}": after[-1],
                  "pass_after_attempt": after, "feedback": refine_base.refine_feedback,
                  "samples_per_problem": s.refine_eval_samples}
    times["total"] = time.monotonic() - started
    plot = plot_runs([out / "rl-uniform", out / "rl-adaptive"], out / "curriculum.png",
                     ("env/all/pass_rate", "by_group/frac_mixed", "by_group/frac_all_bad", "by_group/frac_all_good"),
                     title="RL from the weak student: uniform vs adaptive problem sampling")
    summary = {"start_pass_rate": start["pass_rate"], "runs": runs, "refinement": refinement, "times_s": times,
               "plot": str(plot), "settings": asdict(s)}
    (out / "curriculum.json").write_text(json.dumps(summary, indent=2))
    table = Table(title=f"problem sampling: {s.curriculum_steps} RL steps, {s.curriculum_groups_per_step} of "
                        f"{len(s.ids)} problems per step (start pass rate {start['pass_rate']:.2f})")
    for column in ("sampler", "pass rate after", "mean reward", "mixed groups", "all-good", "all-bad"):
        table.add_column(column)
    for sampler, r in runs.items():
        table.add_row(sampler, f"{r['pass_rate']:.2f}", f"{r['mean_reward']:.3f}", f"{r['by_group/frac_mixed']:.2f}",
                      f"{r['by_group/frac_all_good']:.2f}", f"{r['by_group/frac_all_bad']:.2f}")
    console.print(table)
    console.print(f"refinement ({refinement['feedback']} feedback): pass@1 after 1 answer {after[0]:.2f}, "
                  f"after {len(after)} answers {after[-1]:.2f}")
    console.print(f"stage times (s): {json.dumps({k: round(v, 1) for k, v in times.items()})}; plot: {plot}")
    return summary
