"""The demo's stages: build the tiny models, SFT, evaluate, train; each skips itself when
its outputs exist and were made from the same inputs (``fingerprint``), so every caller (the
demo, its curriculum and seeds parts) reuses them, and a changed setting or model makes them
again."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console

from rtl_trainer.backends.local import LocalServiceClient
from rtl_trainer.backends.local.runtime import fix_cpu_math
from rtl_trainer.config import TrainConfig
from rtl_trainer.demo.fingerprint import (
    TRAINING_ONLY,
    claim,
    config_inputs,
    digest,
    identity,
    read_json,
    stored_matches,
)
from rtl_trainer.demo.settings import FAMILY, SFT_SOURCES, TEACHER_SOURCE, DemoSettings, base_config
from rtl_trainer.loop.evaluate import evaluate
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.loop.sft import run_sft, supervised_examples
from rtl_trainer.loop.train import Trainer
from rtl_trainer.models import CompactVocab, save_tiny, tiny_model
from rtl_trainer.rendering import get_renderer, offline_tokenizer


def open_demo(out: str | Path, settings: DemoSettings | None, console: Console | None
              ) -> tuple[DemoSettings, Console, Path, TrainConfig]:
    """The settings (the defaults if none), a console, the run directory (created) and the
    base config every part of the demo starts from; the process's CPU math fixed first, as
    ``s.cpu_threads`` says (before the models are made, so that it holds for them too)."""
    s = settings or DemoSettings()
    fix_cpu_math(s.cpu_threads)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return s, console or Console(), out, base_config(out, s)


def end_means(values: list[float]) -> tuple[float | None, float | None, int]:
    """The mean of a per-step metric over the first and over the last few steps (a quarter
    of the run, 1 to 4 steps: the per-step teacher KL is noisy), and that number of steps;
    ``None`` for a metric never logged."""
    ends = max(1, min(4, len(values) // 4))
    if not values:
        return None, None, ends
    return sum(values[:ends]) / ends, sum(values[-ends:]) / ends, ends


def build_models(out: Path, config: TrainConfig) -> tuple[Path, Path]:
    """Tokenizer + compact vocabulary + tiny teacher and student, saved as model folders."""
    teacher_dir, student_dir = out / "models" / "teacher", out / "models" / "student"
    inputs = {"family": FAMILY, "sources": list(SFT_SOURCES), **{k: getattr(config, k) for k in _MODEL_FIELDS}}
    if claim(out / "models", inputs) and (teacher_dir / "config.json").exists() and (student_dir / "config.json").exists():
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


#: What the compact vocabulary (the problems' prompts and answers) and the initial weights depend on.
_MODEL_FIELDS = ("env", "dataset", "benchmark_dir", "ids", "categories", "difficulty", "exclude_simulators",
                 "max_prompt_tokens", "sft_strip_comments", "seed")


def _stage_inputs(config: TrainConfig, model_dir: Path, *states: str | None) -> dict[str, Any]:
    """A trained stage's inputs: its whole config (but where it writes), and the identity of
    the model folder and of every saved state it starts from or asks (teachers included)."""
    models = [model_dir, *(s for s in states if s), *(rule["model"] for rule in config.teachers or [])]
    return {"config": config_inputs(config), "models": {str(m): identity(m) for m in models}}


def _service(model_dir: Path, run_dir: Path, config: TrainConfig, s: DemoSettings) -> LocalServiceClient:
    from rtl_trainer.backends import load_tokenizer

    return LocalServiceClient(load_tokenizer(str(model_dir)), workdir=run_dir, full_finetune=True, device=s.device,
                              cpu_threads=config.cpu_threads)


def sft_stage(name: str, model_dir: Path, steps: int, out: Path, base: TrainConfig, s: DemoSettings, console: Console,
              source: str = TEACHER_SOURCE, start: str | None = None, optimizer: dict[str, Any] | None = None) -> str:
    """SFT ``model_dir`` (or the saved state ``start`` of one) for ``steps`` on answers from
    ``source``, at ``s.sft_lr`` decaying linearly unless ``optimizer`` (config fields) says
    otherwise; returns the final state path."""
    run_dir = out / name
    config = replace(base, mode="sft", student=start or str(model_dir), steps=steps, sft_source=source,
                     batch_size=len(s.ids), run_dir=str(run_dir), save_every=0,
                     **{"learning_rate": s.sft_lr, "lr_schedule": "linear", **(optimizer or {})})
    done = claim(run_dir, _stage_inputs(config, model_dir, start)) and _last_state(run_dir, steps)
    if done:
        return done
    console.rule(f"{name}: {steps} SFT steps" + (" from a checkpoint" if start else ""))
    run_sft(config, _service(model_dir, run_dir, config, s), console=console)
    return _last_state(run_dir, steps) or ""


def _last_state(run_dir: Path, steps: int) -> str | None:
    if not run_dir.exists():
        return None
    checkpoint = RunLog(run_dir).last_checkpoint()
    return checkpoint["state_path"] if checkpoint and checkpoint["step"] == steps - 1 else None


def eval_stage(label: str, state: str, model_dir: Path, out: Path, base: TrainConfig, s: DemoSettings,
               samples: int | None = None) -> dict[str, Any]:
    """Evaluate ``state`` (``s.eval_samples`` or ``samples`` per problem at ``s.temperature``)
    into ``evals/LABEL.json``, with the inputs it came from beside the report; an existing
    file is reused only when those inputs are the same."""
    cache = out / "evals" / f"{label}.json"
    config = replace(base, student=state)
    samples = samples or s.eval_samples
    inputs = {"renderer": FAMILY, "samples": samples, "temperature": s.temperature, "state": state,
              "config": config_inputs(config, TRAINING_ONLY),
              "models": {str(model_dir): identity(model_dir), state: identity(state)}}
    stored = read_json(cache)
    if stored is not None and stored_matches(stored, inputs):
        return {k: v for k, v in stored.items() if k not in _EVAL_KEYS}
    service = _service(model_dir, out / "evals", config, s)
    sampler = service.create_sampling_client(model_path=state)
    renderer = get_renderer(FAMILY, sampler.get_tokenizer())
    report = evaluate(config, sampler, renderer, samples=samples, temperature=s.temperature)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.name}.tmp")
    tmp.write_text(json.dumps({**report, "fingerprint": digest(inputs), "inputs": inputs}, indent=2, default=str))
    tmp.replace(cache)
    return report


#: What an evaluation file holds beside the report.
_EVAL_KEYS = ("fingerprint", "inputs")


def train_stage(mode: str, student_state: str, teacher_state: str | None, model_dir: Path, steps: int,
                out: Path, base: TrainConfig, s: DemoSettings, console: Console, name: str | None = None) -> str:
    run_dir = out / (name or mode)
    config = replace(
        base, mode=mode, student=student_state, teacher=teacher_state, steps=steps, learning_rate=s.rl_lr,
        lr_warmup_steps=s.rl_warmup_steps,
        kl_penalty_coef=s.kl_penalty_coef if mode == "distill" else 0.0, run_dir=str(run_dir), save_every=steps,
    )
    done = claim(run_dir, _stage_inputs(config, model_dir, student_state, teacher_state)) and _last_state(run_dir, steps)
    if done:
        return done
    console.rule(f"{name or mode}: {steps} steps from the weak student")
    Trainer(config, _service(model_dir, run_dir, config, s), console=console).run(resume=(run_dir / "checkpoints.jsonl").exists())
    return _last_state(run_dir, steps) or ""
