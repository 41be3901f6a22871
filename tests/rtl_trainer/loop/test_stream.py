"""Streaming minibatches (``num_minibatches``): minibatches add up to the whole step's update,
and a real run trains its first groups while the last one still grades, with the metrics
of a run without streaming."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tinker import types

from rtl_trainer.backends import load_tokenizer
from rtl_trainer.backends.local import LocalServiceClient
from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import ConfigError
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.loop.stream import GroupStream, combine_metrics
from rtl_trainer.loop.train import Trainer
from rtl_trainer.losses import Turn, pack_turns
from rtl_trainer.rollouts import Group

IDS = ["cvdp_gym_gray_converter_0001", "cvdp_gym_priority_encoder_0001"]
ANSWERS = [
    "module m(input a, output y); assign y = ~a; endmodule",
    "module gray(input [3:0] b, output [3:0] g); assign g = b ^ (b >> 1); endmodule",
    "module r(input clk, input d, output reg q); always @(posedge clk) q <= d; endmodule",
    "module p(input [3:0] i, output reg [1:0] o); always @* o = i[3] ? 2'd3 : 2'd0; endmodule",
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """The demo's tiny student architecture (offline Qwen tokenizer, compact vocabulary)."""
    from rtl_trainer.demo import build_models

    out = tmp_path_factory.mktemp("tiny")
    _, student = build_models(out, TrainConfig(student="unset", ids=IDS, run_dir=str(out)))
    return student


def config(run: Path, tiny: Path, **changes: Any) -> TrainConfig:
    base = TrainConfig(
        mode="rl", backend="local", student=str(tiny), renderer="qwen3_instruct", ids=IDS, full_finetune=True,
        max_prompt_tokens=48, max_tokens=24, groups_per_step=2, group_size=2, save_every=0,
        learning_rate=1e-3, grade_cache=False, run_dir=str(run),
    )
    return replace(base, **changes)


def service(tiny: Path, run: Path) -> LocalServiceClient:
    return LocalServiceClient(load_tokenizer(str(tiny)), workdir=run, full_finetune=True)


