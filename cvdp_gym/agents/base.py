"""What a command-line agent is to ``cvdp-gym``: how to install it and how to start it.

An :class:`AgentRecipe` names an agent, installs it once into a folder of the host's cache
(a Python package for the sandbox's own Python, or an npm package's native binary), and
says how to start it on one task: a bash command run in the sandbox at ``/code`` (the
problem's workspace), the variables it needs, and the configuration files to write into
its home folder first. One module per agent (:mod:`.mini_swe_agent`, :mod:`.codex`), and
:class:`CommandAgent` for any other installed command.

Inside the sandbox every agent sees the same layout:

- ``/code``: the workspace (the working folder), graded when the agent exits;
- ``/agent``: its installation, read-only (``/agent/bin`` first on ``PATH``);
- ``/tmp/home``: ``HOME``, writable, with the recipe's configuration files;
- ``/tmp/cvdp-agent/prompt.md``: the task (also in ``CVDP_PROMPT_FILE``);
- ``http://127.0.0.1:PORT/v1`` (``OPENAI_BASE_URL``, ``CVDP_MODEL_URL``): the model
  endpoint, through the proxy; ``OPENAI_API_KEY`` holds a placeholder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cvdp_gym.sandbox.base import Sandbox

__all__ = ["AGENT_MOUNT", "HOME", "PROMPT_FILE", "AgentLaunch", "AgentRecipe", "CommandAgent", "LaunchContext"]

#: Where an agent's installation appears in the sandbox (read-only).
AGENT_MOUNT = "/agent"
#: The agent's home folder in the sandbox (under the episode's private ``/tmp``).
HOME = "/tmp/home"
#: The task's text in the sandbox.
PROMPT_FILE = "/tmp/cvdp-agent/prompt.md"
#: The placeholder key the agent is given; the proxy sends the real one.
PLACEHOLDER_KEY = "sk-cvdp-gym-proxy"


@dataclass(frozen=True)
class LaunchContext:
    """What a recipe needs to start its agent on one task."""

    base_url: str  # the endpoint as the sandbox reaches it: http://127.0.0.1:PORT/v1
    model: str
    prompt: str
    time_limit_s: float


@dataclass(frozen=True)
class AgentLaunch:
    """How to start an agent: a bash command, its variables, files to write under ``HOME``
    and folders to put on ``PATH`` before ``/agent/bin``."""

    command: str
    env: Mapping[str, str] = field(default_factory=dict)
    home_files: Mapping[str, str] = field(default_factory=dict)
    path: tuple[str, ...] = ()


class AgentRecipe:
    """One command-line agent: its installation and how to start it.

    Subclasses set ``name``, ``package`` and ``version`` and implement ``install`` (into an
    empty folder; the caller caches it) and ``launch``. ``install_key`` names the cached
    folder: it changes when what is installed would (the version, the sandbox's Python).
    """

    name: str = ""
    package: str = ""
    version: str = ""
    #: One line for ``cvdp-gym agents``: where the agent comes from.
    source: str = ""
    #: A command that makes the agent stop, for an agent that does not stop at a reply
    #: without a tool call (a scripted model ends its script with it).
    finish_command: str = ""

    def install_key(self, python: str) -> str:
        return f"{self.name}-{self.version}"

    def install(self, dest: Path, python: str, sandbox: Sandbox) -> None:
        """Install the agent into the empty folder ``dest`` for the ``sandbox``'s ``python``
        (``"3.14"``); raise ``AgentInstallError`` with the installer's output on failure."""
        raise NotImplementedError

    def launch(self, ctx: LaunchContext) -> AgentLaunch:
        raise NotImplementedError

    def status(self, home: Path) -> str | None:
        """How the agent says its run ended, read from what it left in its home folder
        (``home``: the host path of ``HOME``); None when it leaves no such word."""
        return None


class CommandAgent(AgentRecipe):
    """Any agent already installed in a host folder: ``command`` runs in the sandbox with
    that folder at ``/agent`` (``install_dir``; None: nothing mounted), the task in
    ``CVDP_PROMPT_FILE`` and the endpoint in ``OPENAI_BASE_URL``/``CVDP_MODEL``."""

    source = "your command"

    def __init__(self, command: str, install_dir: Path | None = None) -> None:
        self.name = "command"
        self.command = command
        self.install_dir = install_dir

    def launch(self, ctx: LaunchContext) -> AgentLaunch:
        return AgentLaunch(self.command)
