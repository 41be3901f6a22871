"""Reading Verilog text without a parser: the one bracket matcher the text-level tools share
(the seeded mutants, the SVA lowering, the test-bench rules)."""

from __future__ import annotations

__all__ = ["closing_paren"]


def closing_paren(text: str, open_at: int) -> int | None:
    """The index of the ``)`` that closes the ``(`` at ``open_at``; None when it is never closed.
    Callers blank comments and strings first where a bracket there would mislead them."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None
