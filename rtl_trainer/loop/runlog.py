"""The run directory: config, per-step metrics, checkpoints and sampled rollouts.

Everything is appended as it happens (JSONL), so an interrupted run loses nothing that
finished, and ``--resume`` continues from the last checkpoint: metrics of steps after it
(which will be redone) are dropped first, all of them when the run was cut before its
first checkpoint, so each step appears once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cvdp_gym.jsonl import read_objects


class RunLog:
    def __init__(self, run_dir: str | Path) -> None:
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "rollouts").mkdir(exist_ok=True)
        self.metrics_path = self.dir / "metrics.jsonl"
        self.checkpoints_path = self.dir / "checkpoints.jsonl"

    def write_config(self, config: dict[str, Any]) -> None:
        (self.dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")

    def read_config(self) -> dict[str, Any] | None:
        path = self.dir / "config.json"
        return json.loads(path.read_text()) if path.exists() else None

    def log_metrics(self, step: int, metrics: dict[str, Any]) -> None:
        with open(self.metrics_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"step": step, **metrics}) + "\n")

    def metrics(self) -> list[dict[str, Any]]:
        return read_objects(self.metrics_path)

    def log_checkpoint(self, step: int, **paths: Any) -> None:
        with open(self.checkpoints_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"step": step, **paths}) + "\n")

    def last_checkpoint(self) -> dict[str, Any] | None:
        rows = read_objects(self.checkpoints_path)
        return rows[-1] if rows else None

    def resume_point(self) -> dict[str, Any] | None:
        """The last checkpoint, to continue after; metrics of the steps after it are dropped
        first (all of them when there is none, and the run starts over), as they are redone."""
        checkpoint = self.last_checkpoint()
        self.truncate_after(checkpoint["step"] if checkpoint is not None else -1)
        return checkpoint

    def truncate_after(self, step: int) -> None:
        """Drop metrics of steps after ``step`` (they are redone on resume)."""
        kept = [r for r in self.metrics() if r.get("step", -1) <= step]
        self.metrics_path.write_text("".join(json.dumps(r) + "\n" for r in kept))

    def log_rollouts(self, step: int, rollouts: list[dict[str, Any]]) -> Path:
        path = self.dir / "rollouts" / f"step_{step:05d}.jsonl"
        with open(path, "w", encoding="utf-8") as handle:
            for rollout in rollouts:
                handle.write(json.dumps(rollout) + "\n")
        return path
