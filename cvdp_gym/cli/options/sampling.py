"""How many answers a command asks a model for, how it samples them, how many at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer


@dataclass(frozen=True)
class SamplingOptions:
    """``--samples``/``-n``, ``--temperature``, ``--top-p``, ``--max-tokens``, ``--concurrency``."""

    samples: Annotated[int, typer.Option("--samples", "-n", help="Answers (with --agentic or --refine: episodes) per problem from --base-url.")] = 1
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.2
    top_p: Annotated[float | None, typer.Option(help="Nucleus sampling top_p (default: the endpoint's; VerilogEval's published settings use 0.95 at temperature 0.85, 0.01 at 0).")] = None
    max_tokens: Annotated[int, typer.Option(help="max_tokens per answer (with --agentic: per turn).")] = 4096
    concurrency: Annotated[int, typer.Option(help="Chat requests in flight at once (with --agentic or --refine: episodes at once).")] = 8
