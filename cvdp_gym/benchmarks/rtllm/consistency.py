"""RTLLM's own files checked against each other (:mod:`cvdp_gym.check.consistency`): the module the
description names and the one the test bench instantiates, the description's port list against
the reference's, and a test bench that wires the design by position in an order the description
never gives.
"""

from __future__ import annotations

import re

from cvdp_gym.benchmarks.rtllm.data import instantiated_module
from cvdp_gym.check.consistency_kit import connections, ports
from cvdp_gym.data.problems import Problem

__all__ = ["FINDINGS"]

_MODULE_NAME = re.compile(r"Module name:\s*\n?\s*([A-Za-z_]\w*)")
_PORTS_HEADER = re.compile(r"^\s*(?:Input|Output|Inout)\s+ports?\s*:\s*$", re.I)
#: Another section's header (``Implementation:``, ``Parameter:``): a title and nothing after its colon.
_HEADER = re.compile(r"^\s*[A-Za-z][\w ]*:\s*$")
_DESCRIBED_PORT = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*:\s*\S")


def _describedports(description: str) -> list[str]:
    """The port names an RTLLM description lists: the ``name[...]: ...`` (or ``[w]name: ...``)
    lines under its ``Input ports:``/``Output ports:`` headers, down to the next header."""
    names: list[str] = []
    inside = False
    for line in description.splitlines():
        if _PORTS_HEADER.match(line):
            inside = True
            continue
        if _HEADER.match(line) or line.strip().startswith("Give me"):
            inside = False
        match = _DESCRIBED_PORT.match(line) if inside else None
        if match:
            names.append(match.group(1))
    return names


def findings(problem: Problem) -> list[str]:
    out: list[str] = []
    testbench = problem.harness.get("testbench.v", "")
    module = instantiated_module(testbench)
    named = _MODULE_NAME.search(problem.prompt)
    if module and named and named.group(1) != module:
        out.append(f"the description names the module {named.group(1)}; the test bench instantiates {module}")
    reference = ports(next(iter((problem.reference or {}).values()), ""), module or "") if module else None
    described = _describedports(problem.prompt)
    if reference:
        unknown = [p for p in described if p not in reference]
        absent = [p for p in reference if p not in described]
        if described and unknown:
            out.append(f"the description lists port(s) {', '.join(unknown)}, which the test bench and reference do not have")
        if described and absent:
            out.append(f"the description omits the port(s) {', '.join(absent)}")
    connected = connections(testbench, module) if module else None
    if connected is not None and connected[1] and reference and described and list(reference) != described[: len(reference)]:
        out.append(
            f"the test bench connects the ports by position in the reference's order ({', '.join(reference)}); "
            f"the description lists {', '.join(described)}"
        )
    return out


#: This plug-in's checks, by grader (:mod:`cvdp_gym.plugins`).
FINDINGS = {"rtllm": findings}