def test_minibatches_add_up_to_the_whole_batch_update(tiny, tmp_path):
    """The same datums as one ``forward_backward`` or as two, each followed by one
    ``optim_step``: the same gradients, weights and log-probs, and the same metrics once
    the two calls' are combined."""
    tokenizer = load_tokenizer(str(tiny))
    prompt = tokenizer.encode("Write the module.")
    answers = [tokenizer.encode(text) for text in ANSWERS]
    turns = [Turn(prompt, a, [-6.0] * len(a), 1.0 if i % 2 else -0.5) for i, a in enumerate(answers)]
    datums = [d for turn in turns for d in pack_turns([turn])]
    svc = service(tiny, tmp_path)
    whole, split = svc.create_lora_training_client(str(tiny)), svc.create_lora_training_client(str(tiny))
    one = whole.forward_backward(datums, "importance_sampling").result()
    two = [split.forward_backward(datums[:1], "importance_sampling"), split.forward_backward(datums[1:], "importance_sampling")]
    two = [call.result() for call in two]
    for a, b in zip(whole.model.parameters(), split.model.parameters(), strict=True):
        assert a.grad is not None and b.grad is not None
        assert float((a.grad - b.grad).norm() / a.grad.norm()) < 1e-5  # fp32 rounding (~2e-7)
    combined = combine_metrics(two)
    assert set(combined) == set(one.metrics) >= {"loss:sum", "action_tokens:sum", "ratio:mean", "clip_fraction:mean"}
    for key, value in one.metrics.items():
        assert combined[key] == pytest.approx(value, rel=1e-5), key

    # Adam's first step is about g / |g|, which blows the rounding of near-zero gradients up
    # to a full step; an eps above that rounding keeps the comparison about accumulation.
    adam = types.AdamParams(learning_rate=1e-3, eps=1e-2)
    before = whole.forward(datums, "importance_sampling").result().loss_fn_outputs
    whole.optim_step(adam).result()
    split.optim_step(adam).result()
    for a, b in zip(whole.model.parameters(), split.model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    after = [c.forward(datums, "importance_sampling").result().loss_fn_outputs for c in (whole, split)]
    for x, y, b in zip(*after, before, strict=True):
        np.testing.assert_allclose(x["logprobs"].to_numpy(), y["logprobs"].to_numpy(), rtol=1e-5, atol=1e-5)
        assert np.abs(x["logprobs"].to_numpy() - b["logprobs"].to_numpy()).max() > 1e-3  # the step moved them


class SlowProblem(gym.Wrapper):
    """Grades ``slow_id``'s answers ``delay_s`` late, so the step's other group is in first."""

    def __init__(self, env: gym.Env, slow_id: str, delay_s: float) -> None:
        super().__init__(env)
        self.slow_id, self.delay_s, self.slow = slow_id, delay_s, False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self.slow = (options or {}).get("problem_id") == self.slow_id
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        if self.slow:
            time.sleep(self.delay_s)
        return self.env.step(action)


@pytest.mark.sandbox
def test_a_streamed_run_trains_before_its_last_group_is_graded(tiny, tmp_path, toolchain):
    """RL with two groups a step in two minibatches: the first group's ``forward_backward``
    is submitted while the other group still grades, and every step logs the keys of a run
    without streaming."""
    plain, streamed = tmp_path / "plain", tmp_path / "streamed"
    Trainer(config(plain, tiny, steps=1), service(tiny, plain)).run()

    def make_env() -> gym.Env:
        return SlowProblem(gym.make("CVDP-SingleShot-v0", ids=IDS, cache=False), IDS[0], 1.5)

    # Groups reach training in the step's order: seed 2 draws the slow problem second in both
    # steps (drawn first, it would hold the other group back until it is graded).
    Trainer(config(streamed, tiny, steps=2, num_minibatches=2, grade_workers=4, seed=2), service(tiny, streamed),
            make_env=make_env).run()
    (base,) = RunLog(plain).metrics()
    rows = RunLog(streamed).metrics()
    assert [r["step"] for r in rows] == [0, 1]
    assert (base["stream/minibatches"], base["stream/early_minibatches"]) == (1, 0)
    for row in rows:
        assert set(row) == set(base)
        assert (row["rollouts"], row["datums"]) == (4, 4)
        assert (row["stream/minibatches"], row["stream/early_minibatches"]) == (2, 1)
        assert row["time/train_overlap"] > 0
    assert RunLog(streamed).last_checkpoint()["step"] == 1


@pytest.mark.sandbox
def test_streaming_on_a_multi_turn_env_off_policy(tiny, tmp_path, toolchain):
    """CVDP-Refine-v0 episodes (the tiny model writes no code: nothing simulates), the next
    step sampled while this one trains: each group reaches training when its last episode
    ends, the second step's groups from a collection that started a step earlier."""
    run = tmp_path / "refine"
    cfg = config(run, tiny, env="CVDP-Refine-v0", refine_max_attempts=2, max_tokens=8, steps=2, num_minibatches=2,
                 max_steps_off_policy=1)
    Trainer(cfg, service(tiny, run)).run()
    rows = RunLog(run).metrics()
    assert [r["off_policy/staleness"] for r in rows] == [0, 1]
    for row in rows:
        assert (row["rollouts"], row["stream/minibatches"]) == (4, 2) and row["datums"] >= 4


def test_groups_reach_training_in_the_steps_order_each_as_soon_as_the_ones_before_it_are_in():
    """Whatever order grading finishes in, the trainer gets a step's groups in its order, so
    its minibatches (and the rounding of their sums) are the same on any machine; after a
    failed collection, what did arrive follows in order."""
    stream = GroupStream()
    groups = [Group(f"p{i}", [], i) for i in range(4)]
    for index in (2, 0):
        stream.put(groups[index])
    got = iter(stream)
    assert next(got) is groups[0]  # at once: 1 is still grading, so 2 waits
    stream.put(groups[1])
    assert [next(got), next(got)] == [groups[1], groups[2]]
    stream.put(groups[3])
    stream.close()
    assert list(got) == [groups[3]]

    broken = GroupStream()
    for index in (3, 1):
        broken.put(groups[index])
    broken.close()
    assert list(broken) == [groups[1], groups[3]]


def test_num_minibatches_is_checked():
    good = TrainConfig(mode="rl", student="m", groups_per_step=6, num_minibatches=3)
    good.validate()
    with pytest.raises(ConfigError, match="num_minibatches must be >= 1"):
        replace(good, num_minibatches=0).validate()
    with pytest.raises(ConfigError, match=r"groups_per_step \(6\) must be divisible by num_minibatches \(4\)"):
        replace(good, num_minibatches=4).validate()
    replace(good, max_steps_off_policy=1).validate()  # streaming combines with off-policy sampling
