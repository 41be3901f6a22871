"""The ``mlflow`` logger: an MLflow run (extra ``mlflow``: ``mlflow-skinny``).

The store is ``mlflow_tracking_uri``, else ``MLFLOW_TRACKING_URI``, else MLflow's default;
the experiment ``mlflow_experiment``, else ``MLFLOW_EXPERIMENT_NAME``, else ``rtl-train``
(made when missing). MLflow 3 opens a ``file:`` store only with
``MLFLOW_ALLOW_FILE_STORE=true``; ``sqlite:`` stores need the full ``mlflow`` package
(SQLAlchemy), which ``mlflow-skinny`` leaves out.

The config goes in as params (each value as text; a resumed run adds only new keys, since
MLflow params cannot change) and as a ``config.json`` artifact (the latest); metrics by the
trainer's step (numbers only; a resumed run that redoes a step logs a second value at that
step); answers as ``samples/step_NNNNN.json`` (``log_table`` when pandas is installed, a
JSON list of rows otherwise); the plot under ``plots/``; checkpoints under
``checkpoints/stepNNNNN/``. The client API is used, never the global active run, so
several runs in one process do not interfere.

``mlflow`` is imported when a logger is made, never at module import.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from typing import Any

from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import TrackingError
from rtl_trainer.tracking.base import SAMPLE_COLUMNS, require, run_name

DEFAULT_EXPERIMENT = "rtl-train"
#: MLflow's limit on one ``log_batch`` (metrics) and on a param value's length.
BATCH_LIMIT = 1000
PARAM_LIMIT = 6000


class MlflowLogger:
    name = "mlflow"

    def __init__(self, config: TrainConfig, ref: dict[str, Any] | None = None) -> None:
        mlflow = require("mlflow", "mlflow")
        from mlflow.entities import Metric, Param

        self._metric, self._param = Metric, Param
        ref = ref or {}
        uri = config.mlflow_tracking_uri or ref.get("tracking_uri") or os.environ.get("MLFLOW_TRACKING_URI")
        try:
            self.client = mlflow.MlflowClient(tracking_uri=uri)
            self.tracking_uri = uri or mlflow.get_tracking_uri()
            if ref.get("run_id"):
                self.run_id = self.client.get_run(ref["run_id"]).info.run_id
                self.client.update_run(self.run_id, status="RUNNING")
            else:
                name = config.mlflow_experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
                experiment = self.client.get_experiment_by_name(name)
                experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(name)
                run = self.client.create_run(experiment_id, run_name=run_name(config.run_dir))
                self.run_id = run.info.run_id
        except Exception as exc:
            raise TrackingError(f"MLflow could not open the run at {uri or 'its default store'}: {exc}") from exc

    def run_ref(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "tracking_uri": self.tracking_uri}

    def log_config(self, config: dict[str, Any]) -> None:
        logged = self.client.get_run(self.run_id).data.params
        params = [self._param(k, str(v)[:PARAM_LIMIT]) for k, v in config.items() if k not in logged]
        if params:
            self.client.log_batch(self.run_id, params=params)
        self.client.log_dict(self.run_id, config, "config.json")

    def log_metrics(self, step: int, metrics: dict[str, Any]) -> None:
        stamp = int(time.time() * 1000)
        numbers = [
            self._metric(key, float(value), stamp, step)
            for key, value in metrics.items() if isinstance(value, (int, float))
        ]
        for start in range(0, len(numbers), BATCH_LIMIT):
            self.client.log_batch(self.run_id, metrics=numbers[start:start + BATCH_LIMIT])

    def log_samples(self, step: int, rows: list[dict[str, Any]]) -> None:
        path = f"samples/step_{step:05d}.json"
        if importlib.util.find_spec("pandas") is not None:
            self.client.log_table(self.run_id, {c: [r[c] for r in rows] for c in SAMPLE_COLUMNS}, path)
        else:
            self.client.log_dict(self.run_id, rows, path)

    def log_image(self, step: int, key: str, path: Path) -> None:
        self.client.log_artifact(self.run_id, str(path), artifact_path="plots")

    def log_checkpoint(self, step: int, path: Path) -> None:
        self.client.log_artifacts(self.run_id, str(path), artifact_path=f"checkpoints/step{step:05d}")

    def close(self, *, failed: bool = False) -> None:
        self.client.set_terminated(self.run_id, status="FAILED" if failed else "FINISHED")
