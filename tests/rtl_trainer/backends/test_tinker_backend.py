"""The Tinker backend: key and model checks, and the loop's requests against the SDK's contract.

The service cannot be reached from the test machines, so an in-process stand-in of
``tinker.ServiceClient`` (``tinker.types`` values and futures, the local backend's real
model behind them) records every request; the real ``Trainer`` runs through
``TinkerService`` over it. A live test runs one distillation step when ``TINKER_API_KEY``
is set.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tinker
from tinker import types
from typer.testing import CliRunner

from rtl_trainer.backends import load_tokenizer, make_service
from rtl_trainer.backends.local import LocalServiceClient
from rtl_trainer.backends.tinker_backend import API_KEY_VAR, TinkerService
from rtl_trainer.config import TrainConfig
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.loop.train import Trainer
from tests.rtl_trainer.backends.tinker_standin import (
    Recorder,
    StandInServiceClient,
)

IDS = ["cvdp_gym_gray_converter_0001", "cvdp_gym_priority_encoder_0001"]
# base.py: the loss functions and the exact loss_fn_inputs (with dtypes) each takes.
LOSS_INPUTS = {
    "cross_entropy": {"target_tokens": "int64", "weights": "float32"},
    "importance_sampling": {"target_tokens": "int64", "logprobs": "float32", "advantages": "float32"},
    "ppo": {"target_tokens": "int64", "logprobs": "float32", "advantages": "float32"},
}
CREATE_METHODS = (
    "create_lora_training_client",
    "create_training_client_from_state",
    "create_training_client_from_state_with_optimizer",
    "create_sampling_client",
)


def check_contract(rec: Recorder, run: Path, earlier: int = 0) -> None:
    """Every recorded request as the SDK takes it; every future awaited; states logged
    (after ``earlier`` checkpoints of a previous run)."""
    fbs = rec.named("forward_backward")
    assert fbs, "no forward_backward request"
    for args in fbs:
        assert args["loss_fn"] in LOSS_INPUTS
        expected = LOSS_INPUTS[args["loss_fn"]]
        assert args["data"], "forward_backward with no datums"
        for datum in args["data"]:
            assert isinstance(datum, types.Datum) and isinstance(datum.model_input, types.ModelInput)
            length = datum.model_input.length
            assert set(datum.loss_fn_inputs) == set(expected)
            for key, dtype in expected.items():
                value = datum.loss_fn_inputs[key]
                assert isinstance(value, types.TensorData) and value.dtype == dtype, (key, value.dtype)
                array = np.asarray(value.data)
                assert array.ndim == 1 and len(array) == length, (key, len(array), length)
                assert value.shape in (None, [length])
                assert np.all(np.isfinite(array))
    steps = rec.named("optim_step")
    assert len(steps) == len(fbs) and all(isinstance(a["adam_params"], types.AdamParams) for a in steps)
    assert all(args["sampling_params"].max_tokens == 24 for args in rec.named("sample"))
    unawaited = [f.method for f in rec.futures if not f.awaited]
    assert not unawaited, f"futures whose result() was never called: {unawaited}"
    saved = [f.result().path for f in rec.futures if f.method == "save_state"]
    logged = [json.loads(line)["state_path"] for line in (run / "checkpoints.jsonl").read_text().splitlines()]
    assert saved and saved == logged[earlier:]


# -- fixtures ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny(tmp_path_factory, toolchain) -> Path:
    from rtl_trainer.demo import build_models

    out = tmp_path_factory.mktemp("tiny")
    teacher_dir, _ = build_models(out, base_config(out))
    return teacher_dir


def base_config(run_dir: Path, **changes: Any) -> TrainConfig:
    config = TrainConfig(
        backend="tinker", renderer="qwen3_instruct", teacher_renderer="qwen3_instruct",
        ids=IDS, full_finetune=True, max_prompt_tokens=48, max_tokens=24, groups_per_step=2,
        group_size=2, save_every=1, learning_rate=1e-3, run_dir=str(run_dir), student="unset",
    )
    return replace(config, **changes)


class Factory:
    """Stands in for ``tinker.ServiceClient`` / ``tinker.RestClient``: counts constructions."""

    def __init__(self, make: Any) -> None:
        self.make, self.count = make, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.count += 1
        return self.make()


@pytest.fixture
def patched(monkeypatch):
    """Route ``TinkerService()`` to a stand-in; returns a function making one for a run."""
    monkeypatch.setenv(API_KEY_VAR, "test-key")

    def install(service: StandInServiceClient) -> Factory:
        factory = Factory(lambda: service)
        monkeypatch.setattr(tinker, "ServiceClient", factory)
        monkeypatch.setattr(tinker, "RestClient", Factory(lambda: service))
        return factory

    return install


def standin(tiny: Path, run: Path, rec: Recorder | None = None, models: list[str] | None = None) -> StandInServiceClient:
    local = LocalServiceClient(load_tokenizer(str(tiny)), workdir=run, full_finetune=True)
    return StandInServiceClient(local, models or [str(tiny)], rec or Recorder())


# -- tests -------------------------------------------------------------------------------
def test_missing_key_is_a_clear_error_before_any_client(monkeypatch, tmp_path):
    monkeypatch.delenv(API_KEY_VAR, raising=False)
    made = Factory(lambda: pytest.fail("a client was made without an API key"))
    monkeypatch.setattr(tinker, "ServiceClient", made)
    monkeypatch.setattr(tinker, "RestClient", made)
    with pytest.raises(RuntimeError, match=API_KEY_VAR):
        TinkerService()
    with pytest.raises(RuntimeError, match=API_KEY_VAR):
        make_service(base_config(tmp_path, mode="rl", student="Qwen/Qwen3-8B"))
    from rtl_trainer.cli import app

    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 2 and API_KEY_VAR in result.output
    assert made.count == 0


def test_unknown_model_is_refused_before_any_training_client(patched, tmp_path):
    rec = Recorder()
    offered = ["Qwen/Qwen3-8B", "meta-llama/Llama-3.2-1B"]
    service = StandInServiceClient(None, offered, rec)  # type: ignore[arg-type]
    patched(service)
    for config in (
        base_config(tmp_path, mode="rl", student="Qwen/Nope"),
        base_config(tmp_path, mode="distill", student="Qwen/Qwen3-8B", teacher="Big/Teacher"),
    ):
        with pytest.raises(ValueError, match=re.escape("offered: Qwen/Qwen3-8B, meta-llama/Llama-3.2-1B")) as err:
            make_service(config)
        assert str(config.teacher if config.teacher else config.student) in str(err.value)
    # Saved states are not model names: not checked against the list.
    ok = make_service(base_config(tmp_path, mode="distill", student="tinker://run/weights/s1", teacher="Qwen/Qwen3-8B"))
    assert isinstance(ok, TinkerService)
    assert not [name for name, _ in rec.calls if name in CREATE_METHODS]
    assert {name for name, _ in rec.calls} == {"get_server_capabilities"}


def test_untrainable_student_or_unsampleable_teacher_is_refused_before_any_cost(patched, tmp_path):
    rec = Recorder()
    offered = ["Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "Sample/Only"]
    flags = {"Sample/Only": (False, True), "Qwen/Qwen3-32B": (True, False)}
    patched(StandInServiceClient(None, offered, rec, flags))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Sample/Only cannot be trained.*trainable: Qwen/Qwen3-8B, Qwen/Qwen3-32B"):
        make_service(base_config(tmp_path, mode="rl", student="Sample/Only"))
    with pytest.raises(ValueError, match="Qwen/Qwen3-32B has no sampling capacity"):
        make_service(base_config(tmp_path, mode="distill", student="Qwen/Qwen3-8B", teacher="Qwen/Qwen3-32B"))
    # A sample-only model is a fine teacher.
    assert isinstance(make_service(base_config(tmp_path, mode="distill", student="Qwen/Qwen3-8B", teacher="Sample/Only")), TinkerService)
    assert {name for name, _ in rec.calls} == {"get_server_capabilities"}


def test_models_command_lists_the_offered_models(patched):
    from rtl_trainer.cli import app

    patched(StandInServiceClient(None, ["Qwen/Qwen3-8B", "meta-llama/Llama-3.2-1B"], Recorder()))  # type: ignore[arg-type]
    result = CliRunner().invoke(app, ["models"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Qwen/Qwen3-8B" in result.output and "meta-llama/Llama-3.2-1B" in result.output


def test_close_finishes_the_session_with_its_status():
    # The stand-in's close takes what the SDK's takes.
    sdk, double = (inspect.signature(c.close).parameters for c in (tinker.ServiceClient, StandInServiceClient))
    assert [(p.name, p.default) for p in double.values()] == [(p.name, p.default) for p in sdk.values()]
    rec = Recorder()
    service = TinkerService(StandInServiceClient(None, [], rec), api_key="test-key")  # type: ignore[arg-type]
    service.close("errored", detail="stopped: grading infrastructure")
    assert rec.named("close") == [{"status": "errored", "detail": "stopped: grading infrastructure"}]
    assert [f.awaited for f in rec.futures if f.method == "close"] == [True]


@pytest.mark.sandbox
def test_rl_and_resume_through_the_sdk_contract(tiny, tmp_path, patched):
    run = tmp_path / "rl"
    rec = Recorder()
    made = patched(standin(tiny, run, rec))
    config = base_config(run, mode="rl", student=str(tiny), steps=2)
    service = make_service(config)
    assert isinstance(service, TinkerService) and made.count == 1
    Trainer(config, service).run()
    assert [r["step"] for r in RunLog(run).metrics()] == [0, 1]
    assert [a["base_model"] for a in rec.named("create_lora_training_client")] == [str(tiny)]
    assert len(rec.named("forward_backward")) == 2
    check_contract(rec, run)

    # Resume: the last saved state, with its optimizer, and one more step (step 2).
    last = RunLog(run).last_checkpoint()
    assert last["step"] == 1
    rec2 = Recorder()
    patched(standin(tiny, run, rec2))
    Trainer(replace(config, steps=3), make_service(config)).run(resume=True)
    assert [a["path"] for a in rec2.named("create_training_client_from_state_with_optimizer")] == [last["state_path"]]
    assert not rec2.named("create_lora_training_client")
    assert [a["name"] for a in rec2.named("save_weights_and_get_sampling_client")] == ["step00002", "step00003"]
    assert [r["step"] for r in RunLog(run).metrics()] == [0, 1, 2]
    assert len(rec2.named("forward_backward")) == 1
    check_contract(rec2, run, earlier=2)
    assert RunLog(run).last_checkpoint()["step"] == 2


@pytest.mark.sandbox
def test_periodic_eval_samples_every_problem_from_the_new_weights(tiny, tmp_path, patched):
    run = tmp_path / "eval"
    rec = Recorder()
    patched(standin(tiny, run, rec))
    config = base_config(run, mode="rl", student=str(tiny), steps=2, save_every=0, eval_every=2, eval_samples=3)
    Trainer(config, make_service(config)).run()
    check_contract(rec, run)
    # Training draws group_size (2) answers a request; the eval after step 1, eval_samples
    # (3) to each of the run's problems from the weights that step made.
    requests = [(a["weights"], a["num_samples"]) for a in rec.named("sample")]
    assert requests == [("step00000", 2)] * 2 + [("step00001", 2)] * 2 + [("step00002", 3)] * len(IDS)
    first, second = RunLog(run).metrics()
    assert not [k for k in first if k.startswith("eval/")]
    assert second["eval/samples"] == len(IDS) * 3
    assert 0.0 <= second["eval/pass_rate"] <= 1.0 and 0.0 <= second["eval/mean_reward"] <= 1.4
    assert second["time/eval"] > 0


@pytest.mark.sandbox
def test_distillation_step_through_the_sdk_contract(tiny, tmp_path, patched):
    run = tmp_path / "distill"
    rec = Recorder()
    patched(standin(tiny, run, rec))
    config = base_config(run, mode="distill", student=str(tiny), teacher=str(tiny), steps=1, kl_penalty_coef=1.0)
    Trainer(config, make_service(config)).run()
    row = RunLog(run).metrics()[0]
    assert "teacher_kl" in row and row["teacher_aligned_fraction"] == pytest.approx(1.0)
    assert [a["base_model"] for a in rec.named("create_sampling_client")] == [str(tiny)]
    assert rec.named("compute_logprobs"), "the teacher was never asked for log-probabilities"
    # Sampling at temperature 1: every compute_logprobs request is the teacher's.
    assert all(a["weights"] is None for a in rec.named("compute_logprobs"))
    assert row["tokens/teacher"] == sum(a["prompt"].length for a in rec.named("compute_logprobs"))
    check_contract(rec, run)


@pytest.mark.sandbox
def test_tempered_samples_are_reweighted_by_the_samplers_own_logprobs(tiny, tmp_path, patched):
    run = tmp_path / "tempered"
    rec = Recorder()
    patched(standin(tiny, run, rec))
    config = base_config(run, mode="distill", student=str(tiny), teacher=str(tiny), steps=1, kl_penalty_coef=1.0,
                         temperature=0.7)
    Trainer(config, make_service(config)).run()
    check_contract(rec, run)
    samples = {
        tuple(seq.tokens): list(seq.logprobs) for f in rec.futures if f.method == "sample" for seq in f.result().sequences
    }
    [fb] = rec.named("forward_backward")
    for datum in fb["data"]:
        targets = datum.loss_fn_inputs["target_tokens"].to_numpy().tolist()
        behaviour = datum.loss_fn_inputs["logprobs"].to_numpy()
        matches = [k for k in samples if k and targets[-len(k):] == list(k)]
        assert matches, "a datum whose completion was never sampled"
        completion = max(matches, key=len)
        # The importance ratio's denominator: what the sampler drew from (temperature 0.7).
        np.testing.assert_allclose(behaviour[-len(completion):], samples[completion], atol=1e-6)
    # The KL term's student side is the temperature-1 policy, recomputed by the sampler that
    # drew the samples (named after its weights); the teacher's requests carry no name.
    student_scoring = [a for a in rec.named("compute_logprobs") if a["weights"] == "step00000"]
    assert len(student_scoring) == len(samples) == config.groups_per_step * config.group_size


@pytest.mark.sandbox
def test_off_policy_pipeline_samples_ahead_with_stale_weights_and_the_clipped_loss(tiny, tmp_path, patched):
    run = tmp_path / "offpolicy"
    rec = Recorder()
    patched(standin(tiny, run, rec))
    prices = {"train": 2.0, "prefill": 0.5, "sample": 1.0}
    config = base_config(run, mode="rl", student=str(tiny), steps=3, max_steps_off_policy=1, prices=prices, save_every=0)
    assert config.loss == "ppo" and not config.warnings()
    Trainer(config, make_service(config)).run()
    check_contract(rec, run)
    # Step 1's rollouts were drawn with step 0's weights while step 0 trained; step 2's with
    # the weights after step 0: never more than one step stale.
    weights = [a["weights"] for a in rec.named("sample")]
    groups = config.groups_per_step
    assert weights == ["step00000"] * (2 * groups) + ["step00001"] * groups
    rows = RunLog(run).metrics()
    assert [r["off_policy/staleness"] for r in rows] == [0, 1, 1]
    assert {a["loss_fn"] for a in rec.named("forward_backward")} == {"ppo"}
    assert all(a["loss_fn_config"] == {"clip_low_threshold": 0.2, "clip_high_threshold": 0.2} for a in rec.named("forward_backward"))
    # Accounting: the tokens of the requests actually made, running totals, estimated cost.
    sampled = sum(
        len(seq.tokens) for f in rec.futures if f.method == "sample" for seq in f.result().sequences
    )
    prompts = sum(a["prompt"].length * a["num_samples"] for a in rec.named("sample"))
    trained = sum(d.model_input.length for a in rec.named("forward_backward") for d in a["data"])
    last = rows[-1]
    assert last["total/tokens/sampled"] == sum(r["tokens/sampled"] for r in rows) == sampled
    assert last["total/tokens/prompt"] == prompts and last["total/tokens/trained"] == trained
    for row in rows:
        expected = (row["tokens/trained"] * 2.0 + row["tokens/prompt"] * 0.5 + row["tokens/sampled"] * 1.0) / 1e6
        assert row["cost/step_usd"] == pytest.approx(expected)
    assert last["cost/total_usd"] == pytest.approx(sum(r["cost/step_usd"] for r in rows))


def test_importance_sampling_off_policy_is_warned_about(tmp_path):
    config = base_config(tmp_path, mode="rl", student="x", max_steps_off_policy=2, loss_fn="importance_sampling")
    assert config.loss == "importance_sampling"
    assert any("off-policy" in w and "ppo" in w for w in config.warnings())
    assert base_config(tmp_path, mode="rl", student="x").loss == "importance_sampling"
    with pytest.raises(ValueError, match="unknown price keys"):
        base_config(tmp_path, mode="rl", student="x", prices={"gpu": 1.0}).validate()


@pytest.mark.sandbox
@pytest.mark.skipif(not os.environ.get(API_KEY_VAR), reason=f"live Tinker test: set {API_KEY_VAR} to run it")
def test_live_distillation_step(tmp_path, toolchain):
    student = os.environ.get("TINKER_TEST_STUDENT", "Qwen/Qwen3-4B-Instruct-2507")
    teacher = os.environ.get("TINKER_TEST_TEACHER", student)
    run = tmp_path / "live"
    config = TrainConfig(
        mode="distill", backend="tinker", student=student, teacher=teacher, ids=IDS[:1], steps=1,
        groups_per_step=1, group_size=2, max_tokens=256, kl_penalty_coef=1.0, lora_rank=8,
        learning_rate=1e-5, run_dir=str(run),
    )
    service = make_service(config)
    assert student in [m.model_name for m in service.available_models()]
    Trainer(config, service).run()
    row = RunLog(run).metrics()[0]
    assert row["datums"] > 0 and "teacher_kl" in row
    assert RunLog(run).last_checkpoint()["state_path"].startswith("tinker://")
