"""tinker-cookbook 0.6.1 adapter: real cookbook rollouts (renderer, rollout loop, group
rewards) graded by the real simulator, and one step of ``tinker_cookbook.rl.train.main``
on a tiny model, with the local backend standing in for the Tinker service only."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tinker_cookbook")

import tinker
from tinker_cookbook import renderers
from tinker_cookbook.completers import TokenCompleter, TokensWithLogprobs
from tinker_cookbook.rl.rollouts import do_group_rollout

from cvdp_gym.data import load_dataset
from cvdp_gym.integrations.tinker_cookbook import (
    CVDPDataset,
    CVDPDatasetBuilder,
    CVDPEnvGroupBuilder,
)
from tests.support import BUNDLED

pytestmark = pytest.mark.sandbox

SINGLE = "cvdp_gym_traffic_light_0001"  # the cheapest bundled harness (~0.8 s)
AGENTIC = "cvdp_gym_agentic_pwm_gen_0001"


@pytest.fixture(scope="module")
def renderer() -> renderers.Renderer:
    from rtl_trainer.rendering import offline_tokenizer

    return renderers.get_renderer("qwen3_disable_thinking", offline_tokenizer("qwen3"))


class ScriptedPolicy(TokenCompleter):
    """Plays fixed assistant turns (text as a Qwen3 model writes it), one per call."""

    def __init__(self, renderer: renderers.Renderer, turns: list[str]) -> None:
        self.tokenizer = renderer.tokenizer
        self.turns = list(turns)
        self.prompts: list[tinker.ModelInput] = []

    async def __call__(self, model_input, stop, *, max_tokens=None) -> TokensWithLogprobs:
        self.prompts.append(model_input)
        text = self.turns.pop(0) + "<|im_end|>"
        tokens = self.tokenizer.encode(text, add_special_tokens=False)
        return TokensWithLogprobs(tokens=tokens, maybe_logprobs=[0.0] * len(tokens), stop_reason="stop")


def tool_call(name: str, **arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def test_single_shot_group_rollout_graded_by_the_simulator(renderer, toolchain) -> None:
    problem = load_dataset("bundled")[SINGLE]
    wrong = (BUNDLED / SINGLE / "candidates" / "functional_bug" / "rtl" / "traffic_light.sv").read_text()
    answers = [f"```systemverilog\n{problem.reference['rtl/traffic_light.sv']}\n```", f"```systemverilog\n{wrong}\n```"]
    builder = CVDPEnvGroupBuilder(SINGLE, renderer, group_size=2)
    group = asyncio.run(do_group_rollout(builder, ScriptedPolicy(renderer, answers)))
    assert group.get_total_rewards() == pytest.approx([1.4, 0.4])
    first = group.trajectories_G[0].transitions[0]
    assert first.metrics["passed"] == 1.0 and group.trajectories_G[1].transitions[0].metrics["passed"] == 0.0
    prompt = renderer.tokenizer.decode(first.ob.to_ints())
    assert prompt.startswith("<|im_start|>system") and prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_reward_coef_scales_the_return_and_keeps_the_grade(renderer, toolchain) -> None:
    from cvdp_gym.integrations.tinker_cookbook import EnvOptions

    reference = load_dataset("bundled")[SINGLE].reference["rtl/traffic_light.sv"]
    builder = CVDPEnvGroupBuilder(SINGLE, renderer, group_size=1, options=EnvOptions(reward_coef=0.0))
    group = asyncio.run(do_group_rollout(builder, ScriptedPolicy(renderer, [f"```systemverilog\n{reference}\n```"])))
    assert group.get_total_rewards() == [0.0]
    assert group.trajectories_G[0].transitions[0].metrics["passed"] == 1.0


def test_agentic_rollout_with_tool_calls(renderer, toolchain) -> None:
    reference = load_dataset("bundled")[AGENTIC].reference["rtl/pwm_gen.sv"]
    turns = [
        "Let me look." + tool_call("execute_bash", command="ls rtl"),
        tool_call("execute_bash", command=f"cat > rtl/pwm_gen.sv <<'EOF'\n{reference}\nEOF"),
        tool_call("execute_bash", comand="typo") + tool_call("finish", message="done"),
    ]
    policy = ScriptedPolicy(renderer, turns)
    group = asyncio.run(do_group_rollout(CVDPEnvGroupBuilder(AGENTIC, renderer, 1, agentic=True), policy))
    trajectory = group.trajectories_G[0]
    assert len(trajectory.transitions) == 3 and trajectory.transitions[-1].episode_done
    assert group.get_total_rewards() == [pytest.approx(1.4)]
    last = trajectory.transitions[-1].metrics
    assert last["passed"] == 1.0 and last["malformed_calls"] == 1.0 and last["commands_run"] == 2.0
    assert trajectory.stop_reason == "completed"
    # The second prompt extends the first with the turn and its tool result, rendered by Qwen3.
    second = renderer.tokenizer.decode(policy.prompts[1].to_ints())
    assert "<tools>" in second and "<tool_response>" in second and "pwm_gen.sv" in second.split("<tool_response>")[1]


def test_agentic_max_turns_and_wrong_answer(renderer, toolchain) -> None:
    from cvdp_gym.integrations.tinker_cookbook import EnvOptions

    builder = CVDPEnvGroupBuilder(AGENTIC, renderer, 1, agentic=True, options=EnvOptions(max_turns=1))
    group = asyncio.run(do_group_rollout(builder, ScriptedPolicy(renderer, [tool_call("execute_bash", command="ls")])))
    trajectory = group.trajectories_G[0]
    assert trajectory.stop_reason == "max_turns" and group.get_total_rewards()[0] < 1.0


def test_dataset_batches(renderer) -> None:
    ids = load_dataset("bundled", ids=[SINGLE, "cvdp_gym_edge_detector_0001", "cvdp_gym_gray_converter_0001"]).ids
    dataset = CVDPDataset(ids, renderer, batch_size=2, group_size=3)
    assert len(dataset) == 2
    batch = dataset.get_batch(1)
    assert len(batch) == 2 and all(b.group_size == 3 for b in batch)
    assert sorted({b.problem_id for b in [*dataset.get_batch(0), *batch]}) == sorted(ids)
    with pytest.raises(ValueError):
        CVDPDataset([], renderer, batch_size=1, group_size=1)


class _Ready:
    """An already-finished SDK future: Tinker 0.38's service methods return awaitables."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self, timeout: float | None = None) -> Any:
        return self.value

    def __await__(self):
        if False:
            yield
        return self.value


