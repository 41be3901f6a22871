"""``rtl-train demo --seeds N``: distillation, RL and SFT from the same weak student, N seeds each.

One seed of the demo cannot say whether distillation or RL leads at this scale; this part
runs each method on several seeds and reports the mean and spread of the final pass rate
and of the pass rate against the compute spent.

What the seed varies: the training stages' sampling seeds and problem order, and the
evaluations' sampling (an evaluation of seed s samples with seed s). What is shared: the
tiny models, the SFT'd teacher and the weak student, all the demo's own (built once, in the
same run directory, so they come from a finished ``rtl-train demo`` run), and every setting.
The demo's seed (``settings.seed``) of ``distill`` and ``rl`` is the demo's own runs and
evaluations, so the main job's figures are one of the seeds; the other runs are under
``seeds/seed{s}/{method}`` and their evaluations under ``evals/seed{s}/``.

``sft`` is the baseline that learns from the teacher's data instead of the teacher: SFT of
the weak student on the reference solutions (what the teacher was SFT'd on) for as many
steps as distillation, each step one pass over the problems, with distillation's optimiser
(``sft_optimizer``). Every problem is in every batch, so its training does not depend on
the seed: its spread across seeds is the evaluation's sampling alone, as is the weak
start's. The evaluation problems are the training problems, so this baseline is trained on
the very answers it is graded on; it samples nothing and asks the teacher nothing.

Writes ``seeds.json`` (every run, the statistics, the curves) and ``seeds.png``.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from rtl_trainer.demo.settings import STUDENT_SOURCE, TEACHER_SOURCE, DemoSettings
from rtl_trainer.demo.stages import build_models, eval_stage, open_demo, sft_stage, train_stage
from rtl_trainer.errors import ConfigError
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.plot import plot_bands

#: The demo's own evaluation labels (``evals/LABEL.json``) of its seed.
DEMO_EVALS = {"start": "student_start", "distill": "student_distilled", "rl": "student_rl"}
#: Running totals read from the last row of each run's metrics.jsonl, and the names they get here.
TOTALS = {"total/tokens/sampled": "tokens_sampled", "total/tokens/teacher": "tokens_teacher",
          "total/tokens/trained": "tokens_trained", "total/tokens/prompt": "tokens_prompt"}
CURVE_METRIC = "env/all/pass_rate"


def seed_list(seeds: int | Sequence[int], s: DemoSettings) -> list[int]:
    """``N`` -> the demo's seed and the N-1 after it; a list is taken as given (once each)."""
    chosen = list(range(s.seed, s.seed + seeds)) if isinstance(seeds, int) else list(dict.fromkeys(seeds))
    if not chosen:
        raise ConfigError(f"seeds must be at least one seed, not {seeds!r}")
    return chosen


def method_steps(s: DemoSettings) -> dict[str, int]:
    """Each method and its steps (``rl`` only where the demo runs it; ``sft`` as distillation;
    ``distill-klC`` for each λ of ``seeds_kl_coefs``)."""
    steps = {"distill": s.distill_steps, "rl": s.rl_steps, "sft": s.distill_steps}
    steps.update({kl_method(c): s.distill_steps for c in s.seeds_kl_coefs if c != s.kl_penalty_coef})
    if s.seeds_kl_only:
        steps[KL_ONLY] = s.distill_steps
    return {method: n for method, n in steps.items() if n}


#: Pure on-policy distillation: the teacher's KL alone, no reward (``reward_coef`` 0).
KL_ONLY = "distill-kl-only"


def kl_method(coef: float) -> str:
    """The method name of distillation at λ = ``coef`` (``distill-kl3``)."""
    return f"distill-kl{coef:g}"


def _kl_of(method: str, s: DemoSettings) -> float:
    """λ of a distillation method (``distill`` and ``distill-kl-only``: the demo's)."""
    return s.kl_penalty_coef if method in ("distill", KL_ONLY) else float(method.removeprefix("distill-kl"))


def run_dir_of(out: Path, method: str, seed: int, s: DemoSettings) -> Path:
    """The demo's own ``distill``/``rl`` run for its seed; ``seeds/seed{s}/{method}`` otherwise."""
    if seed == s.seed and method in ("distill", "rl"):
        return out / method
    return out / "seeds" / f"seed{seed}" / method


def eval_label(method: str, seed: int, s: DemoSettings) -> str:
    """The evaluation's name under ``evals/`` (the demo's own for its seed)."""
    if seed == s.seed and method in DEMO_EVALS:
        return DEMO_EVALS[method]
    return f"seed{seed}/student_{method}"


def sft_optimizer(s: DemoSettings) -> dict[str, Any]:
    """The ``sft`` baseline's optimiser: distillation's and RL's (learning rate, warm-up,
    constant schedule), so that only what the student learns from differs. (The demo's SFT
    learning rate, 3e-3, is too large for a fresh Adam on the trained student: build errors
    rise, and it reached 0.52 where 8e-5 to 1e-3 reached 0.92 to 0.98, on one seed.)"""
    return {"learning_rate": s.rl_lr, "lr_warmup_steps": s.rl_warmup_steps, "lr_schedule": "constant"}


