"""VerilogEval v2's own files checked against each other (:mod:`cvdp_gym.check.consistency`): the test
bench's connections against the reference's ports, the spec-to-RTL prompt's port list and
directions, the code-completion interface (``_ifc.txt``).
"""

from __future__ import annotations

import re

from cvdp_gym.check.consistency_kit import connections, ports
from cvdp_gym.data.problems import Problem

__all__ = ["FINDINGS"]

#: ``- input  a (8 bits)`` / ``- output zero``: a port in a VerilogEval v2 spec-to-RTL prompt.
_PROMPT_PORT = re.compile(r"^\s*-\s*(input|output|inout)\s+([A-Za-z_]\w*)", re.M)
_DIRECTION = {"input": "in", "output": "out", "inout": "inout"}


def findings(problem: Problem) -> list[str]:
    name = str(problem.extra.get("name", ""))
    out: list[str] = []
    reference = ports(problem.harness.get(f"{name}_ref.sv", ""), "RefModule") or {}
    connected = connections(problem.harness.get(f"{name}_test.sv", ""), "TopModule")
    if connected is not None:
        strangers = [p for p in connected[0] if p not in reference]
        if reference and strangers:
            out.append(f"the test bench connects {', '.join(strangers)}, which the reference RefModule does not have")
    if problem.task == "spec-to-rtl":
        listed = {port: _DIRECTION[kind] for kind, port in _PROMPT_PORT.findall(_prompt_body(problem.prompt))}
        for port, direction in sorted(listed.items()):
            if port in reference and reference[port] != direction:
                out.append(f"the prompt lists {port} as an {'input' if direction == 'in' else 'output'}; the reference has it as an {'input' if reference[port] == 'in' else 'output'}")
        missing = sorted(set(reference) - set(listed))
        if listed and missing:
            out.append(f"the prompt does not list the reference's port(s) {', '.join(missing)}")
    elif problem.extra.get("interface"):
        interface = ports(str(problem.extra["interface"]) + "\nendmodule\n", "TopModule") or {}
        if interface and reference and interface != reference:
            out.append(f"the interface (_ifc.txt) has ports {sorted(interface)}; the reference has {sorted(reference)}")
    return out


def _prompt_body(prompt: str) -> str:
    """The problem's own text in a built prompt: after the last ``Question:`` (in-context
    examples come before it)."""
    return prompt.rsplit("\nQuestion:\n", 1)[-1]


#: This plug-in's checks, by grader (:mod:`cvdp_gym.plugins`).
FINDINGS = {"verilog-eval-v2": findings}
