"""How comprehension answers (cid006-cid010) are parsed and judged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from cvdp_gym.cli._options import JudgeBaseUrlOpt
from cvdp_gym.grading.judge import DEFAULT_JUDGE_MODEL


@dataclass(frozen=True)
class JudgeOptions:
    """``--parse-route``, ``--judge-base-url``, ``--judge-model``, ``--judge-concurrency``,
    ``--not-judged-as-zero``."""

    parse_route: Annotated[str, typer.Option(help="How comprehension answers are parsed, as the official tool's chat route (JSON repaired first, as for every published number) or its import route (a file of completions, parsed as given).")] = "chat"
    judge_base_url: JudgeBaseUrlOpt = None
    judge_model: Annotated[str, typer.Option(help="The judge's model (default: the official tool's).")] = DEFAULT_JUDGE_MODEL
    judge_concurrency: Annotated[int, typer.Option(help="Judge requests in flight at once.")] = 16
    not_judged_as_zero: Annotated[bool, typer.Option("--not-judged-as-zero", help="Count cid009/cid010 answers no judge scored as failed with 0 credit, as the official tool does (default: left out of the scores).")] = False
