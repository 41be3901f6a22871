"""The agentic environment's action set: the tools' JSON schemas, in the OpenAI function shape.

``CVDP-Agentic-v0`` offers exactly :data:`TOOLS` (``info["tools"]`` at reset), and a chat
template or an OpenAI-compatible server describes them to the model from these schemas.
They live with the environments, not with the parsers: a parser reads whatever call a
model wrote, while which tools exist is the environment's choice. The bash tool's name is
the parsers' :data:`~cvdp_gym.parsers.toolcalls.BASH_TOOL_NAME` (a fenced shell block is a
call to it), and the finish tool's is one of their
:data:`~cvdp_gym.parsers.toolcalls.FINISH_NAMES`.
"""

from __future__ import annotations

from typing import Any

from cvdp_gym.parsers.toolcalls import BASH_TOOL_NAME

__all__ = ["EXECUTE_BASH_TOOL", "FINISH_CALL", "FINISH_TOOL", "TOOLS"]

EXECUTE_BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": BASH_TOOL_NAME,
        "description": (
            "Run a bash command in the task's working directory and return its combined "
            "stdout and stderr and exit code. Use it to inspect files, edit them (e.g. with "
            "cat <<'EOF' > file or sed), and run simulators or tests."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The bash command to run; may span several lines.",
                }
            },
            "required": ["command"],
        },
    },
}

FINISH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "finish",
        "description": (
            "Call when the task is complete and the files in the working directory are "
            "final. Ends the episode; no further commands run."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "message": {
                    "type": "string",
                    "description": "Optional short summary of what was done.",
                }
            },
            "required": [],
        },
    },
}

#: Every tool the agentic environment offers, in the order it lists them.
TOOLS: list[dict[str, Any]] = [EXECUTE_BASH_TOOL, FINISH_TOOL]

#: The assistant message that only calls ``finish``: how an episode played by a
#: command-line agent is ended once the agent has exited.
FINISH_CALL: dict[str, Any] = {
    "role": "assistant", "content": "",
    "tool_calls": [{"id": "agent-finished", "type": "function", "function": {"name": "finish", "arguments": "{}"}}],
}
