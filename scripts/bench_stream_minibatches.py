#!/usr/bin/env python
"""Time RL steps with and without streaming minibatches (``num_minibatches``) on the demo's settings.

Reuses a demo output directory (``rtl-train demo``; stages already finished are not run
again, so an existing one is only read): its weak student (the ``student-sft`` stage) and
its settings (6 problems a step, 8 samples each, answers up to 640 tokens, real grading).
From that student, a few RL steps per ``num_minibatches`` value, every answer simulated
(no grade cache, so no configuration reuses another's verdicts), and one table side by
side: mean step time and its split (sampling, waiting on grading after the last sample,
training still outstanding once the step was graded) and how long training overlapped the
step's grading. The first step of each run is left out of the means (warm-up) when there
are more.

    .venv/bin/python scripts/bench_stream_minibatches.py [--demo-dir runs/demo] [--out runs/bench-stream] [--steps 3] [--minibatches 1 2 3 6]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rtl_trainer.demo import (
    STUDENT_SOURCE,
    DemoSettings,
    _service,
    base_config,
    build_models,
    sft_stage,
)
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.loop.train import Trainer

#: Columns: header -> metrics.jsonl key (means over the warm steps).
COLUMNS = {
    "step (s)": "time/step",
    "sample (s)": "time/sample",
    "grade wait (s)": "time/grade_wait",
    "score (s)": "time/score",
    "train (s)": "time/train",
    "train overlap (s)": "time/train_overlap",
    "early minibatches": "stream/early_minibatches",
    "grading work (s)": "time/grade",
    "pass rate": "env/all/pass_rate",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--demo-dir", default="runs/demo", help="a demo output directory (its weak student is reused)")
    parser.add_argument("--out", default="runs/bench-stream", help="where the benchmark's RL runs go")
    parser.add_argument("--steps", type=int, default=3, help="RL steps per configuration")
    parser.add_argument("--minibatches", type=int, nargs="+", default=[1, 2, 3, 6], help="num_minibatches values to time")
    parser.add_argument("--grade-cache", action="store_true", help="reuse verdicts of identical answers (off: every answer simulates)")
    args = parser.parse_args()
    console = Console(width=150)
    settings = DemoSettings()
    demo = Path(args.demo_dir)
    base = base_config(demo, settings)
    _, student_dir = build_models(demo, base)
    weak = sft_stage("student-sft", student_dir, settings.student_sft_steps, demo, base, settings, console, source=STUDENT_SOURCE)
    if not Path(weak).exists():  # recorded relative to where the demo ran: find it under --demo-dir
        weak = str(demo / "student-sft" / "checkpoints" / Path(weak).name)
    out = Path(args.out)
    results: list[tuple[int, list[dict]]] = []
    for n in args.minibatches:
        run = out / f"rl-minibatches{n}"
        if run.exists():
            shutil.rmtree(run)
        config = replace(
            base, mode="rl", student=weak, steps=args.steps, learning_rate=settings.rl_lr,
            lr_warmup_steps=settings.rl_warmup_steps, run_dir=str(run), save_every=0,
            grade_cache=args.grade_cache, num_minibatches=n,
        )
        console.rule(f"num_minibatches={n}: {args.steps} RL steps")
        Trainer(config, _service(student_dir, run), console=console).run()
        rows = RunLog(run).metrics()
        results.append((n, rows[1:] or rows))
    warm = "steps 1.." if args.steps > 1 else "step 0"
    table = Table(title=f"RL step time by num_minibatches: demo settings ({settings.groups_per_step} groups x "
                        f"{settings.group_size} samples, weak tiny student, local backend), mean over {warm}")
    table.add_column("num_minibatches")
    for header in COLUMNS:
        table.add_column(header, justify="right")
    for n, rows in results:
        means = {key: statistics.mean(float(r[key]) for r in rows) for key in COLUMNS.values()}
        table.add_row(str(n), *(f"{means[key]:.2f}" for key in COLUMNS.values()))
    console.print(table)


if __name__ == "__main__":
    main()
