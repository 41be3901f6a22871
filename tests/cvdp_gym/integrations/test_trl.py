"""TRL 1.16 adapter: reward functions graded by the real simulator, one real GRPO step on a
tiny model built from a config, and an agentic rollout through TRL's tool loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("datasets")

from cvdp_gym.data import load_dataset
from cvdp_gym.integrations.trl import (
    AgenticToolEnv,
    agentic_reward_function,
    grpo_dataset,
    reward_function,
)
from tests.support import BUNDLED

pytestmark = pytest.mark.sandbox

SINGLE = "cvdp_gym_traffic_light_0001"  # the cheapest bundled harness (~0.8 s)
AGENTIC = "cvdp_gym_agentic_pwm_gen_0001"


def fenced(code: str) -> str:
    return f"Here is the design.\n```systemverilog\n{code}\n```"


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A 2-layer Qwen3 model over the full offline Qwen tokenizer, saved with it."""
    from rtl_trainer.models import tiny_model
    from rtl_trainer.rendering import offline_tokenizer

    tokenizer = offline_tokenizer("qwen3")
    path = tmp_path_factory.mktemp("trl-tiny")
    model = tiny_model("student", len(tokenizer), seed=0, hidden_size=32, head_dim=16, intermediate_size=64)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def grpo_args(tmp_path: Path, **overrides):
    from trl import GRPOConfig

    fields = dict(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        max_steps=1,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=0,
        gradient_checkpointing=False,
    )
    fields.update(overrides)
    return GRPOConfig(**fields)


def short_prompts(dataset):
    """The rows with each message cut to 200 characters: TRL's logprob kernel costs prompt
    length x the 151k-token vocabulary on CPU, and a random model does not read the task."""
    return dataset.map(lambda row: {"prompt": [{**m, "content": m["content"][:200]} for m in row["prompt"]]})


def test_reward_functions_grade_a_batch_with_the_simulator(toolchain) -> None:
    problem = load_dataset("bundled")[SINGLE]
    wrong = (BUNDLED / SINGLE / "candidates" / "functional_bug" / "rtl" / "traffic_light.sv").read_text()
    completions = [fenced(problem.reference["rtl/traffic_light.sv"]), fenced(wrong), "no code at all"]
    logged: dict[str, float] = {}
    kwargs = dict(
        prompts=[[{"role": "user", "content": "..."}]] * 3,
        completions=[[{"role": "assistant", "content": c}] for c in completions],
        problem_id=[SINGLE] * 3,
        log_metric=logged.__setitem__,
    )
    shaped = asyncio.run(reward_function("shaped")(**kwargs))
    assert shaped == pytest.approx([1.4, 0.4, 0.0])
    assert logged["cvdp/pass_rate"] == pytest.approx(1 / 3)
    assert asyncio.run(reward_function("binary")(**kwargs)) == [1.0, 0.0, 0.0]
    partial = asyncio.run(reward_function("partial")(**kwargs))
    assert partial[0] == pytest.approx(1.4) and 0.4 <= partial[1] < 1.4 and partial[2] == 0.0
    with pytest.raises(KeyError, match="not_a_problem"):
        asyncio.run(reward_function("shaped")(**{**kwargs, "problem_id": ["not_a_problem"] * 3}))


def test_one_grpo_step_on_a_tiny_model(tiny_model_dir: Path, tmp_path: Path, toolchain) -> None:
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    train = grpo_dataset("bundled", ids=[SINGLE])
    assert train.column_names == ["prompt", "problem_id"] and train[0]["prompt"][0]["role"] == "system"
    trainer = GRPOTrainer(
        model=str(tiny_model_dir),
        reward_funcs=reward_function("shaped"),
        args=grpo_args(tmp_path),
        train_dataset=short_prompts(train),
        processing_class=AutoTokenizer.from_pretrained(tiny_model_dir),
    )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    logs = {k: v for entry in trainer.state.log_history for k, v in entry.items()}
    assert "rewards/cvdp_shaped/mean" in logs and "cvdp/pass_rate" in logs
    assert 0.0 <= logs["rewards/cvdp_shaped/mean"] <= 1.4
    assert trainer.state.global_step == 1
    changed = any(not p.detach().equal(before[n]) for n, p in trainer.model.named_parameters())
    # Random tiny-model answers all score alike, so GRPO's advantages (and the update) may be 0;
    # the step itself must still have run through TRL's optimizer.
    assert changed or logs["rewards/cvdp_shaped/std"] == 0.0