def run_seeds(out: str | Path = "runs/demo", seeds: int | Sequence[int] = 3, settings: DemoSettings | None = None,
              console: Console | None = None) -> dict[str, Any]:
    """Run (or resume) every method on every seed; return the summary written to ``seeds.json``."""
    s, console, out, base = open_demo(out, settings, console)
    chosen = seed_list(seeds, s)
    started = time.monotonic()
    teacher_dir, student_dir = build_models(out, base)
    teacher = sft_stage("teacher-sft", teacher_dir, s.teacher_sft_steps, out, base, s, console)
    weak = sft_stage("student-sft", student_dir, s.student_sft_steps, out, base, s, console, source=STUDENT_SOURCE)
    teacher_eval = eval_stage("teacher", teacher, teacher_dir, out, base, s)
    steps = method_steps(s)
    records: list[dict[str, Any]] = []
    times: dict[str, float] = {}
    for seed in chosen:
        t = time.monotonic()
        config = replace(base, seed=seed)
        label = eval_label("start", seed, s)
        records.append(_record(out, "start", seed, 0, None, label, eval_stage(label, weak, student_dir, out, config, s)))
        for method, n in steps.items():
            run_dir = run_dir_of(out, method, seed, s)
            name = run_dir.relative_to(out).as_posix()
            if method == "sft":
                state = sft_stage(name, student_dir, n, out, config, s, console, source=TEACHER_SOURCE, start=weak,
                                  optimizer=sft_optimizer(s))
            elif method.startswith("distill"):
                state = train_stage("distill", weak, teacher, student_dir, n, out,
                                    replace(config, reward_coef=0.0 if method == KL_ONLY else 1.0),
                                    replace(s, kl_penalty_coef=_kl_of(method, s)), console, name=name)
            else:
                state = train_stage(method, weak, None, student_dir, n, out, config, s, console, name=name)
            label = eval_label(method, seed, s)
            report = eval_stage(label, state, student_dir, out, config, s)
            records.append(_record(out, method, seed, n, run_dir, label, report))
        times[f"seed{seed}"] = time.monotonic() - t
    times["total"] = time.monotonic() - started
    groups = {method: [r for r in records if r["method"] == method] for method in ("start", *steps)}
    stats = {method: _stats(rows) for method, rows in groups.items()}
    curves = {method: _curve([Path(r["run_dir"]) for r in rows]) for method, rows in groups.items()
              if method.startswith("distill") or method == "rl"}
    plot = plot_bands(
        curves, out / "seeds.png", y="pass_rate",
        xs=(("tokens_sampled", "tokens sampled (cumulative)"),
            ("tokens_processed", "tokens sampled + scored by the teacher (cumulative)")),
        finals={method: [r["pass_rate"] for r in rows] for method, rows in groups.items()},
        references={"teacher (one evaluation)": teacher_eval["pass_rate"]},
        y_label="pass rate", ylim=(-0.02, 1.02),
        title=f"{len(chosen)} seeds from the weak student. Left, middle: the training samples' pass rate against "
              f"compute (mean, min–max band; SFT samples nothing, so it is not there). Right: the final evaluation "
              f"({s.eval_samples} samples per problem)",
    )
    summary = {
        "seeds": chosen,
        "steps": steps,
        "sft_optimizer": sft_optimizer(s),
        "teacher": {"pass_rate": teacher_eval["pass_rate"], "mean_reward": teacher_eval["mean_reward"],
                    "eval": str(out / "evals" / "teacher.json")},
        "runs": records,
        "stats": stats,
        "curves": curves,
        "times_s": times,
        "plot": str(plot),
        "settings": asdict(s),
    }
    (out / "seeds.json").write_text(json.dumps(summary, indent=2))
    console.print(stats_table(summary, s))
    console.print(seed_table(summary))
    console.print(f"seeds: {out / 'seeds.json'}; plot: {plot}; "
                  f"times (s): {json.dumps({k: round(v, 1) for k, v in times.items()})}")
    return summary


def _record(out: Path, method: str, seed: int, steps: int, run_dir: Path | None, label: str,
            report: dict[str, Any]) -> dict[str, Any]:
    """One run: its final evaluation and its compute, read from its metrics.jsonl (none for
    the weak start, which is not trained here)."""
    rows = _by_step(run_dir) if run_dir else []
    last = rows[-1] if rows else {}
    record: dict[str, Any] = {
        "method": method, "seed": seed, "steps": steps, "run_dir": str(run_dir) if run_dir else None,
        "eval": str(out / "evals" / f"{label}.json"), "pass_rate": report["pass_rate"],
        "mean_reward": report["mean_reward"],
    }
    for key, name in TOTALS.items():
        record[name] = float(last.get(key, 0.0))
    if rows and "total/tokens/trained" not in last:  # SFT logs per step, and only the answer tokens it trains on
        record["tokens_trained"] = float(sum(r.get("tokens/trained", 0.0) for r in rows))
    record["tokens_processed"] = record["tokens_sampled"] + record["tokens_teacher"]
    # The trainer times whole steps; SFT only its forward/backward and optimiser step.
    record["train_time_s"] = float(sum(r.get("time/step", r.get("time/train", 0.0)) for r in rows))
    return record


