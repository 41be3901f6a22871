"""The ``wandb`` logger: a Weights & Biases run (extra ``wandb``).

One W&B run per run directory, named after it, in ``wandb_project`` (else ``WANDB_PROJECT``,
else ``rtl-train``); W&B's own variables apply (``WANDB_ENTITY``, ``WANDB_API_KEY``,
``WANDB_MODE=offline``). Its local files go to ``WANDB_DIR``, else the run directory. Metrics
are logged at the trainer's step, the answers as a ``wandb.Table`` (key ``samples``), the
plot as a ``wandb.Image`` and checkpoints as ``model`` artifacts. On resume the same run is
reopened by id (``resume="allow"``); W&B keeps the first value of a step that a resumed
run redoes (steps after the last checkpoint) and drops the second.

``wandb`` is imported when a logger is made, never at module import.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import TrackingError
from rtl_trainer.tracking.base import SAMPLE_COLUMNS, artifact_name, require, run_name

DEFAULT_PROJECT = "rtl-train"


class WandbLogger:
    name = "wandb"

    def __init__(self, config: TrainConfig, ref: dict[str, Any] | None = None) -> None:
        self.wandb = require("wandb", "wandb")
        ref = ref or {}
        project = config.wandb_project or ref.get("project") or os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT
        directory = Path(os.environ.get("WANDB_DIR") or config.run_dir)
        directory.mkdir(parents=True, exist_ok=True)
        self._name = run_name(config.run_dir)
        try:
            self.run = self.wandb.init(
                project=project,
                name=self._name,
                dir=str(directory),
                id=ref.get("run_id"),
                resume="allow" if ref.get("run_id") else None,
            )
        except Exception as exc:
            raise TrackingError(f"W&B could not start the run: {exc}") from exc

    def run_ref(self) -> dict[str, Any]:
        return {"run_id": self.run.id, "project": self.run.project}

    def log_config(self, config: dict[str, Any]) -> None:
        self.run.config.update(config, allow_val_change=True)

    def log_metrics(self, step: int, metrics: dict[str, Any]) -> None:
        self.run.log(dict(metrics), step=step)

    def log_samples(self, step: int, rows: list[dict[str, Any]]) -> None:
        table = self.wandb.Table(columns=list(SAMPLE_COLUMNS), data=[[r[c] for c in SAMPLE_COLUMNS] for r in rows])
        self.run.log({"samples": table}, step=step)

    def log_image(self, step: int, key: str, path: Path) -> None:
        self.run.log({key: self.wandb.Image(str(path))}, step=step)

    def log_checkpoint(self, step: int, path: Path) -> None:
        artifact = self.wandb.Artifact(artifact_name(f"{self._name}-checkpoint"), type="model", metadata={"step": step})
        artifact.add_dir(str(path))
        self.run.log_artifact(artifact, aliases=[f"step{step}"])

    def close(self, *, failed: bool = False) -> None:
        self.run.finish(exit_code=1 if failed else 0)
