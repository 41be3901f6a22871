"""The shipped agents, installed from PyPI and npm, solve a bundled problem in the sandbox.

Each agent is installed for the sandbox (once; kept in the user's cache) and plays the
bundled CRC-8 problem against a scripted model on 127.0.0.1: the model tells it to write
the reference design (the episode must pass with the reference's full shaped reward) or a
known-wrong one (it must fail its tests). The agent runs with no network; it reaches the
model only through the proxy, which records what the transcript is made of.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

from cvdp_gym.agents.episode import play_agent
from cvdp_gym.agents.install import ensure_installed
from cvdp_gym.agents.registry import AGENTS, agent_from_option
from cvdp_gym.agents.scripted import ScriptedModel, json_strings, writing_steps
from cvdp_gym.agents.transcript import agent_steps
from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.errors import AgentInstallError, ConfigError, MissingPathError
from cvdp_gym.grading import Grader, make_reward

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

CRC8 = "cvdp_gym_agentic_crc8_0001"
DATA = load_dataset("bundled")


def wrong_design() -> dict[str, str]:
    return next(c.files for c in bundled_candidates() if c.problem_id == CRC8 and c.name == "functional_bug")


@pytest.fixture(scope="module", params=sorted(AGENTS))
def agent(request, sandbox):
    recipe = AGENTS[request.param]()
    try:
        ensure_installed(recipe, sandbox, quiet=True)
    except AgentInstallError as exc:  # no registry here: the reason, not a failure
        pytest.skip(f"{request.param} cannot be installed here: {str(exc)[:300]}")
    return recipe


def play(recipe, files):
    env = gym.make("CVDP-Agentic-v0", dataset="bundled")
    try:
        env.reset(options={"problem_id": CRC8})
        with ScriptedModel(writing_steps(files, recipe.finish_command)) as model:
            _, reward, terminated, _, info = play_agent(env, recipe, endpoint=model.url, model="scripted-model", time_limit_s=300)
        written = env.unwrapped.workspace.read_text("rtl/crc8.sv")
    finally:
        env.close()
    return reward, terminated, info, written, model.requests


def test_the_agent_writes_the_reference_and_earns_its_full_reward(agent, runner):
    reward, terminated, info, written, requests = play(agent, DATA[CRC8].reference)
    expected = make_reward("shaped")(Grader(runner).grade_files(DATA[CRC8], DATA[CRC8].reference))
    assert terminated and info["passed"], info["agent"]["output"][-3000:]
    assert reward == pytest.approx(expected) == pytest.approx(1.4)
    assert written == DATA[CRC8].reference["rtl/crc8.sv"]
    run = info["agent"]
    assert run["end_reason"] == "agent_exited" and run["exit_code"] == 0
    if agent.name == "mini-swe-agent":
        assert run["status"] == "Submitted"
    # Every model call went through the proxy and was recorded; none was refused.
    assert run["requests"] == len(requests) >= 2 and run["refused"] == 0
    assert run["prompt_tokens"] > 0 and run["completion_tokens"] > 0
    # The task the agent was given is the problem's prompt.
    assert any(DATA[CRC8].prompt.strip() in text for text in json_strings(requests[0]["body"]))
    steps, messages = agent_steps(info["agent_exchanges"])
    assert len(steps) == len(requests)
    first_call = steps[0]["tool_calls"][0]
    assert "rtl/crc8.sv" in first_call["arguments"] and steps[0]["outputs"]
    assert steps[0]["outputs"][0]["tool_call_id"] == first_call["id"]
    assert messages[-1] == steps[-1]["assistant"]


def test_the_agent_writes_a_wrong_design_and_fails_its_tests(agent):
    reward, terminated, info, written, _ = play(agent, wrong_design())
    assert terminated and not info["passed"]
    assert info["failure_class"] == "test_failure" and reward < 1
    assert written == wrong_design()["rtl/crc8.sv"]


def test_the_agent_option_names_a_recipe_or_a_command(tmp_path):
    assert agent_from_option("codex").name == "codex"
    custom = agent_from_option("my-agent --fast", tmp_path)
    assert custom.name == "command" and custom.command == "my-agent --fast" and custom.install_dir == tmp_path
    with pytest.raises(ConfigError, match="installs itself"):
        agent_from_option("codex", tmp_path)
    with pytest.raises(MissingPathError):
        agent_from_option("x", tmp_path / "missing")
    with pytest.raises(ConfigError, match="empty"):
        agent_from_option("  ")
