"""``cvdp-gym rescore``: stored rows' rewards under another reward setting, without grading again.

Reads an eval run folder (its ``results.jsonl``) or a JSONL file of NeMo-Gym ``/verify``
answers, writes the rows with their new ``reward`` (and ``reward_components``) to ``--out``
and prints a summary; the rescoring itself is :mod:`cvdp_gym.eval.rescore`. A row that
cannot be rescored is written as it was and its reason printed; an unreadable input is one
``error:`` line, exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cvdp_gym.cli._options import console, fail


def rescore_command(
    source: Annotated[Path, typer.Argument(help="A folder `cvdp-gym eval --out` wrote, or a JSONL file of `/verify` answers (or of results rows).", show_default=False)],
    reward: Annotated[str, typer.Option(help="The new reward: shaped, partial or binary.", show_default=False)],
    out: Annotated[Path, typer.Option(help="JSONL file for the rows with their new reward.", show_default=False)],
    interface_credit: Annotated[float, typer.Option(help="Added to the reward when the interface check passed (eval rows store it; `/verify` answers do not).")] = 0.0,
) -> None:
    """Recompute stored rows' rewards with another reward setting: no model, no simulation."""
    from cvdp_gym.errors import JsonlError
    from cvdp_gym.eval.rescore import rescore_file
    from cvdp_gym.grading import REWARDS

    if reward not in REWARDS:
        raise fail(f"unknown reward {reward!r}; expected one of {', '.join(sorted(REWARDS))}")
    if interface_credit < 0:
        raise fail("--interface-credit must not be negative")
    try:
        summary = rescore_file(source, reward, interface_credit=interface_credit)
    except JsonlError as exc:
        raise fail(str(exc)) from None
    if not summary.rows:
        raise fail(f"{source}: no rows to rescore")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(json.dumps(row) + "\n" for row in summary.rows), encoding="utf-8")
    except OSError as exc:
        raise fail(f"--out {out}: cannot write: {exc.strerror or exc}") from None
    table = Table(title=escape(f"{source} rescored: {summary.setting}"))
    for column in summary.columns():
        table.add_column(column, justify="right")
    table.add_row(*map(escape, summary.cells()))
    console.print(table)
    for line in summary.reasons():
        console.print(f"[yellow]{escape(line)}[/]", soft_wrap=True)
    console.print(f"rows in {escape(str(out))}", soft_wrap=True)
