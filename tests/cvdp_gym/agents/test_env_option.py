"""``CVDP-Agentic-v0``'s ``agent`` option: every episode played by a command-line agent.

The agent here is a plain command with its own installation folder (the design it will
copy in), so the test needs no registry: it checks the option's contract (one step per
episode, the action ignored, the grade and the agent's facts in ``info``) with real
sandboxes and real grading.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import cvdp_gym  # noqa: F401  (registers the environments)
from cvdp_gym.agents import AgentPlayer, CommandAgent
from cvdp_gym.agents.scripted import ScriptedModel
from cvdp_gym.data import bundled_candidates, load_dataset

pytestmark = pytest.mark.sandbox

CRC8 = "cvdp_gym_agentic_crc8_0001"
DATA = load_dataset("bundled")


def test_the_agent_option_plays_each_episode_in_one_step(tmp_path):
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "crc8.sv").write_text(DATA[CRC8].reference["rtl/crc8.sv"])
    wrong = next(c.files for c in bundled_candidates() if c.problem_id == CRC8 and c.name == "functional_bug")
    (tmp_path / "bad.sv").write_text(wrong["rtl/crc8.sv"])
    # The "agent" asks the model once (so the proxy has something to record), then copies
    # in the design named by the file the episode's sample chose.
    command = (
        'python3 -c "import os,urllib.request; urllib.request.urlopen(os.environ[\'OPENAI_BASE_URL\'] + \'/models\', timeout=10)" '
        "&& cp /agent/good/crc8.sv rtl/crc8.sv && grep -q 'Do not change the module name' \"$CVDP_PROMPT_FILE\""
    )
    with ScriptedModel([]) as model:
        player = AgentPlayer(CommandAgent(command, tmp_path), endpoint=model.url, model="m", time_limit_s=60)
        env = gym.make("CVDP-Agentic-v0", dataset="bundled", agent=player)
        try:
            env.reset(options={"problem_id": CRC8})
            _, reward, terminated, truncated, info = env.step("this action is ignored")
            assert terminated and not truncated and reward == pytest.approx(1.4) and info["passed"]
            assert info["end_reason"] == "agent_exited" and info["agent"]["exit_code"] == 0
            assert info["agent"]["requests"] == 1 and info["agent_exchanges"][0]["path"] == "/v1/models"
            assert info["graded_files"] == ["rtl/crc8.sv"]
            with pytest.raises(RuntimeError, match="reset"):
                env.step(None)
            # A failing agent: the episode still ends in one step, graded as left.
            env.unwrapped.agent = AgentPlayer(CommandAgent("cp /agent/bad.sv rtl/crc8.sv && exit 3", tmp_path), endpoint=model.url, model="m")
            env.reset(options={"problem_id": CRC8})
            _, reward, terminated, _, info = env.step(None)
            assert terminated and not info["passed"] and info["failure_class"] == "test_failure"
            assert info["end_reason"] == "agent_failed" and info["agent"]["exit_code"] == 3 and reward < 1
        finally:
            env.close()