def test_agentic_tool_env_solves_with_bash_and_is_graded(toolchain) -> None:
    problem = load_dataset("bundled")[AGENTIC]
    env = AgenticToolEnv()
    env.reset(problem_id=AGENTIC)
    assert "pwm_gen" in env.execute_bash("ls rtl")
    reference = problem.reference["rtl/pwm_gen.sv"]
    env.execute_bash(f"cat > rtl/pwm_gen.sv <<'EOF'\n{reference}\nEOF")
    assert env.finish("wrote the design").startswith("finished")
    assert env.execute_bash("ls") == "error: the episode is over"
    rewards = agentic_reward_function()(prompts=[None], completions=[[]], environments=[env])
    assert rewards == [pytest.approx(1.4)]

    env.reset(problem_id=AGENTIC)  # unchanged starting files do not pass
    assert agentic_reward_function()(prompts=[None], completions=["I give up."], environments=[env])[0] < 1.0


def test_agentic_rollout_through_trl_tool_loop(tiny_model_dir: Path, tmp_path: Path, toolchain) -> None:
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    trainer = GRPOTrainer(
        model=str(tiny_model_dir),
        reward_funcs=agentic_reward_function(),
        args=grpo_args(tmp_path, max_tool_calling_iterations=2),
        train_dataset=short_prompts(grpo_dataset("bundled", agentic=True, ids=[AGENTIC])),
        processing_class=AutoTokenizer.from_pretrained(tiny_model_dir),
        environment_factory=AgenticToolEnv,
    )
    trainer.train()
    logs = {k: v for entry in trainer.state.log_history for k, v in entry.items()}
    assert trainer.state.global_step == 1
    # The random model's turns are graded on the workspace it leaves: the starting files fail.
    assert logs["rewards/cvdp_agentic/mean"] < 1.0 and logs["cvdp/pass_rate"] == 0.0


def test_a_verification_task_reaches_trl_through_its_dataset_string(toolchain) -> None:
    """``dataset="...#testbench"``: the reward function grades test benches by the bugs they
    catch (``kills``), as every adapter that names a dataset by a string can."""
    spec = str(Path(__file__).parents[2] / "fixtures" / "training" / "generic.jsonl") + "#testbench"
    bench = """module tb;
  reg clk = 0, rst = 1, en = 0; wire [3:0] q; reg [3:0] model; integer i;
  step_counter dut(.clk(clk), .rst(rst), .en(en), .q(q));
  always #5 clk = ~clk;
  initial begin
    @(negedge clk); rst = 0; model = 0;
    for (i = 0; i < 40; i = i + 1) begin
      en = i % 4 != 0; @(negedge clk); if (en) model = model + 3;
      if (q !== model) $error("q=%0d expected %0d", q, model);
    end
    $finish;
  end
endmodule
"""
    silent = bench.replace('if (q !== model) $error("q=%0d expected %0d", q, model);', "")
    problem_id = "reference-set.step_counter.testbench"
    kwargs = dict(
        prompts=[[{"role": "user", "content": "..."}]] * 2,
        completions=[[{"role": "assistant", "content": f"```verilog\n{b}```"}] for b in (bench, silent)],
        problem_id=[problem_id] * 2,
    )
    assert asyncio.run(reward_function("kills", dataset=spec, cache=False)(**kwargs)) == [1.0, 0.0]
