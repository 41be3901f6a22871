"""What a benchmark plug-in's ``answers`` part extracts with: the helpers its ``EXTRACTORS`` use.

A plug-in imports these from here, never from :mod:`cvdp_gym.parsers.benchmark_answers`, the
module whose table loads it (a plug-in importing its loader is an import cycle:
``scripts/import_graph.py`` counts the table's load as an edge).
"""

from __future__ import annotations

import re

from cvdp_gym.parsers._common import find_fenced_blocks

__all__ = ["NO_CODE", "find_fenced_blocks", "has_code"]

#: ``Extraction.method`` of a benchmark answer with no code in it.
NO_CODE = "none"
#: Verilog-shaped text: a module header, endmodule, an assignment or an always block (prose
#: that merely names "the module" is not code).
_CODE = re.compile(
    r"\bendmodule\b|\bmodule\s+\w+\s*[#(;]|\bassign\s+[\w{][\w\[\]{}.,:\s]*=|\balways\w*\s*@|\balways_(comb|latch)\b"
)


def has_code(text: str) -> bool:
    """Whether ``text`` holds Verilog-shaped code (not prose that merely names a module)."""
    return _CODE.search(text) is not None
