"""The tinker-cookbook recipes (``cvdp_gym/integrations/tinker_cookbook_recipes/verilog``)
run from their command line through the cookbook's own loops: ``train.cli_main`` ->
``tinker_cookbook.rl.train.main`` and ``on_policy_distillation.cli_main`` ->
``tinker_cookbook.distillation.train_on_policy.main``, one step each.

Only the Tinker service is replaced: ``tinker.ServiceClient`` is the project's stand-in
(tests/rtl_trainer/backends/tinker_standin.py: ``tinker.types`` values and the SDK's
``APIFuture``, the local backend's real models behind them, every request recorded).
The episodes are the adapter's, graded by the real harness in the sandbox. The policy is a
tiny model that memorised the gray converter's reference answer, so greedy sampling
(``temperature=0``) writes it and the grader passes it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tinker_cookbook")

import chz
import tinker
import torch
from tinker import types
from tinker_cookbook import renderers

from cvdp_gym.data import load_dataset
from cvdp_gym.envs.single_shot import SingleShotEnv
from cvdp_gym.integrations.tinker_cookbook_recipes.verilog import on_policy_distillation, train
from rtl_trainer.backends.local import LocalServiceClient
from rtl_trainer.models import CompactVocab, save_tiny, tiny_model
from rtl_trainer.rendering import offline_tokenizer
from tests.rtl_trainer.backends.tinker_standin import Recorder, StandInServiceClient

pytestmark = pytest.mark.sandbox

PROBLEM = "cvdp_gym_gray_converter_0001"  # a short answer (~200 tokens) and a quick harness
RENDERER = "qwen3_disable_thinking"
MAX_TOKENS = 240
#: The "student" preset, narrower: memorising the answer takes ~45 steps of a few CPU seconds.
TINY = dict(hidden_size=64, intermediate_size=192, head_dim=16)


class Models:
    """The tiny models of these tests, their tokenizer, the problem's prompt and answer."""

    def __init__(self, root: Path) -> None:
        self.tokenizer = offline_tokenizer("qwen3")
        renderer = renderers.get_renderer(RENDERER, self.tokenizer)
        env = SingleShotEnv(load_dataset("bundled", ids=[PROBLEM]))
        _, info = env.reset(options={"problem_id": PROBLEM})
        messages = [renderers.Message(role=m["role"], content=m["content"]) for m in info["messages"]]
        self.prompt = renderer.build_generation_prompt(messages).to_ints()
        self.stop = renderer.get_stop_sequences()
        reference = load_dataset("bundled")[PROBLEM].reference["rtl/gray_converter.sv"]
        self.answer = self.tokenizer.encode(f"```systemverilog\n{reference}\n```<|im_end|>", add_special_tokens=False)
        vocab = CompactVocab.from_texts(self.tokenizer, [self.tokenizer.decode(self.prompt + self.answer)])
        self.memorised = self._save(memorise(tiny_model("student", vocab.size, seed=0, **TINY), vocab, self.prompt, self.answer), vocab, root / "memorised")
        self.untrained = self._save(tiny_model("student", vocab.size, seed=1, **TINY), vocab, root / "untrained")

    def _save(self, model: torch.nn.Module, vocab: CompactVocab, folder: Path) -> Path:
        save_tiny(model, vocab, folder)
        self.tokenizer.save_pretrained(folder)  # the cookbook's get_tokenizer(model_name) loads the folder
        return folder


def memorise(model: torch.nn.Module, vocab: CompactVocab, prompt: list[int], answer: list[int]) -> torch.nn.Module:
    """``model`` trained (cross-entropy on the answer) until greedy decoding after ``prompt``
    writes ``answer``."""
    ids = vocab.compact_table()[torch.tensor(prompt + answer)].unsqueeze(0)
    labels = ids.clone()
    labels[0, : len(prompt)] = -100
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for step in range(1, 201):
        model(input_ids=ids, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 5:
            continue
        with torch.no_grad():
            predicted = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].argmax(-1)
        if torch.equal(predicted, ids[0, len(prompt) :]):
            return model.eval()
    raise AssertionError("the tiny model did not memorise the answer in 200 steps")


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Models:
    return Models(tmp_path_factory.mktemp("recipe-models"))


@pytest.fixture
def tinker_service(models, tmp_path, monkeypatch) -> Recorder:
    """``tinker.ServiceClient`` is the stand-in over the local backend; its recorder."""
    recorder = Recorder()
    local = LocalServiceClient(models.tokenizer, workdir=tmp_path / "service", full_finetune=True)
    service = StandInServiceClient(local, [str(models.memorised), str(models.untrained)], recorder)

    def service_client(**kwargs: Any) -> StandInServiceClient:
        recorder.record("ServiceClient", **kwargs)
        return service

    monkeypatch.setattr(tinker, "ServiceClient", service_client)
    return recorder


def recipe_argv(tmp_path: Path, **settings: Any) -> list[str]:
    """One tiny step on the one problem, as ``key=value`` command-line arguments."""
    common = dict(
        renderer_name=RENDERER, ids=PROBLEM, groups_per_batch=1, group_size=2, max_tokens=MAX_TOKENS,
        temperature=0, learning_rate=1e-3, max_steps=1, save_every=0, eval_every=0, log_path=tmp_path / "log",
    )
    return [f"{key}={value}" for key, value in (common | settings).items()]


