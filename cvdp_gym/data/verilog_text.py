"""Reading Verilog text without a parser: the one bracket matcher the text-level tools share
(the seeded mutants, the SVA lowering, the test-bench rules), and the commas outside brackets
(a port list's connections, an attribute instance's names)."""

from __future__ import annotations

__all__ = ["closing_paren", "top_level_commas"]


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


def top_level_commas(text: str) -> list[int]:
    """The indices of the commas of ``text`` outside brackets. Callers blank comments and
    strings first where a comma there would mislead them."""
    depth, commas = 0, []
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            commas.append(i)
    return commas
