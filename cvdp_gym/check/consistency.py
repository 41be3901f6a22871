"""Do a benchmark's own files agree with each other? Static checks behind ``cvdp-gym check``.

A problem is unfair to every answer when its files disagree: a test bench that connects
ports the reference and the prompt do not have, a prompt that gives a port the wrong
direction, a description that names another module than the test bench instantiates, a
test bench that wires the design by position in an order the description never gives.
``findings(problem)`` lists such disagreements, read from the files themselves (ports by
slang for the Verilog, by the benchmark's own conventions for the prompt text). ``check``
prints them beside the reference runs and compares them with the benchmark's labelled
defects (``Problem.defect``), so a new defect is found, not only remembered. Each benchmark's
checks are its plug-in's ``consistency`` part, reading the files with its kit
(:mod:`cvdp_gym.check.consistency_kit`: ports, connections).
"""

from __future__ import annotations

from collections.abc import Callable

from cvdp_gym.data.problems import Problem
from cvdp_gym.plugins import PluginTable

__all__ = ["FINDINGS", "findings"]

#: Each benchmark's checks, by grader (the plug-ins' ``consistency`` parts): a problem -> findings.
FINDINGS: PluginTable[Callable[[Problem], list[str]]] = PluginTable("consistency", "FINDINGS")


def findings(problem: Problem) -> list[str]:
    """The disagreements between ``problem``'s own files (empty: none found, or no checks for its benchmark)."""
    check = FINDINGS.get(problem.grader)
    return check(problem) if check is not None else []
