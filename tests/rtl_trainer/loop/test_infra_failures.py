"""Infrastructure failures kept out of the learning signal (issue 20): answers graded for
real, one of them by a sandbox that refuses to start for it; the trainer's own objective
and step on a tiny real model."""

from __future__ import annotations

import json
import time
from pathlib import Path

import gymnasium as gym
import pytest

from cvdp_gym.data import bundled_candidates, load_dataset
from rtl_trainer.backends import load_tokenizer
from rtl_trainer.backends.local import LocalServiceClient
from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import InfrastructureError
from rtl_trainer.loop.metrics import infra_metrics
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.loop.train import Batch, Trainer
from rtl_trainer.rollouts import EnvPool, Group, Rollout, RolloutTiming, Turn
from tests.support import RefusingSandbox

pytestmark = pytest.mark.sandbox

PROBLEM_ID = "cvdp_gym_gray_converter_0001"
MARKER = "// refuse the sandbox for this answer"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, toolchain) -> Path:
    from rtl_trainer.demo import build_models

    out = tmp_path_factory.mktemp("tiny")
    student, _ = build_models(out, TrainConfig(student="unset", run_dir=str(out)))
    return student


@pytest.fixture(scope="module")
def answers() -> dict[str, str]:
    """Answers to one problem, by name: the reference, two known-wrong candidates, and the
    reference marked so the sandbox refuses to start for it (it would pass)."""
    reference = load_dataset("bundled", ids=[PROBLEM_ID]).problems[0].reference
    wrong = {c.name: c.files for c in bundled_candidates() if c.problem_id == PROBLEM_ID}

    def fenced(files: dict[str, str], marker: str = "") -> str:
        return "\n".join(f"```systemverilog\n{text}{marker}\n```" for text in files.values())

    return {
        "reference": fenced(reference),
        "functional_bug": fenced(wrong["functional_bug"]),
        "syntax_error": fenced(wrong["syntax_error"]),
        "refused": fenced(reference, MARKER),
    }


def graded_group(sandbox, answers: dict[str, str], names: list[str], tokenizer) -> Group:
    """``names``' answers graded by the real environment through the rollouts' grading
    (one re-grade of an infrastructure failure), as one group."""
    refusing = RefusingSandbox(sandbox, MARKER)
    pool = EnvPool(lambda: gym.make("CVDP-SingleShot-v0", ids=[PROBLEM_ID], sandbox=refusing, cache=False), 1)
    group = Group(PROBLEM_ID, [])
    try:
        for name in names:
            text = answers[name]
            tokens = tokenizer.encode(name)
            rollout = Rollout(PROBLEM_ID, [Turn(tokenizer.encode("prompt"), tokens, [-1.0] * len(tokens), text)])
            rollout.reward, rollout.info, rollout.retried = pool.score_with_retry(PROBLEM_ID, text)
            group.rollouts.append(rollout)
    finally:
        pool.close()
    return group


def trainer(tiny: Path, run: Path, **changes) -> tuple[Trainer, LocalServiceClient]:
    service = LocalServiceClient(load_tokenizer(str(tiny)), workdir=run, full_finetune=True)
    config = TrainConfig(**{
        "mode": "rl", "backend": "local", "student": str(tiny), "renderer": "qwen3_instruct", "ids": [PROBLEM_ID],
        "full_finetune": True, "run_dir": str(run), "save_every": 0, "normalize_advantages_std": True, **changes,
    })
    return Trainer(config, service, make_env=lambda: gym.make("CVDP-SingleShot-v0", ids=[PROBLEM_ID], cache=False)), service


def advantages(datums) -> list[float]:
    """Each datum's scalar advantage (the value on its action tokens)."""
    return [float(next(a for a in d.loss_fn_inputs["advantages"].to_numpy() if a != 0.0)) for d in datums]


