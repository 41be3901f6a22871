"""What a model-written test bench may not do: tell designs apart by anything but behaviour.

Contract: ``bench_findings(text, bench_top=, design=)`` reads a test bench's text (with
its comments and string literals blanked, and again preprocessed by slang, as Icarus reads
it: macros expanded) and returns one line per finding, ``[]`` when clean. It is the test-bench
task's own rule beside the answer gate (:func:`cvdp_gym.gate.check` with ``kind="bench"``: the
bench's directives, and every system task on the ``BENCH`` allowlist, which names no file
task but the waveform dump), which the flow runs first.
A test bench in the test-bench task is run on the reference and on seeded mutants that share
its file name and module names; it earns credit only for failing a design that *behaves*
differently. So it may drive and read the design's ports and nothing else:

- no hierarchical name into the design (``dut.state``, ``TopModule.count``), ``$root``,
  ``bind``, ``defparam``, DPI: the internals a mutant changes are not the behaviour. Read twice:
  in the text, and in the preprocessed syntax tree, where a name a macro builds
  (`` `define H(a,b) a.b `` then `` `H(dut, sig) ``) is a dotted name like any other: one
  that selects something inside an instance of the design's modules, or inside a module of
  the design's by name, is a finding (naming the instance itself, ``$dumpvars(0, tb.dut)``,
  is not);
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

from pyslang import syntax
from pyslang.parsing import Token, TokenKind

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
    named = set()
    for name in sorted(_instances(code, modules) | set(modules)):
        for found in re.finditer(rf"(?<![\w$.]){re.escape(name)}\s*\.\s*[A-Za-z_\\]", code):
            named.add(_line(code, found.start()))
            findings.append(f"{path}:{_line(code, found.start())}: `{name}.`: a hierarchical name into the design")
    findings += [f for line, f in expanded_hierarchy_findings(text, modules, path=path) if line not in named]
    return findings


_SK = syntax.SyntaxKind


def expanded_hierarchy_findings(text: str, modules: Iterable[str], *, path: str = "tb.sv") -> list[tuple[int, str]]:
    """The dotted names of the bench ``text``, read preprocessed by slang (macros expanded, as
    Icarus reads them), that select something inside an instance of ``modules`` or inside one
    of ``modules`` by name: ``(line, finding)`` each."""
    modules = frozenset(modules)
    tree = syntax.SyntaxTree.fromText(text, path)
    manager = tree.sourceManager
    instances: set[str] = set()
    dotted: list[tuple[syntax.SyntaxNode, list[str]]] = []

    def instantiation(node: syntax.SyntaxNode) -> None:
        if node.type.valueText in modules:
            for instance in node.instances:
                decl = getattr(instance, "decl", None)
                if decl is not None and decl.name.valueText:
                    instances.add(decl.name.valueText)

    def scoped(node: syntax.SyntaxNode) -> None:
        parent = node.parent
        if parent is not None and parent.kind == _SK.ScopedName and parent.left is node:
            return  # the outer name holds the whole chain
        parts: list[str] = []
        at = node
        while at.kind == _SK.ScopedName:
            if str(at.separator.rawText) != ".":
                return  # a package or class scope (``pkg::x``): not the design's hierarchy
            parts.append(_name(at.right))
            at = at.left
        parts.append(_name(at))
        dotted.append((node, parts[::-1]))

    def member(node: syntax.SyntaxNode) -> None:  # ``expr.name``: every identifier of ``expr`` is a head
        heads = [t.valueText for t in _identifiers(node.left)]
        dotted.append((node, [*heads, node.name.valueText]))

    tree.root.visit(lookup_table={
        _SK.HierarchyInstantiation: instantiation, _SK.ScopedName: scoped, _SK.MemberAccessExpression: member,
    })
    inside = instances | modules
    found: list[tuple[int, str]] = []
    for node, parts in dotted:
        hit = next((p for p in parts[:-1] if p in inside), None)
        if hit is not None:
            line = int(manager.getLineNumber(manager.getFullyExpandedLoc(node.sourceRange.start)))
            shown = ".".join(parts)
            found.append((line, f"{path}:{line}: `{shown}`: a hierarchical name into the design (`{hit}.`, as the simulator reads it)"))
    return found


def _name(node: syntax.SyntaxNode) -> str:
    identifier = getattr(node, "identifier", None)
    return identifier.valueText if identifier is not None else str(node).strip()


def _identifiers(node: syntax.SyntaxNode) -> list:
    """The identifier tokens under ``node``."""
    out: list = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Token):
            if item.kind == TokenKind.Identifier:
                out.append(item)
        elif isinstance(item, syntax.SyntaxNode):
            stack.extend(item[i] for i in range(len(item)))
    return out
