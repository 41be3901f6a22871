"""``cvdp-gym eval --agent``: agentic episodes played by a command-line coding agent.

Each episode resets ``CVDP-Agentic-v0`` on its problem and hands the workspace to the agent
(:func:`cvdp_gym.agents.play_agent`), which talks to the model at ``--base-url`` through the
proxy and nothing else. Its record is an agentic transcript like any other (``steps`` and
``messages`` read from the proxy's exchanges, the final diff, the grade), plus ``agent``
(how it ended, requests, tokens, its output) and ``exchanges`` (every request and answer as
they passed), so reports and comparisons read it unchanged.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from cvdp_gym.agents import AgentRecipe
from cvdp_gym.agents.episode import play_agent
from cvdp_gym.agents.transcript import agent_steps
from cvdp_gym.data.problems import Problem
from cvdp_gym.envs.base import CVDPEnvBase
from cvdp_gym.eval.agentic import (
    EPISODE_ROW_FIELDS,
    AgenticEvaluator,
    Episode,
    MakeEnv,
    play_agentic,
)
from cvdp_gym.eval.sources import ChatClient, ChatSettings, RequestFailed
from cvdp_gym.grading.result import GradeResult

__all__ = ["AgentEpisode", "AgentSettings", "eval_cli_agent"]


@dataclass(frozen=True)
class AgentSettings:
    """Which agent plays, how long each episode may take, and episodes at once."""

    agent: AgentRecipe
    time_limit_s: float = 900.0
    concurrency: int = 2


#: What an agent episode's results row adds to an agentic episode's: the proxy's counts.
AGENT_ROW_FIELDS = (*EPISODE_ROW_FIELDS, "agent_requests", "prompt_tokens", "completion_tokens")


class AgentEpisode(Episode):
    """One episode played by a command-line agent; recorded as an agentic transcript."""

    row_fields = AGENT_ROW_FIELDS

    def __init__(self, ev: AgenticEvaluator, chat: ChatClient, problem: Problem, sample: int, settings: AgentSettings) -> None:
        self.settings = settings
        super().__init__(ev, chat, problem, sample, f"agent:{settings.agent.name}", time_limit_s=settings.time_limit_s)

    def _fields(self) -> dict[str, Any]:
        return {**super()._fields(), "agent": None, "exchanges": [], "agent_requests": 0, "prompt_tokens": 0, "completion_tokens": 0}

    async def _play(self, env: CVDPEnvBase) -> GradeResult:
        await asyncio.to_thread(env.reset, options={"problem_id": self.problem.id})
        chat = self.chat.settings
        _, _, _, _, info = await asyncio.to_thread(
            play_agent, env, self.settings.agent, endpoint=chat.base_url, model=chat.model,
            api_key=chat.api_key, time_limit_s=self.settings.time_limit_s,
        )
        exchanges = info["agent_exchanges"]
        failed = [e for e in exchanges if e.get("forwarded") and not 200 <= int(e.get("status") or 0) < 300]
        if failed and len(failed) == sum(bool(e.get("forwarded")) for e in exchanges):
            # Not one answer came back: the endpoint's fault, not the agent's; --resume plays it again.
            raise RequestFailed(f"the model endpoint answered none of the agent's {len(failed)} request(s): {failed[-1].get('error') or failed[-1].get('status')}")
        steps, messages = agent_steps(exchanges)
        calls = sum(len(s["tool_calls"]) for s in steps)
        self.record.update(
            steps=steps, messages=messages, turns=len(steps), tool_calls=calls, commands_run=calls,
            final_answer=steps[-1]["assistant"].get("content", "") if steps else "",
            agent=info["agent"], exchanges=info["agent_exchanges"], agent_requests=info["agent"]["requests"],
            prompt_tokens=info["agent"]["prompt_tokens"], completion_tokens=info["agent"]["completion_tokens"],
        )
        return await asyncio.to_thread(self._finish, env, info)


async def eval_cli_agent(ev: AgenticEvaluator, problems: list[Problem], chat_settings: ChatSettings, settings: AgentSettings, make_env: MakeEnv, samples: int) -> list[dict[str, Any]]:
    """Play ``samples`` episodes per problem with the agent, ``settings.concurrency`` at once."""

    def new_episode(chat: ChatClient, problem: Problem, sample: int) -> AgentEpisode:
        return AgentEpisode(ev, chat, problem, sample, settings)

    mode = f"agent:{settings.agent.name}"
    return await play_agentic(ev, problems, chat_settings, samples, settings.concurrency, mode, new_episode, make_env)
