"""``Tracking``: the loops' one handle on every logger of ``log_to``.

``Tracking.open`` makes the loggers (``jsonl`` always, first), records each tracked run in
the run directory's ``tracking.json`` and, on resume, reopens the runs recorded there. A
missing library or a service that refuses the run raises ``TrackingError`` then, before
any training. After that, ``metrics.jsonl`` is the record and a remote service is a
convenience: the first exception a remote logger raises prints one warning, that logger is
dropped, and training goes on with the others (``jsonl``'s own errors are not caught).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from rtl_trainer.config import TrainConfig
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.tracking.base import TRACKING_FILE, Logger, sample_rows
from rtl_trainer.tracking.jsonl import JsonlLogger

#: The run's plot, drawn into the run directory at the end of a run with a remote logger.
PLOT_FILE = "metrics.png"


def _open_logger(name: str, config: TrainConfig, ref: dict[str, Any] | None) -> Logger:
    if name == "wandb":
        from rtl_trainer.tracking.wandb_backend import WandbLogger

        return WandbLogger(config, ref)
    from rtl_trainer.tracking.mlflow_backend import MlflowLogger

    return MlflowLogger(config, ref)


class Tracking:
    """Fans each call out to the loggers; drops a remote one (with a warning) when it fails."""

    def __init__(self, config: TrainConfig, log: RunLog, loggers: list[Logger], *, console: Console | None = None) -> None:
        self.config = config
        self.log = log
        self.loggers = loggers
        self.console = console or Console()
        self.last_step: int | None = None

    @classmethod
    def open(cls, config: TrainConfig, log: RunLog, *, resume: bool = False, console: Console | None = None) -> Tracking:
        """The loggers of ``config.log_to``, reopening ``tracking.json``'s runs on ``resume``,
        with the config logged to each."""
        path = log.dir / TRACKING_FILE
        refs: dict[str, Any] = json.loads(path.read_text()) if resume and path.exists() else {}
        loggers: list[Logger] = [JsonlLogger(log)]
        try:
            for name in config.trackers:
                if name != "jsonl":
                    loggers.append(_open_logger(name, config, refs.get(name)))
        except BaseException:
            for logger in loggers:
                logger.close(failed=True)
            raise
        remote = {logger.name: logger.run_ref() for logger in loggers if logger.name != "jsonl"}
        if remote:
            path.write_text(json.dumps({**refs, **remote}, indent=2) + "\n")
        tracking = cls(config, log, loggers, console=console)
        tracking._each("log_config", config.to_json())
        return tracking

    @property
    def remote(self) -> bool:
        """Whether any logger besides ``jsonl`` is still active."""
        return any(logger.name != "jsonl" for logger in self.loggers)

    def _each(self, method: str, *args: Any, **kwargs: Any) -> None:
        for logger in list(self.loggers):
            if logger.name == "jsonl":
                getattr(logger, method)(*args, **kwargs)
                continue
            try:
                getattr(logger, method)(*args, **kwargs)
            except Exception as exc:
                self.loggers.remove(logger)
                self.console.print(
                    f"[yellow]warning:[/] {logger.name} tracking failed ({escape(type(exc).__name__)}: "
                    f"{escape(str(exc))}); it is off for the rest of this run, metrics.jsonl goes on",
                    soft_wrap=True,
                )

    def log_metrics(self, step: int, metrics: dict[str, Any]) -> None:
        self.last_step = step
        self._each("log_metrics", step, metrics)

    def log_samples(self, step: int, summaries: list[dict[str, Any]]) -> None:
        """The first ``log_samples`` answers of the step (``Rollout.summary()`` dicts)."""
        if self.remote and self.config.log_samples and summaries:
            self._each("log_samples", step, sample_rows(step, summaries, self.config.log_samples))

    def log_checkpoint(self, step: int, path: str, *, final: bool) -> None:
        """Upload a local checkpoint as ``log_checkpoints`` says (none, final, all)."""
        wanted = self.config.log_checkpoints == "all" or (self.config.log_checkpoints == "final" and final)
        if wanted and self.remote and Path(path).is_dir():
            self._each("log_checkpoint", step, Path(path))

    def log_image(self, step: int, key: str, path: Path) -> None:
        if self.remote:
            self._each("log_image", step, key, path)

    def close(self, *, failed: bool = False) -> None:
        """Attach the run's plot (when a remote logger is on and the run did not fail), then
        end every tracked run."""
        if self.remote and not failed and self.last_step is not None:
            plot = self._plot()
            if plot is not None:
                self.log_image(self.last_step, "plot", plot)
        self._each("close", failed=failed)

    def _plot(self) -> Path | None:
        from rtl_trainer.plot import DEFAULT_METRICS, plot_runs

        try:
            metrics = (*DEFAULT_METRICS, "train/loss_per_token")  # the last: sft runs
            return plot_runs([self.log.dir], self.log.dir / PLOT_FILE, metrics, title=self.log.dir.name)
        except Exception as exc:  # no matplotlib, or none of the plotted metrics (sft)
            self.console.print(f"[yellow]warning:[/] no plot for the trackers: {escape(str(exc))}", soft_wrap=True)
            return None
