"""A report's tables as Markdown lines and as rich tables: the one way the eval reports write them."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table

__all__ = ["markdown_table", "print_table"]


def markdown_table(columns: list[str], rows: Iterable[list[str]]) -> list[str]:
    """The table as Markdown lines: a header, its rule and one line per row."""
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns), *("| " + " | ".join(cells) + " |" for cells in rows)]


def print_table(console: Console, title: str, columns: list[str], rows: Iterable[list[str]], *, left: Iterable[int] = (0,)) -> None:
    """The table in the terminal: columns right-aligned but those in ``left``, long cells folded."""
    table = Table(title=title)
    flush_left = set(left)
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i in flush_left else "right", overflow="fold")
    for cells in rows:
        table.add_row(*cells)
    console.print(table)
