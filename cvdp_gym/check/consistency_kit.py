"""What a benchmark plug-in's ``consistency`` part reads a problem's files with: ports and connections.

A plug-in's ``FINDINGS`` check (:mod:`cvdp_gym.check.consistency`) compares a benchmark's own
files with these readers. A plug-in imports them from here, never from
:mod:`cvdp_gym.check.consistency`, the module whose table loads it (a plug-in importing its
loader is an import cycle: ``scripts/import_graph.py`` counts the table's load as an edge).
"""

from __future__ import annotations

import re

from cvdp_gym.data.verilog_text import top_level_commas
from cvdp_gym.harness.svparse import parse_sources

__all__ = ["connections", "ports"]

COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def ports(source: str, module: str) -> dict[str, str] | None:
    """``module``'s ports (name -> direction) in ``source``, by slang; None if it is not there."""
    parsed = parse_sources({"source.sv": source})
    found = parsed.modules.get(module)
    return dict(found.ports) if found is not None and found.ports else None


def connections(testbench: str, module: str) -> tuple[list[str], int] | None:
    """The named ports an instance of ``module`` connects, and how many it connects by position."""
    text = COMMENTS.sub("", testbench)
    match = re.search(rf"\b{re.escape(module)}\s*(?:#\s*\((?:[^()]|\([^()]*\))*\)\s*)?\w+\s*\(", text)
    if match is None:
        return None
    depth, i = 1, match.end()
    while i < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    body = text[match.end():i - 1]
    named = re.findall(r"\.\s*([A-Za-z_]\w*)\s*\(", body)
    wildcard = ".*" in body
    positional = 0 if named or wildcard or not body.strip() else len(top_level_commas(body)) + 1
    return named, positional


