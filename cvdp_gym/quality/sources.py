"""A design's text as both flows hand it to Yosys 0.40.

Yosys 0.40 refuses a latch inside ``always_comb`` (an error, not a warning), where a
simulator and a commercial tool build one with a warning. Both flows read ``always_comb``
as ``always @*`` so such a design is measured and its latch counted, and say so in their
notes (``ALWAYS_COMB_NOTE``) when it mattered.
"""

from __future__ import annotations

import re

__all__ = ["ALWAYS_COMB_NOTE", "has_always_comb", "yosys_text"]

_ALWAYS_COMB = re.compile(r"\balways_comb\b")
ALWAYS_COMB_NOTE = "always_comb read as always @* (Yosys refuses a latch in always_comb; counted as a latch)"


def yosys_text(text: str) -> str:
    """``text`` with ``always_comb`` read as ``always @*``."""
    return _ALWAYS_COMB.sub("always @*", text)


def has_always_comb(text: str) -> bool:
    return bool(_ALWAYS_COMB.search(text))
