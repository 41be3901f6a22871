"""Experiment tracking: where a run's config, metrics, answers, plot and checkpoints go.

``log_to`` (``--log-to jsonl,wandb,mlflow``) picks the loggers; ``metrics.jsonl`` (the
``jsonl`` logger) is always written, since ``--resume`` and ``rtl-train plot`` read it.
``base`` (the ``Logger`` protocol, ``tracking.json``), one module per logger (``jsonl``,
``wandb_backend``, ``mlflow_backend``; the last two import their library only when used)
and ``tracker`` (``Tracking``, the loops' handle on all of them).
"""

from rtl_trainer.tracking.base import SAMPLE_COLUMNS, TRACKING_FILE, Logger
from rtl_trainer.tracking.jsonl import JsonlLogger
from rtl_trainer.tracking.tracker import Tracking

__all__ = ["SAMPLE_COLUMNS", "TRACKING_FILE", "JsonlLogger", "Logger", "Tracking"]
