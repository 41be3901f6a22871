"""The experiment-tracking seam: what a training loop tells a tracker, and how a tracker is
found again on ``--resume``.

A ``Logger`` is one destination (``jsonl``, ``wandb``, ``mlflow``; one module each). The
loops talk to ``Tracking`` (``tracker.py``), which fans out to every logger of ``log_to``.
Calls come from the loop's own thread, one step at a time: ``log_config`` once, then per
step ``log_metrics``, ``log_samples`` and (when one is saved) ``log_checkpoint``, then
``log_image`` (the run's plot) and ``close``.

A logger that reopens a run says how in ``run_ref()`` (a JSON object: the run id and where
it lives); ``Tracking`` keeps those in the run directory's ``tracking.json`` and hands each
back to its logger on resume, so the resumed run continues the same tracked run.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from rtl_trainer.errors import TrackingError

#: The run directory's record of the tracked runs (logger name -> ``run_ref()``).
TRACKING_FILE = "tracking.json"
#: The columns of the per-step sample table (one row per answer).
SAMPLE_COLUMNS = ("step", "problem_id", "reward", "passed", "failure_class", "reason", "answer")


class Logger(Protocol):
    """One destination of a run's config, metrics, samples, plot and checkpoints."""

    #: The ``log_to`` name (``jsonl``, ``wandb``, ``mlflow``).
    name: str

    def run_ref(self) -> dict[str, Any]:
        """What reopens this run later (``{}`` when there is nothing to reopen)."""
        ...

    def log_config(self, config: dict[str, Any]) -> None:
        """The run's ``TrainConfig`` (hyperparameters), as ``config.json`` holds it."""
        ...

    def log_metrics(self, step: int, metrics: dict[str, Any]) -> None:
        """One step's metrics, exactly as ``metrics.jsonl`` gets them."""
        ...

    def log_samples(self, step: int, rows: list[dict[str, Any]]) -> None:
        """A table of the step's answers and their grades (``SAMPLE_COLUMNS``)."""
        ...

    def log_image(self, step: int, key: str, path: Path) -> None:
        """A PNG file (the run's plot)."""
        ...

    def log_checkpoint(self, step: int, path: Path) -> None:
        """A saved state directory, as an artifact."""
        ...

    def close(self, *, failed: bool = False) -> None:
        """End the tracked run (``failed``: training raised)."""
        ...


def require(module: str, extra: str) -> ModuleType:
    """Import an optional tracking library, or raise a ``TrackingError`` naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise TrackingError(
            f"log_to {extra} needs the {module} package, which is not installed: "
            f"pip install 'cvdp-gym[{extra}]' (or pip install -e '.[{extra}]' in a checkout)"
        ) from exc


def run_name(run_dir: str | Path) -> str:
    """The tracked run's display name: the run directory's name."""
    return Path(run_dir).resolve().name or "rtl-train"


def artifact_name(text: str) -> str:
    """``text`` with only the characters artifact names allow (letters, digits, ``-_.``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "run"


def sample_rows(step: int, summaries: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` rollout summaries (``Rollout.summary()``) as sample-table rows:
    the answer is the last turn's text; every column has one type (``""`` for none)."""
    rows = []
    for summary in summaries[:limit]:
        turns = summary.get("turns") or []
        rows.append({
            "step": step,
            "problem_id": str(summary.get("problem_id", "")),
            "reward": float(summary.get("reward") or 0.0),
            "passed": bool(summary.get("passed")),
            "failure_class": str(summary.get("failure_class") or summary.get("error") or ""),
            "reason": str(summary.get("reason") or ""),
            "answer": str(turns[-1]) if turns else "",
        })
    return rows
