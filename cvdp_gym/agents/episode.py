"""A ``CVDP-Agentic-v0`` episode played by a command-line agent instead of a model's tool calls.

:class:`AgentPlayer` is the environment's ``agent`` option: ``gymnasium.make(
"CVDP-Agentic-v0", agent=AgentPlayer(recipe, endpoint=..., model=...))`` plays every
episode with the agent, in one ``step``. :func:`play_agent` plays the current episode of an
environment made without it. Either way the agent runs in the episode's workspace
(:func:`~cvdp_gym.agents.runner.run_agent`), then the episode ends with the ``finish`` tool,
so the workspace is graded exactly as a model's episode is: same stages, same reward, same
``info`` keys, plus ``info["agent"]`` (how the agent ended, its requests and tokens) and
``info["agent_exchanges"]`` (what passed through the proxy).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from cvdp_gym.agents.base import AgentRecipe
from cvdp_gym.agents.runner import run_agent
from cvdp_gym.envs.agentic import AgenticEnv
from cvdp_gym.errors import ArgumentTypeError, UsageError
from cvdp_gym.sandbox.workspace import Workspace

__all__ = ["AgentPlayer", "play_agent"]


class AgentPlayer:
    """An agent and the model it talks to: plays one episode's workspace at a time.

    ``endpoint``: the model's OpenAI-compatible base URL (the only address the agent can
    reach); ``api_key``: sent by the proxy, never seen by the agent; ``time_limit_s``: the
    agent's time per episode.
    """

    def __init__(self, recipe: AgentRecipe, *, endpoint: str, model: str, api_key: str | None = None, time_limit_s: float = 900.0) -> None:
        if not isinstance(recipe, AgentRecipe):
            raise ArgumentTypeError(f"recipe must be an AgentRecipe, got {type(recipe).__name__}")
        self.recipe, self.endpoint, self.model = recipe, endpoint, model
        self.api_key, self.time_limit_s = api_key, time_limit_s

    def play(self, workspace: Workspace, task: str) -> dict[str, Any]:
        """Run the agent on ``workspace`` with ``task``: ``{end_reason, agent, exchanges}``."""
        run = run_agent(
            workspace, self.recipe, endpoint=self.endpoint, model=self.model, prompt=task,
            time_limit_s=self.time_limit_s, api_key=self.api_key,
        )
        return {"end_reason": run.end_reason, "agent": run.to_dict(), "exchanges": [e.to_dict() for e in run.exchanges]}


def play_agent(
    env: gym.Env,
    agent: AgentRecipe,
    *,
    endpoint: str,
    model: str,
    api_key: str | None = None,
    time_limit_s: float = 900.0,
) -> tuple[str, float, bool, bool, dict[str, Any]]:
    """Play the episode ``env`` was reset to with ``agent``, then grade it; ``step()``'s values.

    Example::

        env = gymnasium.make("CVDP-Agentic-v0")
        env.reset(options={"problem_id": "cvdp_gym_agentic_crc8_0001"})
        _, reward, _, _, info = play_agent(env, CodexAgent(), endpoint="http://127.0.0.1:8000/v1", model="m")
    """
    inner = env.unwrapped
    if not isinstance(inner, AgenticEnv):
        raise ArgumentTypeError(f"play_agent needs a CVDP-Agentic-v0 environment, got {type(inner).__name__}")
    if inner.workspace is None or inner.problem is None:
        raise UsageError("call reset() before play_agent(): no episode is running")
    previous, inner.agent = inner.agent, AgentPlayer(agent, endpoint=endpoint, model=model, api_key=api_key, time_limit_s=time_limit_s)
    try:
        return env.step(None)
    finally:
        inner.agent = previous
