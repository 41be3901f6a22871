"""A design's files as both flows hand them to Yosys 0.40: which names may go into a script,
and the text as read.

``name_problem(sources, top)``: a top and file names that go into a Yosys script must be a
plain identifier and plain relative paths (letters, digits and ``_ . + - /``), checked before
anything runs. Yosys 0.40 refuses a latch inside ``always_comb`` (an error, not a warning), where a
simulator and a commercial tool build one with a warning. Both flows read ``always_comb``
as ``always @*`` so such a design is measured and its latch counted, and say so in their
notes (``ALWAYS_COMB_NOTE``) when it mattered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cvdp_gym.sandbox.paths import UnsafePathError, check_relative_path

__all__ = ["ALWAYS_COMB_NOTE", "DESIGN_SUFFIXES", "IDENTIFIER", "has_always_comb", "name_problem", "yosys_text"]

#: The files Yosys reads as the design (the others are there to be included).
DESIGN_SUFFIXES = (".v", ".sv")
#: A plain Verilog identifier (a top module, a clock port).
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
_SAFE_PATH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*(/[A-Za-z0-9_][A-Za-z0-9_.+-]*)*$")

_ALWAYS_COMB = re.compile(r"\balways_comb\b")
ALWAYS_COMB_NOTE = "always_comb read as always @* (Yosys refuses a latch in always_comb; counted as a latch)"


def name_problem(sources: Mapping[str, str], top: str) -> str:
    """Why ``top`` or a file name of ``sources`` cannot go into a Yosys script ("" when they can)."""
    if not IDENTIFIER.match(top or ""):
        return f"top module name {top!r} is not a plain identifier"
    if not sources:
        return "no source files"
    for name in sources:
        try:
            normal = check_relative_path(name)
        except UnsafePathError as exc:
            return str(exc)
        if not _SAFE_PATH.match(normal):
            return f"source file name {name!r} has characters the flow does not pass to Yosys"
    return ""


def yosys_text(text: str) -> str:
    """``text`` with ``always_comb`` read as ``always @*``."""
    return _ALWAYS_COMB.sub("always @*", text)


def has_always_comb(text: str) -> bool:
    return bool(_ALWAYS_COMB.search(text))