class _TrainingClient:
    def __init__(self, local: Any) -> None:
        self._local = local

    def __getattr__(self, name: str) -> Any:
        return getattr(self._local, name)

    def save_weights_and_get_sampling_client(self, *args: Any, **kwargs: Any) -> _Ready:
        kwargs.pop("record_stability_info", None)
        return _Ready(self._local.save_weights_and_get_sampling_client(*args, **kwargs))


class _ServiceClient:
    """``tinker.ServiceClient`` backed by rtl_trainer's in-process local backend."""

    def __init__(self, local: Any) -> None:
        self._local = local

    def __enter__(self) -> _ServiceClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def create_lora_training_client(self, base_model: str, **kwargs: Any) -> _Ready:
        kwargs.pop("user_metadata", None)
        return _Ready(_TrainingClient(self._local.create_lora_training_client(base_model, **kwargs)))


def test_one_step_of_cookbook_rl_train(tmp_path: Path, monkeypatch, toolchain) -> None:
    from tinker_cookbook.rl import train

    from rtl_trainer.backends.local import LocalServiceClient
    from rtl_trainer.models import CompactVocab, save_tiny, tiny_model
    from rtl_trainer.rendering import offline_tokenizer

    tokenizer = offline_tokenizer("qwen3")
    model_dir = tmp_path / "tiny"
    problem = load_dataset("bundled")[SINGLE]
    vocab = CompactVocab.from_texts(tokenizer, [problem.reference["rtl/traffic_light.sv"], "```systemverilog\n```"])
    save_tiny(tiny_model("student", vocab.size, seed=0), vocab, model_dir)
    tokenizer.save_pretrained(model_dir)  # cookbook's get_tokenizer(model_name) loads a local folder

    local = LocalServiceClient(tokenizer, workdir=tmp_path / "work", full_finetune=True)
    monkeypatch.setattr(tinker, "ServiceClient", lambda **kwargs: _ServiceClient(local))
    monkeypatch.setattr(train, "fetch_model_pricing", lambda *a, **k: None)  # a web page
    config = train.Config(
        learning_rate=1e-3,
        dataset_builder=CVDPDatasetBuilder(
            model_name_for_tokenizer=str(model_dir), renderer_name="qwen3_disable_thinking",
            batch_size=1, group_size=2, ids=(SINGLE,),
        ),
        model_name=str(model_dir),
        renderer_name="qwen3_disable_thinking",
        recipe_name="cvdp_test",
        max_tokens=8,
        log_path=str(tmp_path / "log"),
        eval_every=0,
        save_every=0,
        max_steps=1,
    )
    asyncio.run(train.main(config))
    metrics = [json.loads(line) for line in (tmp_path / "log" / "metrics.jsonl").read_text().splitlines()]
    step = next(m for m in metrics if "env/all/reward/total" in m)
    assert 0.0 <= step["env/all/reward/total"] <= 1.4
    assert "env/all/passed" in step and "env/all/format_ok" in step
    assert (tmp_path / "work" / "checkpoints").is_dir()  # the final checkpoint went through the backend
