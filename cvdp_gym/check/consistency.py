"""Do a benchmark's own files agree with each other? Static checks behind ``cvdp-gym check``.

A problem is unfair to every answer when its files disagree: a test bench that connects
ports the reference and the prompt do not have, a prompt that gives a port the wrong
direction, a description that names another module than the test bench instantiates, a
test bench that wires the design by position in an order the description never gives.
``findings(problem)`` lists such disagreements, read from the files themselves (ports by
slang for the Verilog, by the benchmark's own conventions for the prompt text). ``check``
prints them beside the reference runs and compares them with the benchmark's labelled
defects (``Problem.defect``), so a new defect is found, not only remembered.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from cvdp_gym.data.problems import Problem
from cvdp_gym.data.verilog_text import top_level_commas
from cvdp_gym.harness.svparse import parse_sources
from cvdp_gym.plugins import PluginTable

__all__ = ["FINDINGS", "connections", "findings", "ports"]

COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)



#: Each benchmark's checks, by grader (the plug-ins' ``consistency`` parts): a problem -> findings.
FINDINGS: PluginTable[Callable[[Problem], list[str]]] = PluginTable("consistency", "FINDINGS")


def findings(problem: Problem) -> list[str]:
    """The disagreements between ``problem``'s own files (empty: none found, or no checks for its benchmark)."""
    check = FINDINGS.get(problem.grader)
    return check(problem) if check is not None else []


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


