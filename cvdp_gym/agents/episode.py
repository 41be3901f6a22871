"""A ``CVDP-Agentic-v0`` episode played by a command-line agent instead of a model's tool calls.

:func:`play_agent` takes an environment after ``reset()``, runs the agent in its workspace
(:func:`~cvdp_gym.agents.runner.run_agent`) and ends the episode with the ``finish`` tool,
so the workspace is graded exactly as a model's episode is: same stages, same reward, same
``info`` keys. It returns ``step()``'s five values, with ``info["agent"]`` (how the agent
ended, its requests and tokens) and ``info["agent_exchanges"]`` (what passed through the
proxy).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from cvdp_gym.agents.base import AgentRecipe
from cvdp_gym.agents.runner import run_agent
from cvdp_gym.envs.agentic import AgenticEnv
from cvdp_gym.errors import ArgumentTypeError, UsageError

__all__ = ["agent_prompt", "play_agent"]

#: The action that ends the episode once the agent has exited: the finish tool.
FINISH_ACTION: dict[str, Any] = {
    "role": "assistant", "content": "",
    "tool_calls": [{"id": "agent-finished", "type": "function", "function": {"name": "finish", "arguments": "{}"}}],
}


def agent_prompt(messages: list[dict[str, str]]) -> str:
    """The task as one text for an agent that brings its own system prompt: the episode's
    system message (the workspace and its rules), then the problem's prompt."""
    return "\n\n".join(m["content"] for m in messages if m.get("content"))


def play_agent(
    env: gym.Env,
    agent: AgentRecipe,
    *,
    endpoint: str,
    model: str,
    api_key: str | None = None,
    time_limit_s: float = 900.0,
    prompt: str | None = None,
) -> tuple[str, float, bool, bool, dict[str, Any]]:
    """Run ``agent`` on the episode ``env`` was reset to, then grade it; ``step()``'s values.

    ``prompt``: the task given to the agent (default: :func:`agent_prompt` of the reset's
    messages). Example::

        env = gymnasium.make("CVDP-Agentic-v0")
        env.reset(options={"problem_id": "cvdp_gym_agentic_crc8_0001"})
        _, reward, _, _, info = play_agent(env, MiniSweAgent(), endpoint="http://127.0.0.1:8000/v1", model="m")
    """
    inner = env.unwrapped
    if not isinstance(inner, AgenticEnv):
        raise ArgumentTypeError(f"play_agent needs a CVDP-Agentic-v0 environment, got {type(inner).__name__}")
    if inner.workspace is None or inner.problem is None:
        raise UsageError("call reset() before play_agent(): no episode is running")
    from cvdp_gym.envs.prompts import agentic_messages

    task = prompt if prompt is not None else agent_prompt(agentic_messages(inner.problem, inner.system_message))
    run = run_agent(inner.workspace, agent, endpoint=endpoint, model=model, prompt=task, time_limit_s=time_limit_s, api_key=api_key)
    observation, reward, terminated, truncated, info = env.step(FINISH_ACTION)
    info["end_reason"] = run.end_reason
    info["agent"] = run.to_dict()
    info["agent_exchanges"] = [e.to_dict() for e in run.exchanges]
    return observation, reward, terminated, truncated, info
