"""Running one command-line agent on one workspace, with the proxy as its only way out.

:func:`run_agent` installs the agent if needed, starts a :class:`ModelProxy` on a unix socket
in the workspace's private folder, and runs one bash command in the workspace's sandbox
(:meth:`Workspace.run`: no network, its own PID namespace, the workspace at ``/code``):
the relay on ``127.0.0.1:PORT`` in the background, then the agent, until it exits or its
time is up (then everything in the sandbox is killed). The workspace is left as the agent
left it, for the caller to grade; :class:`AgentRun` says how the agent ended and what it
exchanged with the model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cvdp_gym.agents import relay
from cvdp_gym.agents.base import (
    AGENT_MOUNT,
    HOME,
    PLACEHOLDER_KEY,
    PROMPT_FILE,
    AgentRecipe,
    LaunchContext,
)
from cvdp_gym.agents.install import ensure_installed
from cvdp_gym.agents.proxy import Exchange, ModelProxy
from cvdp_gym.sandbox.base import Mount
from cvdp_gym.sandbox.paths import check_relative_path
from cvdp_gym.sandbox.workspace import Workspace

__all__ = ["AGENT_EXITED", "AGENT_FAILED", "AGENT_TIMEOUT", "AgentRun", "run_agent"]

#: The port the relay listens on inside the sandbox (the sandbox has its own loopback).
RELAY_PORT = 8765
#: Where the relay script and the proxy's socket folder appear in the sandbox.
_RELAY_PATH = "/cvdp/relay.py"
_SOCKET_DIR = "/cvdp/proxy"
_SOCKET_NAME = "model.sock"
#: How an agent's run ended (the episode's ``end_reason``).
AGENT_EXITED, AGENT_FAILED, AGENT_TIMEOUT = "agent_exited", "agent_failed", "agent_timeout"


@dataclass
class AgentRun:
    """How an agent's run ended, and what it sent and received through the proxy."""

    agent: str
    command: str
    exit_code: int
    timed_out: bool
    wall_s: float
    output: str
    exchanges: list[Exchange] = field(default_factory=list)
    proxy: dict[str, int] = field(default_factory=dict)
    #: The agent's own word on how it ended, where it leaves one (``Submitted``, ...).
    status: str | None = None

    @property
    def end_reason(self) -> str:
        if self.timed_out:
            return AGENT_TIMEOUT
        return AGENT_EXITED if self.exit_code == 0 else AGENT_FAILED

    def to_dict(self) -> dict[str, Any]:
        """The run's facts (without the exchanges), for a transcript or ``info``."""
        return {
            "name": self.agent, "command": self.command, "exit_code": self.exit_code, "timed_out": self.timed_out,
            "end_reason": self.end_reason, "status": self.status, "wall_s": round(self.wall_s, 3), "output": self.output, **self.proxy,
        }


def _launch_script(command: str) -> str:
    """Start the relay, wait until it listens, then run the agent from ``/code``."""
    return (
        f"python3 {_RELAY_PATH} {RELAY_PORT} {_SOCKET_DIR}/{_SOCKET_NAME} >/dev/null 2>&1 &\n"
        f"for _ in $(seq 400); do (: </dev/tcp/127.0.0.1/{RELAY_PORT}) 2>/dev/null && break; sleep 0.025; done\n"
        "cd /code\n"
        f"{command}\n"
    )


def run_agent(
    workspace: Workspace,
    recipe: AgentRecipe,
    *,
    endpoint: str,
    model: str,
    prompt: str,
    time_limit_s: float = 900.0,
    api_key: str | None = None,
) -> AgentRun:
    """Run ``recipe``'s agent on ``workspace`` against the model at ``endpoint`` until it
    exits or ``time_limit_s`` passes; never raises for what the agent does."""
    installed = ensure_installed(recipe, workspace.sandbox)
    ctx = LaunchContext(
        base_url=f"http://127.0.0.1:{RELAY_PORT}{urlsplit(endpoint).path.rstrip('/')}", model=model, prompt=prompt, time_limit_s=time_limit_s,
    )
    launch = recipe.launch(ctx)
    scratch_tmp = workspace.scratch / "tmp"
    prompt_host = scratch_tmp / PROMPT_FILE.removeprefix("/tmp/")
    prompt_host.parent.mkdir(parents=True, exist_ok=True)
    prompt_host.write_text(prompt, encoding="utf-8")
    home_host = scratch_tmp / HOME.removeprefix("/tmp/")
    home_host.mkdir(parents=True, exist_ok=True)
    for rel, text in launch.home_files.items():
        target = home_host / check_relative_path(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    socket_dir = workspace.root / "proxy"
    mounts = [Mount(Path(relay.__file__), _RELAY_PATH), Mount(socket_dir, _SOCKET_DIR)]
    if installed is not None:
        mounts.append(Mount(installed, AGENT_MOUNT))
    sim_bin = workspace.sim_env.sandbox_bin_dir if workspace.sim_env is not None else None
    env = {
        "HOME": HOME,
        "PATH": ":".join(p for p in (*launch.path, f"{AGENT_MOUNT}/bin", sim_bin, "/usr/local/bin", "/usr/bin", "/bin") if p),
        "NO_COLOR": "1",
        "CVDP_PROMPT_FILE": PROMPT_FILE,
        "CVDP_MODEL": model,
        "CVDP_MODEL_URL": ctx.base_url,
        "OPENAI_BASE_URL": ctx.base_url,
        "OPENAI_API_BASE": ctx.base_url,
        "OPENAI_API_KEY": PLACEHOLDER_KEY,
        **launch.env,
    }
    started = time.monotonic()
    with ModelProxy(endpoint, socket_dir / _SOCKET_NAME, api_key=api_key) as proxy:
        result = workspace.run(_launch_script(launch.command), timeout_s=time_limit_s, mounts=mounts, env=env)
        exchanges = list(proxy.exchanges)
        summary = proxy.summary()
    return AgentRun(
        agent=recipe.name, command=launch.command, exit_code=result.exit_code, timed_out=result.timed_out,
        wall_s=time.monotonic() - started, output=result.output, exchanges=exchanges, proxy=summary,
        status=recipe.status(home_host),
    )
