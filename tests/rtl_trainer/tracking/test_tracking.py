"""Experiment tracking on real runs: a tiny model trained for a step or two, logged to W&B
(offline mode: the run's own .wandb file, read back record by record) and to an MLflow file
store, each compared with metrics.jsonl; resume continues the same tracked runs; a missing
library is a clear error; a tracker failing mid-run does not stop training."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import ConfigError, TrackingError
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.loop.train import Trainer
from rtl_trainer.tracking import TRACKING_FILE, JsonlLogger, Tracking
from tests.rtl_trainer.loop.test_trainer import base_config, service

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, toolchain) -> Path:
    from rtl_trainer.demo import build_models

    out = tmp_path_factory.mktemp("tiny")
    teacher_dir, _ = build_models(out, base_config(out))
    return teacher_dir


@pytest.fixture
def offline_trackers(tmp_path, monkeypatch) -> dict[str, Path]:
    """W&B in offline mode and MLflow on a file store, both under ``tmp_path``."""
    pytest.importorskip("wandb")
    pytest.importorskip("mlflow")
    wandb_dir = tmp_path / "wandb-files"
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(wandb_dir))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    for name in ("WANDB_PROJECT", "MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME"):
        monkeypatch.delenv(name, raising=False)
    return {"wandb": wandb_dir, "mlflow": tmp_path / "mlruns"}


def wandb_records(path: Path) -> list:
    """The records of an offline run's ``.wandb`` file: W&B's LevelDB-style log (a 7-byte
    ``:W&B`` header, then 32 KiB blocks of chunks with a 7-byte header: CRC, length, type)
    of ``wandb_internal_pb2.Record`` protobufs."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records, pending, pos = [], b"", 7
    while pos + 7 <= len(data):
        room = 32768 - pos % 32768
        if room < 7:  # a block's tail too short for a chunk header is padding
            pos += room
            continue
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        if kind == 0:
            break
        pending += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a whole record, or a record's last chunk
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def wandb_history(records: list) -> dict[int, dict]:
    """step -> the values logged at it (W&B's JSON encoding, decoded)."""
    rows: dict[int, dict] = {}
    for record in records:
        if record.WhichOneof("record_type") == "history":
            items = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            rows.setdefault(record.history.step.num, {}).update(items)
    return rows


def assert_same_metrics(logged: dict, row: dict) -> None:
    for key, value in row.items():
        if key == "step":
            continue
        assert logged[key] == pytest.approx(value, rel=1e-12, abs=0), key


def test_a_run_tracked_in_wandb_and_mlflow_matches_metrics_jsonl_and_resumes_the_same_runs(
    tiny, tmp_path, offline_trackers
):
    from mlflow import MlflowClient

    run = tmp_path / "tracked"
    config = base_config(
        run, mode="rl", student=str(tiny), steps=1, log_to="jsonl,wandb,mlflow", log_samples=3,
        log_checkpoints="final", mlflow_tracking_uri=offline_trackers["mlflow"].as_uri(), wandb_project="cvdp-test",
    )
    Trainer(config, service(tiny, run)).run()
    refs = json.loads((run / TRACKING_FILE).read_text())
    Trainer(replace(config, steps=2), service(tiny, run)).run(resume=True)
    assert json.loads((run / TRACKING_FILE).read_text()) == refs  # the same runs, reopened
    rows = RunLog(run).metrics()
    assert [r["step"] for r in rows] == [0, 1]
    answers = [json.loads(line) for line in (run / "rollouts" / "step_00000.jsonl").read_text().splitlines()]

    # W&B: two offline run directories (the run, its resumption) of one run id.
    files = sorted(offline_trackers["wandb"].glob("wandb/offline-run-*/run-*.wandb"))
    assert len(files) == 2
    first, resumed = wandb_records(files[0]), wandb_records(files[1])
    for records in (first, resumed):
        [started] = [r.run for r in records if r.WhichOneof("record_type") == "run"]
        assert (started.run_id, started.project) == (refs["wandb"]["run_id"], "cvdp-test")
    history = {**wandb_history(first), **wandb_history(resumed)}
    for row in rows:
        assert_same_metrics(history[row["step"]], row)
    config_items = {item.key: json.loads(item.value_json) for r in first if r.WhichOneof("record_type") == "config"
                    for item in r.config.update}
    assert config_items["learning_rate"] == config.learning_rate and config_items["log_to"] == "jsonl,wandb,mlflow"
    assert history[0]["samples/_type"] == "table-file" and history[0]["samples/nrows"] == 3
    table = json.loads((files[0].parent / "files" / history[0]["samples/path"]).read_text())
    assert table["columns"][:3] == ["step", "problem_id", "reward"]
    assert [row[1:3] for row in table["data"]] == [[a["problem_id"], a["reward"]] for a in answers[:3]]
    assert history[0]["plot/_type"] == "image-file" and history[1]["plot/_type"] == "image-file"
    artifacts = [r.artifact for r in first + resumed if r.WhichOneof("record_type") == "artifact"]
    assert any(a.type == "model" for a in artifacts), [(a.type, a.name) for a in artifacts]

    # MLflow: one run, reopened; every numeric metric's history equals metrics.jsonl's.
    client = MlflowClient(tracking_uri=offline_trackers["mlflow"].as_uri())
    run_id = refs["mlflow"]["run_id"]
    tracked = client.get_run(run_id)
    assert tracked.info.status == "FINISHED"
    assert tracked.data.params["learning_rate"] == str(config.learning_rate)
    for key in rows[0]:
        if key == "step" or not isinstance(rows[0][key], (int, float)):
            continue
        points = sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))
        assert points == [(r["step"], pytest.approx(float(r[key]), rel=1e-12, abs=0)) for r in rows], key
    artifacts = {a.path for a in client.list_artifacts(run_id)}
    assert {"config.json", "samples", "plots", "checkpoints"} <= artifacts
    samples = json.loads(Path(client.download_artifacts(run_id, "samples/step_00000.json", str(tmp_path / "dl"))).read_text())
    assert samples["columns"][1:3] == ["problem_id", "reward"]
    assert [row[1:3] for row in samples["data"]] == [[a["problem_id"], a["reward"]] for a in answers[:3]]
    # Each run's final checkpoint only (save_every=1 saved every step locally).
    uploaded = [a.path for a in client.list_artifacts(run_id, "checkpoints")]
    assert uploaded == ["checkpoints/step00000", "checkpoints/step00001"]
    assert {a.path for a in client.list_artifacts(run_id, "checkpoints/step00001")} == {
        f"checkpoints/step00001/{p.name}" for p in Path(RunLog(run).last_checkpoint()["state_path"]).iterdir()
    }


