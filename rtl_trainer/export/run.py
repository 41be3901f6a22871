"""Which checkpoint of a run directory to export, and which backend wrote it.

A run directory (``loop/runlog.py``) holds ``config.json`` (the ``TrainConfig``, whose
``backend`` says who trained it) and ``checkpoints.jsonl``: one ``{"step", "state_path"}``
row per ``save_state``, in order. The latest row wins unless a step is asked for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cvdp_gym.jsonl import read_objects
from rtl_trainer.errors import CheckpointNotFoundError, InvalidCheckpointError


@dataclass(frozen=True)
class RunCheckpoint:
    """One saved state of a run: its step, its path as the backend returned it (a local
    folder, or a ``tinker://`` path) and the run's backend and base model setting."""

    run_dir: Path
    backend: str
    student: str
    step: int
    state_path: str


def find_checkpoint(run_dir: str | Path, step: int | None = None) -> RunCheckpoint:
    """The checkpoint of ``step`` (default: the latest) in ``run_dir``."""
    run_dir = Path(run_dir)
    config_file = run_dir / "config.json"
    if not config_file.is_file():
        raise CheckpointNotFoundError(f"{run_dir} is no run directory (no config.json)")
    config = json.loads(config_file.read_text(encoding="utf-8"))
    rows = read_objects(run_dir / "checkpoints.jsonl") if (run_dir / "checkpoints.jsonl").is_file() else []
    rows = [r for r in rows if isinstance(r.get("step"), int) and r.get("state_path")]
    if not rows:
        raise CheckpointNotFoundError(f"{run_dir} has no checkpoint yet (checkpoints.jsonl lists none)")
    if step is None:
        row = rows[-1]
    else:
        matching = [r for r in rows if r["step"] == step]
        if not matching:
            saved = ", ".join(str(s) for s in sorted({r["step"] for r in rows}))
            raise CheckpointNotFoundError(f"{run_dir} has no checkpoint at step {step}; saved steps: {saved}")
        row = matching[-1]
    return RunCheckpoint(run_dir, str(config.get("backend", "local")), str(config.get("student", "")), row["step"], str(row["state_path"]))


def require_backend(checkpoint: RunCheckpoint, backend: str) -> None:
    """Refuse a run of another backend than ``backend`` (by its config and its paths)."""
    tinker_path = checkpoint.state_path.startswith("tinker://")
    if checkpoint.backend != backend or (backend == "local" and tinker_path):
        actual = "tinker" if tinker_path else checkpoint.backend
        raise InvalidCheckpointError(
            f"{checkpoint.run_dir} was trained with the {actual} backend, not {backend} "
            f"(checkpoint {checkpoint.state_path})"
        )
