#!/usr/bin/env python
"""Time a short RL run on the local backend: where does a training step's time go?

Builds the offline demo's tiny teacher (SFT on the bundled references until it writes
passing RTL, so grading really simulates), then runs a few RL steps from it, once on-policy
(sample, grade, train in turn) and once pipelined (``max_steps_off_policy`` 1: the next
step samples and grades while this one trains), and prints per step the time spent
sampling, grading, training and idle waiting on grading alone, and that wait as a share of
the step (target: under 10% once warm).

    .venv/bin/python scripts/bench_trainer.py [--out runs/bench-trainer] [--steps 4] [--grade-cache]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rtl_trainer.demo import DemoSettings, base_config, build_models, sft_stage
from rtl_trainer.demo.stages import _service
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.loop.train import Trainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="runs/bench-trainer")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--sft-steps", type=int, default=160)
    parser.add_argument("--off-policy", type=int, nargs="+", default=[0, 1], help="max_steps_off_policy values to time")
    parser.add_argument("--grade-cache", action="store_true", help="reuse verdicts of identical answers (off: every answer simulates)")
    args = parser.parse_args()
    console = Console(width=130)
    settings = DemoSettings(teacher_sft_steps=args.sft_steps)
    out = Path(args.out)
    base = base_config(out, settings)
    teacher_dir, _ = build_models(out, base)
    state = sft_stage("teacher-sft", teacher_dir, settings.teacher_sft_steps, out, base, settings, console)
    summary = []
    for depth in args.off_policy:
        run = out / f"rl-offpolicy{depth}"
        if run.exists():
            shutil.rmtree(run)
        config = replace(base, mode="rl", student=state, steps=args.steps, learning_rate=1e-5, run_dir=str(run),
                         save_every=0, grade_cache=args.grade_cache, max_steps_off_policy=depth)
        Trainer(config, _service(teacher_dir, run), console=console).run()
        rows = RunLog(run).metrics()
        table = Table(title=f"max_steps_off_policy={depth}: step time split "
                            f"({config.groups_per_step} groups x {config.group_size} samples, tiny model, CPU)")
        for column in ("step", "step (s)", "sample (s)", "grade work (s)", "train (s)", "grade wait (s)", "wait share", "pass rate"):
            table.add_column(column)
        for row in rows:
            table.add_row(
                str(row["step"]), f"{row['time/step']:.1f}", f"{row['time/sample']:.1f}", f"{row['time/grade']:.1f}",
                f"{row['time/train']:.1f}", f"{row['time/grade_wait']:.2f}", f"{row['time/grade_wait_share']:.1%}",
                f"{row['env/all/pass_rate']:.2f}",
            )
        console.print(table)
        warm = rows[1:] or rows
        summary.append((depth, statistics.median(r["time/grade_wait_share"] for r in warm),
                        statistics.median(r["time/step"] for r in warm), sum(r["time/grade"] for r in warm)))
    for depth, share, step_s, grade_s in summary:
        console.print(
            f"max_steps_off_policy={depth}: warm median grade-wait share {share:.1%} (target < 10%), "
            f"median step {step_s:.1f} s, grading work {grade_s:.1f} s"
        )


if __name__ == "__main__":
    main()
