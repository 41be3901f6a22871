"""Apply CVDP unified diffs to file contents.

CVDP's agentic records store ``patch`` as ``{path: diff}`` where a diff is usually only
hunks (``@@ -a,b +c,d @@``) with no ``---``/``+++`` header, and a patch that creates a file
is a diff from an empty file, sometimes without a final newline. GNU patch rejects some of
these, so this module applies hunks itself, tolerantly: context lines are matched by
content near the stated position, and a missing newline at the end is accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(ValueError):
    """A diff that cannot be applied to the text it was given."""


@dataclass
class Hunk:
    old_start: int
    new_start: int
    lines: list[str] = field(default_factory=list)  # each keeps its ' ', '-' or '+' prefix

    @property
    def old_lines(self) -> list[str]:
        return [line[1:] for line in self.lines if line[:1] in (" ", "-")]

    @property
    def new_lines(self) -> list[str]:
        return [line[1:] for line in self.lines if line[:1] in (" ", "+")]


def parse_hunks(diff: str) -> list[Hunk]:
    """Parse the hunks of a single-file unified diff (headers are skipped)."""
    hunks: list[Hunk] = []
    current: Hunk | None = None
    for raw in diff.splitlines():
        header = _HUNK_HEADER.match(raw)
        if header:
            current = Hunk(old_start=int(header.group(1)), new_start=int(header.group(3)))
            hunks.append(current)
            continue
        if current is None:
            continue  # '--- a/x', '+++ b/x', 'diff --git' and other preamble
        if raw.startswith("\\"):
            continue  # "\ No newline at end of file"
        if raw[:1] in (" ", "-", "+"):
            current.lines.append(raw)
        elif raw == "":
            current.lines.append(" ")  # some tools strip the space of empty context lines
        else:
            current = None  # end of this hunk's body
    return hunks


def _find(lines: list[str], needle: list[str], hint: int) -> int:
    """Index where ``needle`` occurs in ``lines``, searching outward from ``hint``."""
    if not needle:
        return min(max(hint, 0), len(lines))
    for distance in range(len(lines) + 1):
        for start in (hint - distance, hint + distance):
            if 0 <= start <= len(lines) - len(needle) and lines[start : start + len(needle)] == needle:
                return start
    # Whitespace-insensitive fallback: trailing blanks are often lost in transit.
    stripped = [line.rstrip() for line in lines]
    target = [line.rstrip() for line in needle]
    for start in range(len(lines) - len(needle) + 1):
        if stripped[start : start + len(needle)] == target:
            return start
    return -1


def apply_patch(original: str, diff: str) -> str:
    """Return ``original`` with the unified ``diff`` applied.

    Raises ``PatchError`` naming the hunk that does not match.
    """
    hunks = parse_hunks(diff)
    if not hunks:
        if diff.strip():
            raise PatchError("no hunks (@@ ... @@) found in the diff")
        return original
    lines = original.splitlines()
    offset = 0
    for number, hunk in enumerate(hunks, start=1):
        old = hunk.old_lines
        hint = max(hunk.old_start - 1, 0) + offset
        if not old and hunk.old_start == 0:
            hint = 0
        at = _find(lines, old, hint)
        if at < 0:
            preview = "\n".join(old[:3])
            raise PatchError(f"hunk {number} does not match the file; expected lines:\n{preview}")
        lines[at : at + len(old)] = hunk.new_lines
        offset += len(hunk.new_lines) - len(old)
    text = "\n".join(lines)
    return text + "\n" if lines else text


def make_patch(original: str, modified: str, path: str) -> str:
    """A unified diff from ``original`` to ``modified`` for ``path`` (as CVDP stores them)."""
    import difflib

    diff = difflib.unified_diff(
        original.splitlines(keepends=True),
        modified.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    out = []
    for line in diff:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
