"""What a demo stage's outputs were made from: a stage reuses its outputs only when these
inputs are the same as the ones stored beside them (a fingerprint of its settings, the
problems, and a cheap identity of every model folder or checkpoint it reads), and makes
them again otherwise. Outputs with no stored inputs (written before this check) are made
again too: nothing says what they came from."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rtl_trainer.config import TrainConfig

#: ``TrainConfig`` fields an evaluation never reads (training's own): changing one does not
#: make an evaluation again. Every other field (and any field added later) counts.
TRAINING_ONLY = frozenset({
    "mode", "steps", "groups_per_step", "group_size", "learning_rate", "lr_schedule", "lr_warmup_steps",
    "loss_fn", "ppo_clip", "max_steps_off_policy", "num_minibatches", "kl_penalty_coef", "reward_coef",
    "kl_discount_factor", "normalize_advantages_std", "drop_constant_groups", "problem_sampler",
    "curriculum_threshold", "curriculum_window", "adaptive_patience", "adaptive_skip_steps",
    "adaptive_mixed_weight", "save_every", "prices", "eval_every", "eval_samples", "log_to", "wandb_project",
    "mlflow_tracking_uri", "mlflow_experiment", "log_samples", "log_checkpoints", "sft_source", "batch_size",
    "teacher", "teachers", "teacher_renderer", "teacher_workers", "run_dir",
})
#: Where a stage's run directory keeps the inputs it was trained from.
STAGE_INPUTS = "demo_inputs.json"


def identity(path: str | Path) -> Any:
    """A cheap identity of a model folder, checkpoint or file: each file's relative path,
    size and modification time; None for a path that is not there."""
    path = Path(path)
    if path.is_file():
        stat = path.stat()
        return [stat.st_size, stat.st_mtime_ns]
    if not path.is_dir():
        return None
    return {p.relative_to(path).as_posix(): [p.stat().st_size, p.stat().st_mtime_ns]
            for p in sorted(path.rglob("*")) if p.is_file()}


def config_inputs(config: TrainConfig, leave_out: frozenset[str] = frozenset({"run_dir"})) -> dict[str, Any]:
    """The config's fields, less ``leave_out`` (by default only where it writes)."""
    return {k: v for k, v in asdict(config).items() if k not in leave_out}


def digest(inputs: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


def stored_matches(stored: dict[str, Any] | None, inputs: dict[str, Any]) -> bool:
    """Whether ``stored`` (a dict with a ``fingerprint``) was made from ``inputs``."""
    return bool(stored) and stored.get("fingerprint") == digest(inputs)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def claim(folder: Path, inputs: dict[str, Any], record: str = STAGE_INPUTS) -> bool:
    """True when ``folder`` was made from ``inputs`` (reuse or resume it); otherwise empty
    it, record ``inputs`` in it, and return False (make it again)."""
    record_path = folder / record
    if stored_matches(read_json(record_path), inputs):
        return True
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    record_path.write_text(json.dumps({"fingerprint": digest(inputs), "inputs": inputs}, indent=2, default=str))
    return False
