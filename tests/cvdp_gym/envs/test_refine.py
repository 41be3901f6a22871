"""CVDP-Refine-v0: scripted agents that can only fix an answer from what the feedback says.

Each agent starts from a known-wrong bundled candidate and knows one repair, which it can
only carry out with a detail that appears in the feedback (a line number, a port name, an
assertion message). So it reaches the full reward exactly in the feedback modes that give
that detail, which shows the feedback carries it. Messages are built the way the trainer's
multi-turn loop builds them (``run_episode``: the assistant's text, then
``info["tool_messages"]``). One grade cache for the module: each distinct answer is
simulated once (about three simulations in all).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import cvdp_gym  # noqa: F401  (registers the environments)
from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.grading.rewards import MAX_SHAPED

pytestmark = pytest.mark.sandbox

PID = "cvdp_gym_edge_detector_0001"
TARGET = "rtl/edge_detector.sv"
PROBLEM = load_dataset("bundled", ids=[PID])[PID]
CANDIDATES = {c.name: c.files[TARGET] for c in bundled_candidates() if c.problem_id == PID}

Repair = Callable[[str, str], str | None]  # (code, feedback) -> fixed code, or None


def close_module_at_eof(code: str, feedback: str) -> str | None:
    """A syntax error reported on the file's last line: an unclosed module."""
    match = re.search(rf"{re.escape(TARGET)}:(\d+): syntax error", feedback)
    if match and int(match.group(1)) >= len(code.rstrip("\n").splitlines()):
        return code.rstrip("\n") + "\n\nendmodule\n"
    return None


def rename_port(code: str, feedback: str) -> str | None:
    """Rename the port the tests do not expect to the one they miss."""
    missing = re.search(r"Missing ports of \w+: (\w+)", feedback)
    extra = re.search(r"not expected: (\w+)", feedback)
    if missing and extra:
        return re.sub(rf"\b{extra.group(1)}\b", missing.group(1), code)
    return None


def swap_edge_pulses(code: str, feedback: str) -> str | None:
    """A test says a rising transition gave no rise pulse: the two pulse expressions are swapped."""
    if re.search(r"- test_\w+: AssertionError: .*rising transition: rise_pulse=0, expected 1", feedback):
        rise = re.search(r"rise_pulse <= (.*sig_in.*);", code).group(1)
        fall = re.search(r"fall_pulse <= (.*sig_in.*);", code).group(1)
        code = code.replace(f"rise_pulse <= {rise};", "rise_pulse <= @RISE@;").replace(f"fall_pulse <= {fall};", f"fall_pulse <= {rise};")
        return code.replace("@RISE@", fall)
    return None