def test_an_injected_infra_failure_leaves_the_group_as_without_that_answer(sandbox, tiny, answers, tmp_path):
    """The issue's acceptance test: a sandbox that refuses to start for one answer leaves the
    group's advantages equal to those of the same group without that answer, and is counted."""
    run_trainer, service = trainer(tiny, tmp_path / "run")
    tokenizer = load_tokenizer(str(tiny))
    sampler = service.create_sampling_client(base_model=str(tiny))
    with_failure = graded_group(sandbox, answers, ["reference", "functional_bug", "refused", "syntax_error"], tokenizer)
    refused = with_failure.rollouts[2]
    without = Group(PROBLEM_ID, [r for r in with_failure.rollouts if r is not refused])

    assert (refused.info["failure_class"], refused.retried, refused.infra_failed) == ("infra_error", True, True)
    assert [r.info["passed"] for r in without.rollouts] == [True, False, False]

    datums_with, _ = run_trainer.training_data([with_failure], sampler, None)
    datums_without, _ = run_trainer.training_data([without], sampler, None)
    assert len(datums_with) == len(datums_without) == 3  # no datum for the failed answer
    assert advantages(datums_with) == pytest.approx(advantages(datums_without))
    assert advantages(datums_with)[0] > 0 > advantages(datums_with)[2]  # a real signal, mean and std of 3
    assert infra_metrics([with_failure]) == {
        "grade/infra_failed": 1, "grade/infra_frac": 0.25, "grade/infra_retried": 1,
    }


def test_reward_coef_weighs_the_rewards_advantage(sandbox, tiny, answers, tmp_path):
    """``reward_coef`` scales the reward's part of the advantage (0: none, as pure on-policy
    distillation has), on the same graded group."""
    tokenizer = load_tokenizer(str(tiny))
    group = graded_group(sandbox, answers, ["reference", "functional_bug", "syntax_error"], tokenizer)
    whole, service = trainer(tiny, tmp_path / "one")
    sampler = service.create_sampling_client(base_model=str(tiny))
    full = advantages(whole.training_data([group], sampler, None)[0])
    half, _ = trainer(tiny, tmp_path / "half", reward_coef=0.5)
    assert advantages(half.training_data([group], sampler, None)[0]) == pytest.approx([a / 2 for a in full])
    kl_only, _ = trainer(tiny, tmp_path / "none", reward_coef=0.0, mode="distill", teacher=str(tiny))
    datums, _ = kl_only.training_data([group], sampler, None)
    assert len(datums) == 3 and all(not any(d.loss_fn_inputs["advantages"].to_numpy()) for d in datums)
    with pytest.raises(ValueError, match="nothing to learn from"):
        trainer(tiny, tmp_path / "rl0", reward_coef=0.0)


def test_a_step_mostly_lost_to_infrastructure_stops_after_saving(sandbox, tiny, answers, tmp_path):
    """Over ``max_infra_frac``: the step's metrics and a checkpoint of the weights trained so
    far are written, then ``InfrastructureError``; nothing is trained on the step."""
    run = tmp_path / "run"
    run_trainer, service = trainer(tiny, run, max_infra_frac=0.4)
    training = service.create_lora_training_client(str(tiny), rank=8)
    tokenizer = load_tokenizer(str(tiny))
    group = graded_group(sandbox, answers, ["refused", "reference", "refused"], tokenizer)
    sampler = training.save_weights_and_get_sampling_client("step00001")
    batch = Batch(1, sampler, [group], RolloutTiming(started_at=time.monotonic()), None)

    with pytest.raises(InfrastructureError, match=r"step 1: 2 of 3 answers .* max_infra_frac 0.4.*sandbox did not start"):
        run_trainer._train_step(1, batch, time.monotonic(), training)

    log = RunLog(run)
    (row,) = log.metrics()
    assert (row["step"], row["grade/infra_failed"], row["datums"], row["stopped"]) == (1, 2, 0, 1)
    assert row["grade/infra_frac"] == pytest.approx(2 / 3)
    assert log.last_checkpoint()["step"] == 0 and Path(log.last_checkpoint()["state_path"]).is_dir()
    saved = [json.loads(line) for line in (run / "rollouts" / "step_00001.jsonl").read_text().splitlines()]
    assert [r["infra_failed"] for r in saved] == [True, False, True]

    # Under the threshold the same step trains, with the failed answers left out.
    run_trainer.config.max_infra_frac = 1.0
    run_trainer._train_step(1, batch, time.monotonic(), training)
    assert log.metrics()[-1]["grade/infra_failed"] == 2 and "stopped" not in log.metrics()[-1]
