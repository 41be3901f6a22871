"""A module's interface read with slang: the header and the body's port and parameter
declarations, which is what a task shows of a design it hides (the assertion task's prompt,
:mod:`cvdp_gym.tasks.assertions.ports_only`'s stub)."""

from __future__ import annotations

import re

from pyslang import syntax

__all__ = ["module_parts", "module_top", "ports_interface"]

SK = syntax.SyntaxKind


def module_top(tree: syntax.SyntaxTree, top: str) -> syntax.SyntaxNode | None:
    root = tree.root
    members = [root] if root.kind == SK.ModuleDeclaration else list(root.members)  # one module: the root itself
    for member in members:
        if member.kind == SK.ModuleDeclaration and member.header.name.valueText == top:
            return member
    return None


def _kept(module: syntax.SyntaxNode) -> list[str]:
    """The body's port declarations and ``parameter`` (not ``localparam``) declarations."""
    kept = []
    for member in module.members:
        text = str(member).strip()
        if member.kind == SK.PortDeclaration or (
            member.kind == SK.ParameterDeclarationStatement and text.startswith("parameter")
        ):
            kept.append(text)
    return kept


def module_parts(design: str, top: str) -> tuple[str, list[str], str] | None:
    """(the text up to the end of ``top``'s header, its kept declarations, the text after its
    ``endmodule``), or None when ``top`` is not found in the main buffer."""
    tree = syntax.SyntaxTree.fromText(design)
    module = module_top(tree, top)
    if module is None:
        return None
    raw = design.encode()  # slang's offsets count bytes
    head_end = module.header.sourceRange.end.offset
    end = module.endmodule.range.end.offset
    if not (0 < head_end <= end <= len(raw)) or raw[end - len("endmodule"):end] != b"endmodule":
        return None  # a header or endmodule built by a macro: not read here
    return raw[:head_end].decode(errors="replace"), _kept(module), raw[end:].decode(errors="replace")


def ports_interface(design: str, top: str) -> str:
    """Module ``top``'s header, with its body's port and parameter declarations when the
    header does not carry them (a non-ANSI header); "" when ``top`` is not found."""
    parts = module_parts(design, top)
    if parts is None:
        found = re.search(rf"\bmodule\s+{re.escape(top)}\b.*?\)\s*;", design, re.S)
        return found.group(0) if found else ""
    head, kept, _ = parts
    start = re.search(rf"\bmodule\s+{re.escape(top)}\b", head)
    header = head[start.start():] if start else head
    return header + "".join(f"\n  {k}" for k in kept) + ("\n  ..." if kept else "")
