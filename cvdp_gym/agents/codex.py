"""Codex CLI (npm ``@openai/codex``): OpenAI's coding agent, a static native binary.

Installed with ``npm install``, keeping only the platform package's statically linked
binary and its ``codex-path`` tools (ripgrep), so the sandbox needs no Node.js. Started as
``codex exec`` (one task, then exit) with ``--dangerously-bypass-approvals-and-sandbox``
(the sandbox around it is ours; its own needs namespaces it does not get there) and
``--skip-git-repo-check`` (the workspace is not a git repository). Its configuration
(``CODEX_HOME/config.toml``) names one model provider at the proxy's address, speaking the
Responses API (the only wire format it speaks), with update checks, analytics, feedback,
telemetry and plugins off (plugins look up two hosts at start), and connection retries
bounded (by default it waits for the network forever): nothing else is tried, and nothing
else could be reached.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from cvdp_gym.agents.base import AGENT_MOUNT, HOME, AgentLaunch, AgentRecipe, LaunchContext
from cvdp_gym.agents.install import npm_install
from cvdp_gym.errors import AgentInstallError

if TYPE_CHECKING:
    from cvdp_gym.sandbox.base import Sandbox

__all__ = ["CodexAgent"]

_TARGET = "x86_64-unknown-linux-musl"


def _config(base_url: str, model: str) -> str:
    return f"""# written by cvdp-gym for one episode
model = {_toml(model)}
model_provider = "cvdp"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.cvdp]
name = "cvdp-gym proxy"
base_url = {_toml(base_url)}
env_key = "OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 2
stream_max_retries = 2
stream_idle_timeout_ms = 600000

[features]
plugins = false
unbounded_connection_retries = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
log_user_prompt = false
"""


def _toml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class CodexAgent(AgentRecipe):
    name = "codex"
    package = "@openai/codex"
    version = "0.169.0"
    source = "npm @openai/codex 0.169.0 (its static x86_64 binary)"

    def install(self, dest: Path, python: str, sandbox: Sandbox) -> None:
        npm = dest / "npm"
        npm_install(npm, f"{self.package}@{self.version}")
        vendor = next((npm / "node_modules" / "@openai").glob(f"codex-*/vendor/{_TARGET}"), None)
        if vendor is None or not (vendor / "bin" / "codex").is_file():
            raise AgentInstallError(f"{self.package}@{self.version} holds no {_TARGET} binary")
        (dest / "bin").mkdir()
        shutil.move(vendor / "bin" / "codex", dest / "bin" / "codex")
        if (vendor / "codex-path").is_dir():
            shutil.move(vendor / "codex-path", dest / "codex-path")
        shutil.rmtree(npm)

    def launch(self, ctx: LaunchContext) -> AgentLaunch:
        command = (
            'codex exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --ephemeral --color never '
            '"$(cat "$CVDP_PROMPT_FILE")"'
        )
        env = {"CODEX_HOME": f"{HOME}/.codex"}
        return AgentLaunch(command, env, {".codex/config.toml": _config(ctx.base_url, ctx.model)}, path=(f"{AGENT_MOUNT}/codex-path",))
