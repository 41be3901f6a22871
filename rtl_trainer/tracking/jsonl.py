"""The ``jsonl`` logger: ``metrics.jsonl`` in the run directory, always on.

It writes through ``RunLog.log_metrics``, so the file is byte for byte what the loop wrote
before trackers existed; ``--resume`` (running totals, truncation) and ``rtl-train plot``
read it. The rest of the run directory (``config.json``, ``rollouts/``,
``checkpoints.jsonl``) is written by the loop itself, so the other calls do nothing here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rtl_trainer.loop.runlog import RunLog


class JsonlLogger:
    name = "jsonl"

    def __init__(self, log: RunLog) -> None:
        self.log = log

    def run_ref(self) -> dict[str, Any]:
        return {}

    def log_config(self, config: dict[str, Any]) -> None:
        """Nothing: the loop writes ``config.json`` when a run starts (a resumed run keeps it)."""

    def log_metrics(self, step: int, metrics: dict[str, Any]) -> None:
        self.log.log_metrics(step, metrics)

    def log_samples(self, step: int, rows: list[dict[str, Any]]) -> None:
        """Nothing: ``rollouts/step_N.jsonl`` already holds every answer."""

    def log_image(self, step: int, key: str, path: Path) -> None:
        """Nothing: the image is a file in the run directory already."""

    def log_checkpoint(self, step: int, path: Path) -> None:
        """Nothing: ``checkpoints.jsonl`` already records it."""

    def close(self, *, failed: bool = False) -> None:
        """Nothing to close: every line is written and closed as it is logged."""