def test_a_tracker_failing_mid_run_does_not_stop_training(tiny, tmp_path, offline_trackers, monkeypatch):
    from rtl_trainer.tracking.mlflow_backend import MlflowLogger

    calls = []

    def down(self, step, metrics):
        calls.append(step)
        raise ConnectionError("tracking server went away")

    monkeypatch.setattr(MlflowLogger, "log_metrics", down)
    run = tmp_path / "flaky"
    config = base_config(run, mode="rl", student=str(tiny), steps=2, log_to="mlflow",
                         mlflow_tracking_uri=offline_trackers["mlflow"].as_uri())
    console = Console(record=True, width=200)
    Trainer(config, service(tiny, run), console=console).run()
    assert [r["step"] for r in RunLog(run).metrics()] == [0, 1]
    assert calls == [0]  # dropped after its first failure
    out = console.export_text()
    assert out.count("mlflow tracking failed (ConnectionError: tracking server went away)") == 1


@pytest.mark.parametrize(("name", "extra"), [("wandb", "wandb"), ("mlflow", "mlflow")])
def test_a_missing_library_names_the_extra(tmp_path, monkeypatch, name, extra):
    monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    config = TrainConfig(student="m", mode="rl", run_dir=str(tmp_path), log_to=f"jsonl,{name}")
    with pytest.raises(TrackingError, match=rf"pip install 'cvdp-gym\[{extra}\]'") as caught:
        Tracking.open(config, RunLog(tmp_path))
    assert isinstance(caught.value, RuntimeError)
    assert not (tmp_path / TRACKING_FILE).exists()


def test_rtl_train_stops_before_training_when_the_library_is_missing(tiny, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from rtl_trainer.cli import app

    monkeypatch.setitem(sys.modules, "mlflow", None)
    run = tmp_path / "cli"
    args = ["rl", "--student", str(tiny), "--run-dir", str(run), "--log-to", "jsonl,mlflow", "--steps", "1",
            "--set", "renderer=qwen3_instruct", "--set", "full_finetune=true", "--set", "ids=[cvdp_gym_gray_converter_0001]"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "needs the mlflow package" in result.output and "pip install 'cvdp-gym[mlflow]'" in result.output
    assert not (run / "metrics.jsonl").exists() and not (run / "config.json").exists()


def test_log_to_is_validated():
    assert TrainConfig(student="m", mode="rl", log_to=" wandb, jsonl,wandb").trackers == ["wandb", "jsonl"]
    with pytest.raises(ConfigError, match="log_to must name some of jsonl, wandb, mlflow"):
        TrainConfig(student="m", mode="rl", log_to="jsonl,comet").validate()
    with pytest.raises(ConfigError, match="log_checkpoints must be none, final or all"):
        TrainConfig(student="m", mode="rl", log_checkpoints="best").validate()


def test_the_jsonl_logger_writes_what_runlog_writes(tmp_path):
    metrics = {"env/all/reward/total": 0.25, "time/step": 1.5, "rollouts": 4, "nan": float("nan")}
    RunLog(tmp_path / "a").log_metrics(3, metrics)
    JsonlLogger(RunLog(tmp_path / "b")).log_metrics(3, metrics)
    assert (tmp_path / "a" / "metrics.jsonl").read_bytes() == (tmp_path / "b" / "metrics.jsonl").read_bytes()
