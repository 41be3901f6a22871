"""The environments on the benchmarks beside CVDP (made-up copies in their exact layouts):
``gymnasium.make`` by the CVDP and the neutral ids, the benchmark's own prompt at reset, its
flow's verdict at step with ``info["official"]``, partial credit from the test bench's samples,
refinement feedback from its hints, and an agentic episode (``?agentic=1``) graded by the flow."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import cvdp_gym  # noqa: F401  (registers the environments)
from cvdp_gym.envs.prompts import answer_text

pytestmark = pytest.mark.sandbox

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
VE = FIXTURES / "verilog-eval"
COUNTER = "verilog-eval-v2.spec-to-rtl.Prob002_count4"


def wrong_counter(problem) -> str:
    """The reference counter with its reset value changed: it matches some samples, not all."""
    reference = problem.reference[problem.targets[0]]
    assert "<= 4'd0" in reference or "<= '0" in reference or "<= 0" in reference
    broken = reference.replace("<= 4'd0", "<= 4'd5").replace("<= '0", "<= 4'd5")
    return answer_text(problem, {problem.targets[0]: broken})


@pytest.mark.parametrize("env_id", ["CVDP-SingleShot-v0", "RTL-SingleShot-v0"])
def test_single_shot_on_verilog_eval(toolchain, env_id):
    env = gym.make(env_id, dataset="verilog-eval-v2:spec-to-rtl", benchmark_dir=str(VE), cache=False, reward="partial")
    prompt, info = env.reset(options={"problem_id": COUNTER})
    problem = env.unwrapped.problem
    assert info["messages"][-1]["content"] == prompt == problem.prompt and prompt.endswith("\nAnswer:\n")
    assert (info["problem"]["benchmark"], info["problem"]["grader"], info["problem"]["toolchain"]) == (
        "verilog-eval-v2", "verilog-eval-v2", "icarus12",
    )
    _, reward, terminated, _, info = env.step(answer_text(problem, problem.reference))
    assert terminated and info["passed"] and info["official"]["class"] == "." and reward == pytest.approx(1.4)

    env.reset(options={"problem_id": COUNTER})
    _, reward, _, _, info = env.step(wrong_counter(problem))
    tests = info["tests"]
    assert not info["passed"] and info["failure_class"] == "test_failure" and info["official"]["class"] in ("r", "R")
    assert 0 < tests["passed"] < tests["total"] == info["official"]["samples"]
    assert tests["failed"] == info["official"]["mismatches"]
    # partial: 0.1 (code) + 0.3 (compiles) + the fraction of samples that matched
    assert reward == pytest.approx(0.4 + tests["passed"] / tests["total"])
    env.close()


def test_refine_feedback_shows_the_test_bench_hints(toolchain):
    env = gym.make("RTL-Refine-v0", dataset="verilog-eval-v2:spec-to-rtl", benchmark_dir=str(VE), cache=False,
                   feedback="tests", max_attempts=2)
    env.reset(options={"problem_id": COUNTER})
    problem = env.unwrapped.problem
    feedback, _, terminated, _, info = env.step(wrong_counter(problem))
    assert not terminated and "samples mismatched" in info["feedback"] and "Hint: Output" in info["feedback"]
    assert info["feedback"] in feedback
    _, _, terminated, _, info = env.step(answer_text(problem, problem.reference))
    assert terminated and info["passed"]
    env.close()


def test_an_agentic_episode_on_a_benchmark_problem(toolchain):
    env = gym.make("RTL-Agentic-v0", dataset="rtllm-v2?agentic=1", benchmark_dir=str(FIXTURES / "rtllm"), cache=False)
    problem_id = "rtllm-v2.adder_4bit"
    _, info = env.reset(options={"problem_id": problem_id})
    problem = env.unwrapped.problem
    assert problem.agentic and problem.targets == ("rtl/adder_4bit.v",) and "docs/specification.md" in problem.context
    reference = problem.reference[problem.targets[0]]
    call = {"name": "execute_bash", "arguments": {"command": f"cat > {problem.targets[0]} <<'EOF'\n{reference}\nEOF"}}
    env.step("<tool_call>\n" + json.dumps(call) + "\n</tool_call>")
    _, reward, terminated, _, info = env.step("Done.")
    assert terminated and info["passed"] and info["official"]["auto_run"] and info["graded_files"] == ["rtl/adder_4bit.v"]
    assert reward == pytest.approx(1.4)
    env.close()


@pytest.mark.parametrize("spec, copy", [
    ("verilog-eval-v2:code-complete-iccad2023", "verilog-eval"), ("verilog-eval-v1", "verilog-eval-v1"),
    ("rtllm-v2", "rtllm"), ("rtllm-v1.1", "rtllm-v1.1"),
])
def test_every_benchmark_resets_and_steps_with_the_documented_info(toolchain, spec, copy):
    from tests.test_public_api import PINNED_INFO

    env = gym.make("RTL-SingleShot-v0", dataset=spec, benchmark_dir=str(FIXTURES / copy), cache=False)
    first = env.unwrapped.problems[0].id  # (the copies' slow-watchdog problem is a defect: its reference times out)
    _, info = env.reset(seed=0, options={"problem_id": first})
    assert sorted(info) == PINNED_INFO["CVDP-SingleShot-v0"]["reset"]
    problem = env.unwrapped.problem
    assert info["problem"]["benchmark"] == spec.split(":")[0] and info["messages"][-1]["content"] == problem.prompt
    _, reward, terminated, truncated, info = env.step(answer_text(problem, problem.reference))
    assert sorted(info) == PINNED_INFO["CVDP-SingleShot-v0"]["step"]
    assert terminated and not truncated and info["passed"] and info["official"] and reward == pytest.approx(1.4)
    env.close()