def _by_step(run_dir: Path) -> list[dict[str, Any]]:
    """Each step's last metrics row, in step order: a stage stopped before its only
    checkpoint starts again from step 0 and appends to its metrics.jsonl."""
    rows = {row["step"]: row for row in RunLog(run_dir).metrics()}
    return [rows[step] for step in sorted(rows)]


def spread(values: Sequence[float]) -> dict[str, float | int | None]:
    """Mean, sample standard deviation (n-1; none for one value), min and max."""
    return {"n": len(values), "mean": statistics.fmean(values),
            "std": statistics.stdev(values) if len(values) > 1 else None, "min": min(values), "max": max(values)}


def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    stats: dict[str, Any] = {"pass_rate": spread([r["pass_rate"] for r in rows]),
                             "mean_reward": spread([r["mean_reward"] for r in rows])}
    for key in ("tokens_sampled", "tokens_teacher", "tokens_processed", "tokens_trained", "train_time_s"):
        stats[key] = statistics.fmean(r[key] for r in rows)
    return stats


def _curve(run_dirs: list[Path]) -> dict[str, list[float]]:
    """Per step that every run logged: the mean cumulative tokens and the training pass rate's
    mean, min and max across the runs (seeds)."""
    runs = [{row["step"]: row for row in _by_step(d) if CURVE_METRIC in row} for d in run_dirs]
    steps = sorted(set.intersection(*(set(r) for r in runs))) if runs else []
    curve: dict[str, list[float]] = {k: [] for k in ("step", "tokens_sampled", "tokens_processed", "pass_rate_mean",
                                                     "pass_rate_min", "pass_rate_max")}
    for step in steps:
        rows = [r[step] for r in runs]
        sampled = [row.get("total/tokens/sampled", 0.0) for row in rows]
        teacher = [row.get("total/tokens/teacher", 0.0) for row in rows]
        ys = [row[CURVE_METRIC] for row in rows]
        curve["step"].append(step)
        curve["tokens_sampled"].append(statistics.fmean(sampled))
        curve["tokens_processed"].append(statistics.fmean(a + b for a, b in zip(sampled, teacher, strict=True)))
        curve["pass_rate_mean"].append(statistics.fmean(ys))
        curve["pass_rate_min"].append(min(ys))
        curve["pass_rate_max"].append(max(ys))
    return curve


def _pm(stat: dict[str, Any]) -> str:
    """``mean ± std (min–max)``, as the table shows it."""
    std = "—" if stat["std"] is None else f"{stat['std']:.2f}"
    return f"{stat['mean']:.2f} ± {std} ({stat['min']:.2f}–{stat['max']:.2f})"


def _tokens(n: float) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e3 else f"{n:.0f}"


def stats_table(summary: dict[str, Any], s: DemoSettings) -> Table:
    """Per method: the final pass rate's ``mean ± std (min–max)`` over the seeds, the mean
    reward, and the mean compute of one run."""
    seeds = summary["seeds"]
    table = Table(title=f"{len(seeds)} seeds ({', '.join(map(str, seeds))}) from the weak student: final pass rate, "
                        f"{s.eval_samples} samples per problem at temperature {s.temperature}, mean ± std (min–max)")
    for column in ("method", "steps", "pass rate", "mean reward", "tokens sampled", "teacher tokens", "tokens trained",
                   "train time (s)"):
        table.add_column(column)
    teacher = summary["teacher"]
    table.add_row("teacher (one eval)", "", f"{teacher['pass_rate']:.2f}", f"{teacher['mean_reward']:.3f}", "", "", "", "")
    for method, stat in summary["stats"].items():
        table.add_row("weak start" if method == "start" else method, str(summary["steps"].get(method, 0)),
                      _pm(stat["pass_rate"]), f"{stat['mean_reward']['mean']:.3f}", _tokens(stat["tokens_sampled"]),
                      _tokens(stat["tokens_teacher"]), _tokens(stat["tokens_trained"]), f"{stat['train_time_s']:.0f}")
    table.caption = ("compute: mean per run; tokens trained: whole sequences for distill and rl, answer tokens "
                     "only for sft (it logs no more)")
    return table


def seed_table(summary: dict[str, Any]) -> Table:
    """The final pass rate of every run, a row per seed."""
    methods = list(summary["stats"])
    table = Table(title="final pass rate per seed")
    for column in ("seed", *("weak start" if m == "start" else m for m in methods)):
        table.add_column(column)
    by = {(r["seed"], r["method"]): r["pass_rate"] for r in summary["runs"]}
    for seed in summary["seeds"]:
        table.add_row(str(seed), *(f"{by[(seed, m)]:.2f}" for m in methods))
    return table
