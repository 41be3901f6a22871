"""Episodes instead of single answers: agentic (tool calls or a command-line agent) or refine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer


@dataclass(frozen=True)
class EpisodeOptions:
    """``--agentic``, ``--tool-mode``, ``--max-turns``, ``--agent``, ``--agent-dir``,
    ``--agent-time``, ``--refine``, ``--feedback``."""

    agentic: Annotated[bool, typer.Option("--agentic", help="Play agentic problems as CVDP-Agentic-v0 episodes against --base-url.")] = False
    tool_mode: Annotated[str, typer.Option(help="--agentic: native (the server's function calling) or a text format: qwen, qwen3_coder, harmony.")] = "native"
    max_turns: Annotated[int, typer.Option(help="--agentic: turns per episode before it is cut off and graded.")] = 50
    agent: Annotated[str | None, typer.Option(help="Play agentic problems with a command-line coding agent in the sandbox instead of tool calls: a recipe (see `cvdp-gym agents`: mini-swe-agent, codex) or a bash command; it reaches only --base-url, through a proxy.")] = None
    agent_dir: Annotated[Path | None, typer.Option(help="--agent CMD: a host folder holding the agent's installation, seen read-only at /agent (/agent/bin on PATH).")] = None
    agent_time: Annotated[float, typer.Option(help="--agent: seconds an agent may work on one episode before it is stopped and the workspace graded.")] = 900.0
    refine: Annotated[int | None, typer.Option("--refine", help="Play non-agentic problems as CVDP-Refine-v0 episodes of up to N answers against --base-url; the report gives pass@1 after attempt 1..N.")] = None
    feedback: Annotated[str | None, typer.Option(help="--refine: the grader's feedback between answers: compile, interface (default) or tests (shows the hidden tests' messages).")] = None

    @property
    def plays_agentic(self) -> bool:
        """Whether problems are played as agentic episodes (``--agent`` implies ``--agentic``)."""
        return self.agentic or self.agent is not None
