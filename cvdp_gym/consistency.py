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

from cvdp_gym.data.benchmarks.rtllm import instantiated_module
from cvdp_gym.data.problems import Problem
from cvdp_gym.harness.svparse import parse_sources

__all__ = ["findings"]

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
#: ``- input  a (8 bits)`` / ``- output zero``: a port in a VerilogEval v2 spec-to-RTL prompt.
_PROMPT_PORT = re.compile(r"^\s*-\s*(input|output|inout)\s+([A-Za-z_]\w*)", re.M)
_DIRECTION = {"input": "in", "output": "out", "inout": "inout"}


def findings(problem: Problem) -> list[str]:
    """The disagreements between ``problem``'s own files (empty: none found)."""
    if problem.grader == "verilog-eval-v2":
        return _verilog_eval(problem)
    if problem.grader == "rtllm":
        return _rtllm(problem)
    return []


def _ports(source: str, module: str) -> dict[str, str] | None:
    """``module``'s ports (name -> direction) in ``source``, by slang; None if it is not there."""
    parsed = parse_sources({"source.sv": source})
    found = parsed.modules.get(module)
    return dict(found.ports) if found is not None and found.ports else None


def _connections(testbench: str, module: str) -> tuple[list[str], int] | None:
    """The named ports an instance of ``module`` connects, and how many it connects by position."""
    text = _COMMENTS.sub("", testbench)
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
    positional = 0 if named or wildcard or not body.strip() else len(_top_level_commas(body)) + 1
    return named, positional


def _top_level_commas(body: str) -> list[int]:
    depth, commas = 0, []
    for i, ch in enumerate(body):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            commas.append(i)
    return commas


def _verilog_eval(problem: Problem) -> list[str]:
    name = str(problem.extra.get("name", ""))
    out: list[str] = []
    reference = _ports(problem.harness.get(f"{name}_ref.sv", ""), "RefModule") or {}
    connected = _connections(problem.harness.get(f"{name}_test.sv", ""), "TopModule")
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
        interface = _ports(str(problem.extra["interface"]) + "\nendmodule\n", "TopModule") or {}
        if interface and reference and interface != reference:
            out.append(f"the interface (_ifc.txt) has ports {sorted(interface)}; the reference has {sorted(reference)}")
    return out


def _prompt_body(prompt: str) -> str:
    """The problem's own text in a built prompt: after the last ``Question:`` (in-context
    examples come before it)."""
    return prompt.rsplit("\nQuestion:\n", 1)[-1]


_MODULE_NAME = re.compile(r"Module name:\s*\n?\s*([A-Za-z_]\w*)")
_PORTS_HEADER = re.compile(r"^\s*(?:Input|Output|Inout)\s+ports?\s*:\s*$", re.I)
#: Another section's header (``Implementation:``, ``Parameter:``): a title and nothing after its colon.
_HEADER = re.compile(r"^\s*[A-Za-z][\w ]*:\s*$")
_DESCRIBED_PORT = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*:\s*\S")


def _described_ports(description: str) -> list[str]:
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


def _rtllm(problem: Problem) -> list[str]:
    out: list[str] = []
    testbench = problem.harness.get("testbench.v", "")
    module = instantiated_module(testbench)
    named = _MODULE_NAME.search(problem.prompt)
    if module and named and named.group(1) != module:
        out.append(f"the description names the module {named.group(1)}; the test bench instantiates {module}")
    reference = _ports(next(iter((problem.reference or {}).values()), ""), module or "") if module else None
    described = _described_ports(problem.prompt)
    if reference:
        unknown = [p for p in described if p not in reference]
        absent = [p for p in reference if p not in described]
        if described and unknown:
            out.append(f"the description lists port(s) {', '.join(unknown)}, which the test bench and reference do not have")
        if described and absent:
            out.append(f"the description omits the port(s) {', '.join(absent)}")
    connected = _connections(testbench, module) if module else None
    if connected is not None and connected[1] and reference and described and list(reference) != described[: len(reference)]:
        out.append(
            f"the test bench connects the ports by position in the reference's order ({', '.join(reference)}); "
            f"the description lists {', '.join(described)}"
        )
    return out