def step_metrics(log: Path) -> dict[str, Any]:
    rows = [json.loads(line) for line in (log / "metrics.jsonl").read_text().splitlines()]
    return next(row for row in rows if "env/all/reward/total" in row)


def check_sampling(rec: Recorder, models: Models) -> None:
    """Two samples of the renderer's prompt, with its stop sequences; greedy wrote the answer."""
    samples = rec.named("sample")
    assert len(samples) == 2
    for request in samples:
        assert request["prompt"].to_ints() == models.prompt
        assert request["sampling_params"].stop == models.stop
        assert request["sampling_params"].max_tokens == MAX_TOKENS and request["sampling_params"].temperature == 0
    for future in (f for f in rec.futures if f.method == "sample"):
        assert future.result().sequences[0].tokens == models.answer


def check_training_datums(rec: Recorder, models: Models) -> list[types.Datum]:
    """One importance-sampling step on the two episodes (prompt + answer, targets shifted),
    one optimiser step, the final checkpoint, the session closed."""
    (request,) = rec.named("forward_backward")
    assert request["loss_fn"] == "importance_sampling" and len(request["data"]) == 2
    sequence = models.prompt + models.answer
    for datum in request["data"]:
        assert datum.model_input.to_ints() == sequence[:-1]
        assert datum.loss_fn_inputs["target_tokens"].to_numpy().tolist() == sequence[1:]
    assert len(rec.named("optim_step")) == 1
    assert rec.named("save_state") and rec.named("save_weights_for_sampler")
    return request["data"]


def test_rl_recipe_runs_cookbook_rl_train(models, tinker_service, tmp_path) -> None:
    """``train`` -> ``rl.train.main``: the grader's rewards reach the step's metrics."""
    cli = chz.entrypoint(train.CLIConfig, argv=recipe_argv(tmp_path, model_name=models.memorised))
    asyncio.run(train.cli_main(cli))

    rec = tinker_service
    assert rec.named("create_lora_training_client")[0]["base_model"] == str(models.memorised)
    check_sampling(rec, models)
    data = check_training_datums(rec, models)
    # Both episodes passed (shaped reward 1.4): a constant group, so every advantage is 0.
    assert all(not np.any(d.loss_fn_inputs["advantages"].to_numpy()) for d in data)
    metrics = step_metrics(tmp_path / "log")
    assert metrics["env/all/reward/total"] == pytest.approx(1.4)
    assert metrics["env/all/passed"] == 1.0 and metrics["env/all/syntax_ok"] == 1.0
    assert metrics["env/all/tests_passed"] == metrics["env/all/tests_total"] > 0
    assert [a["status"] for a in rec.named("close")] == ["success"]


def test_distillation_recipe_runs_cookbook_on_policy_distillation(models, tinker_service, tmp_path) -> None:
    """``on_policy_distillation`` -> ``distillation.train_on_policy.main``: the teacher scores
    the student's tokens and each advantage is the negative reverse KL; the grade is logged."""
    argv = recipe_argv(tmp_path, model_name=models.memorised, teacher_model=models.untrained)
    asyncio.run(on_policy_distillation.cli_main(chz.entrypoint(on_policy_distillation.CLIConfig, argv=argv)))

    rec = tinker_service
    assert [a["base_model"] for a in rec.named("create_sampling_client")] == [str(models.untrained)]
    check_sampling(rec, models)
    data = check_training_datums(rec, models)
    teacher = {
        tuple(request["prompt"].to_ints()): future.result()
        for request, future in zip(rec.named("compute_logprobs"), (f for f in rec.futures if f.method == "compute_logprobs"), strict=True)
    }
    assert len(rec.named("compute_logprobs")) == 2  # one request per episode
    assert list(teacher) == [tuple(models.prompt + models.answer)]  # the whole episode, scored
    completion = np.arange(len(models.prompt) + len(models.answer) - 1) >= len(models.prompt) - 1
    kl_sum = 0.0
    for datum in data:
        sampled = datum.loss_fn_inputs["logprobs"].to_numpy()
        teacher_logprobs = np.array(teacher[(*datum.model_input.to_ints(), models.answer[-1])][1:], dtype=np.float32)
        reverse_kl = (sampled - teacher_logprobs) * completion
        # reward_coef=0: the group's rewards are 0, so the advantage is the KL term alone.
        np.testing.assert_allclose(datum.loss_fn_inputs["advantages"].to_numpy(), -reverse_kl, rtol=1e-5, atol=1e-5)
        kl_sum += float(reverse_kl.sum())
    metrics = step_metrics(tmp_path / "log")
    assert metrics["teacher_kl"] == pytest.approx(kl_sum / (2 * completion.sum()), rel=1e-4) and metrics["teacher_kl"] > 0
    assert metrics["env/all/reward/total"] == 0.0 and metrics["env/all/passed"] == 1.0  # graded, not rewarded
