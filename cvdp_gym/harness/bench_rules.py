"""What a model-written test bench may not do: tell designs apart by anything but behaviour.

Contract: ``bench_findings(text, bench_top=, design=)`` reads a test bench's text (with
its comments and string literals blanked) and returns one line per finding, ``[]`` when clean.
A test bench in the test-bench task is run on the reference and on seeded mutants that share
its file name and module names; it earns credit only for failing a design that *behaves*
differently. So it may drive and read the design's ports and nothing else:

- no hierarchical name into the design (``dut.state``, ``TopModule.count``), ``$root``,
  ``bind``, ``defparam``, DPI: the internals a mutant changes are not the behaviour;
- no file or process access (``$fopen``, ``$readmem*``, ``$fread``, ``$fscanf``, ``$system``,
  plusargs, `` `include ``): the design's file is the only thing that differs between runs;
- its own module ``bench_top``, and no module of the design's own names (a bench that defines
  the design would test itself).

What the rules cannot see (a bench that hangs on a mutant, ``$time`` checks) is behaviour the
design shows at its ports, so it counts as a detection like any other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from cvdp_gym.data.verilog_text import closing_paren

__all__ = ["bench_findings"]

_BLANKED = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)
_FORBIDDEN_CALLS = (
    "$fopen", "$fread", "$fgets", "$fgetc", "$fscanf", "$sscanf", "$readmemh", "$readmemb", "$writememh",
    "$writememb", "$system", "$value$plusargs", "$test$plusargs", "$sdf_annotate", "$ungetc", "$fseek",
    "$root",
)
_FORBIDDEN_WORDS = {"bind": "a `bind` into the design", "defparam": "a `defparam` (parameters go on the instance)"}
_MODULE = re.compile(r"\bmodule\s+(?:static\s+|automatic\s+)?([A-Za-z_]\w*)")


def _blank(text: str) -> str:
    """``text`` with comments and string literals replaced by spaces (newlines kept)."""
    return _BLANKED.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _instances(code: str, modules: Iterable[str]) -> set[str]:
    """The names of the bench's instances of the design's modules (``TopModule #(...) dut (``)."""
    names: set[str] = set()
    for module in modules:
        for found in re.finditer(rf"\b{re.escape(module)}\b\s*(#\s*\()?", code):
            at = found.end()
            if found.group(1):  # skip the parameter list
                close = closing_paren(code, at - 1)
                at = len(code) if close is None else close + 1
            name = re.match(r"\s*([A-Za-z_]\w*)\s*(\[[^\]]*\]\s*)?\(", code[at:])
            if name:
                names.add(name.group(1))
    return names


def bench_findings(text: str, *, bench_top: str, design: str, path: str = "tb.sv") -> list[str]:
    """Why the test bench ``text`` may not be run against ``design`` and its mutants (``[]``: it may)."""
    code = _blank(text)
    modules = tuple(m.group(1) for m in _MODULE.finditer(_blank(design)))
    findings: list[str] = []
    declared = {m.group(1): m.start() for m in _MODULE.finditer(code)}
    if bench_top not in declared:
        findings.append(f"{path}: no module `{bench_top}` (the test bench's top module)")
    for name, at in declared.items():
        if name in modules:
            findings.append(f"{path}:{_line(code, at)}: defines module `{name}`, the design's own (the design is supplied)")
    for call in _FORBIDDEN_CALLS:
        for found in re.finditer(re.escape(call) + r"(?![\w$])", code):
            findings.append(f"{path}:{_line(code, found.start())}: `{call}`: a test bench may use only the design's ports")
    for word, what in _FORBIDDEN_WORDS.items():
        for found in re.finditer(rf"\b{word}\b", code):
            findings.append(f"{path}:{_line(code, found.start())}: {what}")
    for found in re.finditer(r"`include\b|\bimport\s+\"?DPI|\bexport\s+\"?DPI", code):
        findings.append(f"{path}:{_line(code, found.start())}: `{found.group(0)}`: nothing outside the bench may be read")
    for found in re.finditer(r"\bimport\s*(?=\")", text):  # the DPI form keeps its literal: read the text
        findings.append(f"{path}:{_line(text, found.start())}: a DPI import")
    for name in sorted(_instances(code, modules) | set(modules)):
        for found in re.finditer(rf"(?<![\w$.]){re.escape(name)}\s*\.\s*[A-Za-z_\\]", code):
            findings.append(f"{path}:{_line(code, found.start())}: `{name}.`: a hierarchical name into the design")
    return findings