SCENARIOS = {"syntax_error": close_module_at_eof, "wrong_port_name": rename_port, "functional_bug": swap_edge_pulses}
#: Which feedback modes carry the detail each repair needs.
FIXABLE = {
    "syntax_error": {"compile", "interface", "tests"},
    "wrong_port_name": {"interface", "tests"},
    "functional_bug": {"tests"},
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> GradeCache:
    return GradeCache(tmp_path_factory.mktemp("refine") / "grades.sqlite")


def run_scripted(env: gym.Env, start: str, repair: Repair) -> tuple[float, dict, list[dict]]:
    """One episode: answer ``start``, then repair from each feedback message; returns the
    episode's reward, the last info and the chat messages as the trainer would build them."""
    _, info = env.reset(options={"problem_id": PID})
    messages = list(info["messages"])
    code = start
    while True:
        text = answer_text(PROBLEM, {TARGET: code})
        _, reward, terminated, truncated, info = env.step(text)
        messages.append({"role": "assistant", "content": text})
        messages.extend(info.get("tool_messages", []))
        if terminated or truncated:
            return reward, info, messages
        code = repair(code, messages[-1]["content"]) or code


def test_make_and_check_env(toolchain):
    env = gym.make("CVDP-Refine-v0", cache=False)
    assert {p.id for p in env.unwrapped.problems} == {p.id for p in load_dataset("bundled") if not p.agentic}
    check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize("mode", ["compile", "interface", "tests"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_scripted_agent_fixes_what_the_feedback_reveals(toolchain, cache, mode, scenario):
    env = gym.make("CVDP-Refine-v0", feedback=mode, max_attempts=3, cache=cache)
    reward, info, messages = run_scripted(env, CANDIDATES[scenario], SCENARIOS[scenario])
    env.close()
    attempts = info["attempts"]
    assert [m["role"] for m in messages[:3]] == ["system", "user", "assistant"]
    assert all(m["role"] == "user" for m in messages[3::2]) and all(m["role"] == "assistant" for m in messages[2::2])
    if mode in FIXABLE[scenario]:
        assert reward == pytest.approx(MAX_SHAPED)  # 1.4
        assert info["passed"] and info["end_reason"] == "passed" and info["tool_messages"] == []
        assert len(attempts) == 2 and not attempts[0]["passed"] and attempts[1]["passed"]
    else:
        assert reward == pytest.approx(0.4)  # compiles, never passes
        assert info["end_reason"] == "max_attempts" and len(attempts) == 3
        assert attempts[1]["repeat"] and attempts[2]["repeat"]  # same answer, graded once
    first_feedback = messages[3]["content"]
    if scenario == "syntax_error":
        assert re.search(r"\nrtl/edge_detector\.sv:\d+: syntax error", first_feedback) and "/code/" not in first_feedback
    if scenario == "wrong_port_name":
        assert ("rst_n" in first_feedback) == (mode != "compile")
        assert ("reset_n" in first_feedback) == (mode != "compile")
    if scenario == "functional_bug":
        assert ("3 of 4 tests failed" in first_feedback) == (mode == "tests")
        assert ("test_single_pulses" in first_feedback) == (mode == "tests")
        assert ("interface matches" in first_feedback) == (mode != "compile")
        assert attempts[0]["failures"] and {f["test"] for f in attempts[0]["failures"]} == {
            "test_single_pulses", "test_random_sequence", "test_async_reset",
        }


@pytest.mark.parametrize(
    ("episode_reward", "expected"), [("final", 0.0), ("best", 0.1), ("final_minus_cost", 0.0 - 2 * 0.25)]
)
def test_episode_reward_options(toolchain, episode_reward, expected):
    """A build error (0.1), no code (0.0), no code again: no simulation needed."""
    env = gym.make("CVDP-Refine-v0", episode_reward=episode_reward, attempt_cost=0.25, max_attempts=3, cache=False)
    env.reset(options={"problem_id": PID})
    rewards, observations = [], []
    for text in (answer_text(PROBLEM, {TARGET: CANDIDATES["syntax_error"]}), "no code here", "no code here"):
        obs, reward, terminated, _, info = env.step(text)
        rewards.append(reward)
        observations.append(obs)
    env.close()
    assert terminated and rewards[:2] == [0.0, 0.0] and rewards[2] == pytest.approx(expected)
    assert [a["reward"] for a in info["attempts"]] == pytest.approx([0.1, 0.0, 0.0])
    assert info["best_attempt"] == 1 and info["attempts"][2]["repeat"]
    assert info["failure_class"] == "format_error" and "fenced code block" in observations[1]
    assert observations[0].startswith("The design does not compile.") and observations[2] == ""


def test_bad_options_and_one_shot(toolchain):
    with pytest.raises(ValueError, match="feedback"):
        gym.make("CVDP-Refine-v0", feedback="everything", cache=False)
    with pytest.raises(ValueError, match="max_attempts"):
        gym.make("CVDP-Refine-v0", max_attempts=0, cache=False)
    env = gym.make("CVDP-Refine-v0", max_attempts=1, cache=False)
    env.reset(options={"problem_id": PID})
    obs, reward, terminated, _, info = env.step("no code")
    assert terminated and obs == "" and reward == 0.0 and info["end_reason"] == "max_attempts"
    with pytest.raises(RuntimeError):
        env.step("again")
    env.close()
