"""Command-line coding agents in the problem's sandbox, with only the model endpoint reachable."""

from cvdp_gym.agents.base import AgentLaunch, AgentRecipe, CommandAgent, LaunchContext
from cvdp_gym.agents.episode import AgentPlayer, play_agent
from cvdp_gym.agents.proxy import Exchange, ModelProxy
from cvdp_gym.agents.runner import AgentRun, run_agent

__all__ = [
    "AgentLaunch", "AgentPlayer", "AgentRecipe", "AgentRun", "CommandAgent", "Exchange", "LaunchContext", "ModelProxy",
    "play_agent", "run_agent",
]
