"""The agents ``cvdp-gym`` knows by name, and the ``--agent`` option's reading."""

from __future__ import annotations

from pathlib import Path

from cvdp_gym.agents.base import AgentRecipe, CommandAgent
from cvdp_gym.agents.codex import CodexAgent
from cvdp_gym.agents.mini_swe_agent import MiniSweAgent
from cvdp_gym.errors import ConfigError, MissingPathError

__all__ = ["AGENTS", "agent_from_option"]

#: Recipes by name: one from PyPI, one from npm.
AGENTS: dict[str, type[AgentRecipe]] = {"mini-swe-agent": MiniSweAgent, "codex": CodexAgent}


def agent_from_option(text: str, agent_dir: Path | None = None) -> AgentRecipe:
    """A recipe by name, else ``text`` as a bash command (with ``agent_dir`` at ``/agent``)."""
    text = text.strip()
    if not text:
        raise ConfigError("--agent is empty: give a recipe name (" + ", ".join(AGENTS) + ") or a command")
    if text in AGENTS:
        if agent_dir is not None:
            raise ConfigError(f"--agent-dir is for your own command; {text} installs itself")
        return AGENTS[text]()
    if agent_dir is not None and not Path(agent_dir).is_dir():
        raise MissingPathError(f"--agent-dir {agent_dir}: no such folder")
    return CommandAgent(text, Path(agent_dir).resolve() if agent_dir is not None else None)
