"""Properties may read the design's ports only: the answer compiled inside a stub of the design.

Contract: ``outside_names(design, top, answer)`` compiles the answer (pyslang, in process)
as the whole body of a stub of module ``top``: the design's text with ``top``'s body replaced
by its port and ``parameter`` declarations and the answer (the design's other modules,
packages and macros kept, so a type or a width resolves as in the design). It returns the
first :class:`Reach` of the answer, a name that does not resolve there (an internal signal of
the design, ``sh_q``; a hierarchical name into it, ``top.state``, ``u_core.q``, ``$root...``;
an instance of a module, ``sub u (...)``), or None. ``Reach.inside`` says whether the name is
one the design declares (a read of its internals: ``reach_in``) or declared nowhere (a
misspelling: a build error, as it always was). A design whose header or ``endmodule`` a macro
builds raises ``HarnessError`` (never read as clean). ``ports_interface(design, top)`` is what the
prompt shows: the module's header and, for a header without types (``module m(a, b);``), its
port and parameter declarations.

Why: a property that restates the design (each ``assign`` copied, a shadow register of each
``always`` block compared with the design's own registers, ``q == $past(sh_q)``) needs the
design's internal names; with only the specification and the ports, a property that catches a
bug has to encode the specification's behaviour. The formal check itself still places the
properties at the end of ``top``'s body (Yosys 0.40 has no ``bind``); this check is what keeps
them to the ports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyslang import SourceManager, ast, syntax

from cvdp_gym.data.module_interface import module_parts, module_top, ports_interface
from cvdp_gym.errors import HarnessError

__all__ = ["Reach", "outside_names", "ports_interface"]

SK = syntax.SyntaxKind
#: slang's diagnostics of a name that does not resolve in the stub.
_UNRESOLVED = frozenset({
    "UndeclaredIdentifier", "TypoIdentifier", "UndeclaredButFoundPackage", "CouldNotResolveHierarchicalPath",
    "HierarchicalRefUnknownModule", "UnknownModule", "UnknownInterface", "UnknownPrimitive",
    "UnknownSystemName", "UnknownMember",
})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_MARK = "/*__cvdp_answer__*/"


@dataclass(frozen=True)
class Reach:
    """A name of the answer that does not resolve among the ports and its own declarations."""

    name: str
    #: The line in the answer (1-based).
    line: int
    #: Whether the design declares the name (or its first component): a read of its internals.
    inside: bool
    #: The whole reference as written (``top.q_int``, ``u_sub.y``), or the name.
    text: str = ""

    @property
    def reason(self) -> str:
        shown = self.text or self.name
        if self.instance:
            return (
                f"answer line {self.line}: an instance of `{self.name}`; properties may read only the "
                f"design's ports and the helper declarations they make themselves"
            )
        if self.inside:
            reads = f"`{shown}` reads `{self.name}`," if shown != self.name else f"`{shown}` is"
            return (
                f"answer line {self.line}: {reads} a name inside the design; properties may "
                f"read only the design's ports and the helper declarations they make themselves"
            )
        return f"answer line {self.line}: `{shown}` is declared nowhere (not a port of the design nor a declaration of the answer)"

    @property
    def instance(self) -> bool:
        return self.text.startswith("instance ")


def outside_names(design: str, top: str, answer: str) -> Reach | None:
    """The first name of ``answer`` that does not resolve in the ports-only stub (see the module
    docstring); raises ``HarnessError`` when ``top``'s header or ``endmodule`` cannot be read (a
    macro builds it): the check fails closed, never open."""
    parts = module_parts(design, top)
    if parts is None:
        raise HarnessError(f"module {top}'s header cannot be read for the ports-only check")
    head, kept, tail = parts
    prefix = head + "\n" + "".join(f"  {k}\n" for k in kept) + _MARK + "\n"
    stub = prefix + answer + "\nendmodule" + tail
    first = prefix.count("\n") + 1  # the stub's line of the answer's line 1
    last = first + answer.count("\n")
    manager = SourceManager()
    tree = syntax.SyntaxTree.fromText(stub, manager)
    compilation = ast.Compilation()
    compilation.addSyntaxTree(tree)
    declared = set(_IDENT.findall(_code(design)))
    module = module_top(tree, top)
    if module is not None:  # an instance in the answer (of the design's own submodule too)
        for member in module.members:
            if member.kind == SK.HierarchyInstantiation:
                line = int(manager.getLineNumber(manager.getFullyExpandedLoc(member.sourceRange.start)))
                if first <= line <= last:
                    name = member.type.valueText
                    return Reach(name, line - first + 1, True, f"instance {name}")
    lines = stub.splitlines()
    found: list[Reach] = []
    for diag in compilation.getAllDiagnostics():
        code = str(diag.code).removeprefix("DiagCode(").removesuffix(")")
        if code not in _UNRESOLVED:
            continue
        line = int(manager.getLineNumber(manager.getFullyExpandedLoc(diag.location)))
        if not first <= line <= last:
            continue
        args = [str(a) for a in diag.args]
        name = args[0] if args else "?"
        text = _reference(lines[line - 1], diag, manager) or name
        if code in ("UnknownModule", "UnknownInterface", "UnknownPrimitive"):
            found.append(Reach(name, line - first + 1, True, f"instance {name}"))
            continue
        head = _IDENT.match(text.removeprefix("$root."))
        inside = (head.group(0) if head else name) in declared or name in declared
        found.append(Reach(name, line - first + 1, inside, text))
    if not found:
        return None
    found.sort(key=lambda r: (not r.inside, r.line))  # a read of the design's internals first
    return found[0]


def _reference(line: str, diag, manager: SourceManager) -> str:
    """The dotted reference at the diagnostic's column of ``line`` (``top.q_int``), or ""."""
    column = int(manager.getColumnNumber(manager.getFullyExpandedLoc(diag.location))) - 1
    start = column
    while start > 0 and (line[start - 1].isalnum() or line[start - 1] in "_$."):
        start -= 1
    found = re.match(r"[$A-Za-z_][A-Za-z0-9_$]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_$]*)*", line[start:])
    return found.group(0) if found else ""


def _code(text: str) -> str:
    """``text`` without comments."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
