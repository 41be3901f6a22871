"""The mission in miniature, offline: distil a tiny teacher into a weaker tiny student.

1. Build an offline Qwen tokenizer and two tiny models from a config (no download), with a
   compact vocabulary of the tokens the bundled problems and answers use.
2. SFT the teacher (4 layers, width 256) on the bundled reference solutions until it passes
   them.
3. Give the smaller student (2 layers, width 128) a deliberately weak start: SFT on each
   problem's known-wrong ``functional_bug`` candidate three times as often as on the
   reference. It writes plausible but wrong RTL most of the time (a one-line bug: an
   unsigned shift, swapped edge pulses, a wrong ``valid``), and the right design rarely.
   A student that has never seen the right token gives the teacher nothing to work with:
   the reverse KL's gradient vanishes on a saturated softmax.
4. On-policy distillation of the student from the teacher with the environment's reward
   (and, beside it, RL from the same weak start with the reward alone).
5. Measure pass rates with the real simulator before and after, and plot the runs.

Every stage writes a run directory; a stage whose outputs exist is not run again.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from rtl_trainer.backends.local import LocalServiceClient
from rtl_trainer.config import TrainConfig
from rtl_trainer.loop.evaluate import evaluate
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.loop.sft import run_sft, supervised_examples
from rtl_trainer.loop.train import Trainer
from rtl_trainer.models import CompactVocab, save_tiny, tiny_model
from rtl_trainer.plot import plot_runs
from rtl_trainer.rendering import get_renderer, offline_tokenizer

FAMILY = "qwen3_instruct"
#: What the teacher and the weak student learn from; the compact vocabulary covers both.
TEACHER_SOURCE = "reference"
STUDENT_SOURCE = "3*candidate:functional_bug+reference"
SFT_SOURCES = (TEACHER_SOURCE, STUDENT_SOURCE)


@dataclass
class DemoSettings:
    """Sizes chosen so the whole demo runs in minutes on a 2-core CPU."""

    #: Problems with answers short enough for a tiny model on a CPU (all Icarus, single-shot).
    ids: tuple[str, ...] = (
        "cvdp_gym_alu_flags_0001",
        "cvdp_gym_edge_detector_0001",
        "cvdp_gym_gray_converter_0001",
        "cvdp_gym_priority_encoder_0001",
        "cvdp_gym_sync_fifo_0001",
        "cvdp_gym_traffic_light_0001",
    )
    teacher_sft_steps: int = 160
    student_sft_steps: int = 150
    distill_steps: int = 24
    rl_steps: int = 24
    groups_per_step: int = 6
    group_size: int = 8
    max_prompt_tokens: int = 64
    max_tokens: int = 640  # the longest answer is about 510 tokens
    sft_lr: float = 3e-3
    #: RL/distillation: small steps after a warm-up. A fresh Adam moves every weight by
    #: about the learning rate from its first step, which wrecks a tiny SFT'd model at 1e-4.
    rl_lr: float = 8e-5
    rl_warmup_steps: int = 4
    kl_penalty_coef: float = 1.0
    eval_samples: int = 8
    #: The references simulate in about a second; a sampled infinite loop should not stall a step.
    grade_timeout_s: float = 10.0
    #: Sampling temperature of rollouts and evaluations: below 1 a tiny model derails less
    #: often (0.6 halves the student's build errors against 0.7, and its distillation gain
    #: more than doubled); the loss reweights the samples to the temperature-1 policy.
    temperature: float = 0.6
    seed: int = 0
    # ``--with-curriculum``: RL with uniform vs adaptive problem sampling from the weak
    # student (fewer problems per step than there are, so the sampler has a choice), and
    # the weak student's pass@1 on CVDP-Refine-v0 after 1 and after ``refine_attempts`` answers.
    curriculum_steps: int = 12
    curriculum_groups_per_step: int = 3
    refine_attempts: int = 3
    refine_eval_samples: int = 4


def base_config(out: Path, s: DemoSettings) -> TrainConfig:
    return TrainConfig(
        backend="local",
        renderer=FAMILY,
        teacher_renderer=FAMILY,
        env="CVDP-SingleShot-v0",
        dataset="bundled",
        ids=list(s.ids),
        exclude_simulators=["verilator"],
        full_finetune=True,
        max_prompt_tokens=s.max_prompt_tokens,
        max_tokens=s.max_tokens,
        temperature=s.temperature,
        sft_strip_comments=True,
        groups_per_step=s.groups_per_step,
        group_size=s.group_size,
        grade_workers=2,
        grade_timeout_s=s.grade_timeout_s,
        save_every=0,
        seed=s.seed,
        run_dir=str(out),
    )


def build_models(out: Path, config: TrainConfig) -> tuple[Path, Path]:
    """Tokenizer + compact vocabulary + tiny teacher and student, saved as model folders."""
    teacher_dir, student_dir = out / "models" / "teacher", out / "models" / "student"
    if (teacher_dir / "config.json").exists() and (student_dir / "config.json").exists():
        return teacher_dir, student_dir
    tokenizer = offline_tokenizer(FAMILY)
    renderer = get_renderer(FAMILY, tokenizer)
    examples = [e for source in SFT_SOURCES for e in supervised_examples(replace(config, sft_source=source), renderer)]
    ids = sorted({t for _, tokens, _ in examples for t in tokens})
    vocab = CompactVocab.from_token_ids(ids + list(tokenizer.all_special_ids) + list(renderer.stop_sequences()), len(tokenizer))
    for size, folder in (("teacher", teacher_dir), ("student", student_dir)):
        save_tiny(tiny_model(size, vocab.size, config.seed), vocab, folder)
        tokenizer.save_pretrained(str(folder))
    return teacher_dir, student_dir


def _service(model_dir: Path, run_dir: Path) -> LocalServiceClient:
    from rtl_trainer.backends import load_tokenizer

    return LocalServiceClient(load_tokenizer(str(model_dir)), workdir=run_dir, full_finetune=True)


def sft_stage(name: str, model_dir: Path, steps: int, out: Path, base: TrainConfig, s: DemoSettings, console: Console,
              source: str = TEACHER_SOURCE) -> str:
    """SFT ``model_dir`` for ``steps`` on answers from ``source``; returns the final state path."""
    run_dir = out / name
    config = replace(base, mode="sft", student=str(model_dir), steps=steps, learning_rate=s.sft_lr, sft_source=source,
                     lr_schedule="linear", batch_size=len(s.ids), run_dir=str(run_dir), save_every=0)
    done = _last_state(run_dir, steps)
    if done:
        return done
    console.rule(f"{name}: {steps} SFT steps")
    run_sft(config, _service(model_dir, run_dir), console=console)
    return _last_state(run_dir, steps) or ""


def _last_state(run_dir: Path, steps: int) -> str | None:
    if not run_dir.exists():
        return None
    checkpoint = RunLog(run_dir).last_checkpoint()
    return checkpoint["state_path"] if checkpoint and checkpoint["step"] == steps - 1 else None


def eval_stage(label: str, state: str, model_dir: Path, out: Path, base: TrainConfig, s: DemoSettings,
               samples: int | None = None) -> dict[str, Any]:
    cache = out / "evals" / f"{label}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    service = _service(model_dir, out / "evals")
    sampler = service.create_sampling_client(model_path=state)
    renderer = get_renderer(FAMILY, sampler.get_tokenizer())
    report = evaluate(replace(base, student=state), sampler, renderer, samples=samples or s.eval_samples, temperature=s.temperature)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(report, indent=2))
    return report


def train_stage(mode: str, student_state: str, teacher_state: str | None, model_dir: Path, steps: int,
                out: Path, base: TrainConfig, s: DemoSettings, console: Console, name: str | None = None) -> str:
    run_dir = out / (name or mode)
    done = _last_state(run_dir, steps)
    if done:
        return done
    console.rule(f"{name or mode}: {steps} steps from the weak student")
    config = replace(
        base, mode=mode, student=student_state, teacher=teacher_state, steps=steps, learning_rate=s.rl_lr,
        lr_warmup_steps=s.rl_warmup_steps,
        kl_penalty_coef=s.kl_penalty_coef if mode == "distill" else 0.0, run_dir=str(run_dir), save_every=steps,
    )
    Trainer(config, _service(model_dir, run_dir), console=console).run(resume=(run_dir / "checkpoints.jsonl").exists())
    return _last_state(run_dir, steps) or ""


def run_demo(out: str | Path = "runs/demo", settings: DemoSettings | None = None, console: Console | None = None) -> dict[str, Any]:
    """Run (or resume) every stage and return the summary written to ``summary.json``."""
    s = settings or DemoSettings()
    console = console or Console()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    base = base_config(out, s)
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
    ends = max(1, min(4, len(kl) // 4))  # steps averaged at each end (the per-step KL is noisy)
    learning = {
        "pass_rate_start": evals["student_start"]["pass_rate"],
        "pass_rate_distilled": evals["student_distilled"]["pass_rate"],
        "pass_rate_rise": evals["student_distilled"]["pass_rate"] - evals["student_start"]["pass_rate"],
        "teacher_kl_first_steps": sum(kl[:ends]) / ends if kl else None,
        "teacher_kl_last_steps": sum(kl[-ends:]) / ends if kl else None,
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


def run_curriculum_demo(out: str | Path = "runs/demo", settings: DemoSettings | None = None,
                        console: Console | None = None) -> dict[str, Any]:
    """``rtl-train demo --with-curriculum``: adaptive vs uniform problem sampling for RL from
    the same weak student and the same steps, and a refinement evaluation of that student
    (pass@1 after 1 and after ``refine_attempts`` answers with grader feedback). Reuses
    the main demo's models and weak student (building them if absent); writes
    ``curriculum.json`` and ``curriculum.png``."""
    s = settings or DemoSettings()
    console = console or Console()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    base = base_config(out, s)
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
