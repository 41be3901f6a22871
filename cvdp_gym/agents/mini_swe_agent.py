"""mini-swe-agent (PyPI ``mini-swe-agent``): a bash-only agent on litellm.

Installed for the sandbox's Python with pip (wheels only) without ``datasets`` and its tree
(pyarrow, pandas, numpy), which only its SWE-bench batch runners import, then compiled once
by the sandbox's Python (its start falls from about 5 s to 2 s). Started as
``python3 -m minisweagent.run.mini --yolo --exit-immediately`` (no confirmations, no prompt
at the end) with the model ``openai/<model>``, which litellm sends to ``OPENAI_API_BASE``;
each step is one ``bash`` tool call, run by its local environment in ``/code`` (by
``/bin/sh``); the agent stops when a command prints ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``
or at its step limit, and exits 0 either way: its own word on how it ended
(``Submitted``, ``LimitsExceeded``, ...) is read from its trajectory. litellm's model-cost
map is read from its own copy, never fetched; unknown model costs are ignored.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from cvdp_gym.agents.base import AGENT_MOUNT, HOME, AgentLaunch, AgentRecipe, LaunchContext
from cvdp_gym.agents.install import pip_install_target
from cvdp_gym.errors import AgentInstallError
from cvdp_gym.sandbox.base import Limits, Mount

if TYPE_CHECKING:
    from cvdp_gym.sandbox.base import Sandbox

__all__ = ["MiniSweAgent"]

#: mini-swe-agent's own dependencies, less ``datasets`` (see the module docstring).
_DEPENDENCIES = [
    "pyyaml", "requests", "jinja2", "pydantic>=2.0", "litellm>=1.75.5,!=1.82.7,!=1.82.8", "tenacity", "rich",
    "python-dotenv", "typer", "platformdirs", "textual", "prompt_toolkit", "openai!=1.100.0,!=1.100.1",
]
_TRAJECTORY = "trajectory.json"


class MiniSweAgent(AgentRecipe):
    """``step_limit``: model calls before it stops; ``command_timeout_s``: one command's time."""

    name = "mini-swe-agent"
    package = "mini-swe-agent"
    version = "2.4.6"
    source = "PyPI mini-swe-agent 2.4.6, for the sandbox's Python"
    finish_command = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

    def __init__(self, step_limit: int = 100, command_timeout_s: int = 120) -> None:
        self.step_limit = step_limit
        self.command_timeout_s = command_timeout_s

    def install_key(self, python: str) -> str:
        return f"{self.name}-{self.version}-py{python}"

    def install(self, dest: Path, python: str, sandbox: Sandbox) -> None:
        site = dest / "site"
        pip_install_target(site, python, ["--no-deps", f"{self.package}=={self.version}"])
        pip_install_target(site, python, ["--upgrade", *_DEPENDENCIES])
        with tempfile.TemporaryDirectory(prefix="cvdp-gym-compile-") as scratch:
            compiled = sandbox.run(
                ["python3", "-m", "compileall", "-q", "-j", "2", AGENT_MOUNT],
                mounts=[Mount(site, AGENT_MOUNT, writable=True)], scratch=Path(scratch), limits=Limits(wall_s=600),
            )
        if compiled.returncode != 0:
            raise AgentInstallError(f"compiling {self.name} for the sandbox failed:\n{compiled.output[-2000:]}")

    def launch(self, ctx: LaunchContext) -> AgentLaunch:
        command = (
            f'python3 -m minisweagent.run.mini -m "openai/$CVDP_MODEL" --yolo --exit-immediately '
            f"-c mini.yaml -c agent.step_limit={self.step_limit} -c environment.timeout={self.command_timeout_s} "
            f'-o {HOME}/{_TRAJECTORY} -t "$(cat "$CVDP_PROMPT_FILE")" </dev/null'
        )
        env = {
            "PYTHONPATH": f"{AGENT_MOUNT}/site",
            "PYTHONDONTWRITEBYTECODE": "1",
            "MSWEA_CONFIGURED": "true",
            "MSWEA_SILENT_STARTUP": "1",
            "MSWEA_GLOBAL_CONFIG_DIR": f"{HOME}/.config/mini-swe-agent",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "3",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_OFFLINE_MODE": "true",
        }
        return AgentLaunch(command, env)

    def status(self, home: Path) -> str | None:
        try:
            info = json.loads((home / _TRAJECTORY).read_text(encoding="utf-8")).get("info") or {}
        except (OSError, ValueError, AttributeError):
            return None
        status = info.get("exit_status")
        return str(status) if status else None
