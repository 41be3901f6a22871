"""Per-run names for everything an answer could name outside its own design, mapped back in the logs.

A benchmark's test bench and reference are compiled in one simulation with the answer. What
Icarus lets a design name outside itself is the scopes around it (the test bench's instances,
named blocks, generate blocks, tasks and functions, upward from the answer's instance), the
modules (to instantiate them, or as the head of a name from the root) and the files beside it
(`` `include ``). ``isolate`` gives each run fresh names for all of those, so no name an answer
writes can resolve outside it (:mod:`cvdp_gym.gate.reach_in` names the attempt):

- every module, interface and program the test bench's and the reference's files declare is
  renamed ``<prefix><name>`` where declared, instantiated, at the head of a dotted name and
  after ``$root.`` (the answer's own module, which the test bench instantiates but does not
  declare, keeps its name);
- in each module that instantiates the answer, the scopes it declares (instances, the
  answer's own instance included, named blocks, generate blocks, tasks and functions) are
  renamed where declared and where named (a simple name, the head of a dotted name, the part
  after a renamed module); port names in named connections and names inside the answer's own
  hierarchy keep theirs;
- the files are written as ``<file prefix><name>``.

The prefixes are random (48 and 64 bits, drawn apart: ``%m`` shows the answer the module
prefix, nothing it can print shows the file prefix) and the same for every name of a run, so
the order of names (by which Icarus orders some of its work) is the original's, and
``Isolated.restore`` maps a log back exactly by removing them: the benchmark's ``official``
reading stays byte for byte its own. Finding the names to rename walks pyslang's syntax trees
once per test bench (cached by the source texts); each run only fills in the prefixes. A test
bench where such a name comes from a macro (no benchmark's does) is left as it is: the static
check of the answer still stands.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from pyslang import SourceManager, parsing, syntax

__all__ = ["Isolated", "isolate"]

SK = syntax.SyntaxKind
_DEFINITIONS = (SK.ModuleDeclaration, SK.InterfaceDeclaration, SK.ProgramDeclaration)
@dataclass(frozen=True)
class _Plan:
    """One file's text cut at the names to rename: ``pieces[0] name[0] pieces[1] ...``."""

    pieces: tuple[str, ...]
    names: tuple[str, ...]

    def fill(self, prefix: str) -> str:
        out = [self.pieces[0]]
        for name, piece in zip(self.names, self.pieces[1:], strict=True):
            out += [prefix, name, piece]
        return "".join(out)


@dataclass(frozen=True)
class Isolated:
    """One run's renamed files: ``files`` (their run names → text), the renamed module names
    (``module``) and file names (``file``), and ``restore`` for the logs."""

    files: dict[str, str]
    modules: frozenset[str]
    module_prefix: str
    file_prefix: str

    def module(self, name: str) -> str:
        """A test-bench or reference module's name in this run."""
        return self.module_prefix + name if name in self.modules else name

    def file(self, name: str) -> str:
        """A test-bench or reference file's name in this run."""
        return self.file_prefix + name

    def restore(self, text: str) -> str:
        """``text`` (a log) with every name of this run mapped back to the original."""
        return text.replace(self.module_prefix, "").replace(self.file_prefix, "")


def isolate(sources: Mapping[str, str], *, prefixes: tuple[str, str] | None = None) -> Isolated:
    """The test bench's and reference's ``sources`` ({file name: text}) renamed for one run.
    ``prefixes``: (module prefix, file prefix), fresh random ones when None."""
    module_prefix, file_prefix = prefixes or (f"cvdp{secrets.token_hex(6)}_", f"cvdp{secrets.token_hex(8)}_")
    plans, modules = _plans(tuple(sources.items()))
    files = {file_prefix + name: plan.fill(module_prefix) for name, plan in plans.items()}
    return Isolated(files, modules, module_prefix, file_prefix)


@lru_cache(maxsize=2048)
def _plans(sources: tuple[tuple[str, str], ...]) -> tuple[dict[str, _Plan], frozenset[str]]:
    """Each file cut at the names to rename, and the modules renamed (computed once per test bench)."""
    manager = SourceManager()
    trees = {name: syntax.SyntaxTree.fromText(text, manager, name, name) for name, text in sources}
    modules: dict[str, syntax.SyntaxNode] = {}
    for tree in trees.values():
        tree.root.visit(lookup_table={kind: lambda node: modules.setdefault(node.header.name.valueText, node) for kind in _DEFINITIONS})
    renamed = frozenset(modules)
    scopes = {name: _module_scopes(node, renamed) for name, node in modules.items()}
    try:
        spans = {name: _spans(tree, renamed, scopes) for name, tree in trees.items()}
    except _Unrenamable:  # a name from a macro: nothing renamed (the static check still holds)
        return {name: _cut(text, ()) for name, text in sources}, frozenset()
    return {name: _cut(text, spans[name]) for name, text in sources}, renamed


def _module_scopes(module: syntax.SyntaxNode, declared: frozenset[str]) -> frozenset[str]:
    """The scopes a module declares at its own level, if it instantiates a module that is
    not among ``declared`` (the answer's); else nothing (the answer cannot reach it upward)."""
    instantiates_answer = False
    names: set[str] = set()

    def visit(node: syntax.SyntaxNode, nested: bool) -> None:
        nonlocal instantiates_answer
        kind = node.kind
        if kind == SK.HierarchyInstantiation:
            if node.type.valueText not in declared:
                instantiates_answer = True
            if not nested:
                for instance in node.instances:
                    if isinstance(instance, syntax.SyntaxNode) and instance.decl is not None:
                        names.add(instance.decl.name.valueText)
            return
        if kind in (SK.TaskDeclaration, SK.FunctionDeclaration) and not nested:
            names.add(_identifier(node.prototype.name))
        if kind in (SK.GenerateBlock, SK.SequentialBlockStatement, SK.ParallelBlockStatement):
            label = _block_name(node)
            if label and not nested:
                names.add(label)
            nested = nested or bool(label)
        elif kind in (SK.TaskDeclaration, SK.FunctionDeclaration, SK.ClassDeclaration):
            nested = True
        for child in node:
            if isinstance(child, syntax.SyntaxNode):
                visit(child, nested)

    for member in module.members:
        visit(member, False)
    return frozenset(names) if instantiates_answer else frozenset()


def _block_name(node: syntax.SyntaxNode) -> str:
    """A block's name (``begin : name`` or ``name : begin``), or ""."""
    for clause in (getattr(node, "beginName", None), getattr(node, "blockName", None), getattr(node, "label", None)):
        if clause is not None:
            token = getattr(clause, "name", None)
            if token is not None and token.valueText:
                return token.valueText
    return ""


def _identifier(name: syntax.SyntaxNode) -> str:
    token = name.getLastToken() if name is not None else None
    return token.valueText if token is not None else ""


def _spans(tree: syntax.SyntaxTree, modules: frozenset[str], scopes: Mapping[str, frozenset[str]]) -> list[tuple[int, str]]:
    """(byte offset, name) of every token to rename in one file."""
    spans: list[tuple[int, str]] = []
    buffer = None

    def rename(token) -> None:
        nonlocal buffer
        if token is None or token.kind != parsing.TokenKind.Identifier:
            return
        location = token.location
        if buffer is None:
            buffer = location.buffer.id
        if location.buffer.id != buffer:  # from a macro or an include: cannot be rewritten here
            raise _Unrenamable(token.valueText)
        spans.append((int(location.offset), token.valueText))

    def module_name(token) -> bool:
        if token is not None and token.valueText in modules:
            rename(token)
            return True
        return False

    def chain(node: syntax.SyntaxNode, own: frozenset[str]) -> None:
        """A dotted name: its head (a scope of this module, or a module) and what follows a module."""
        parts: list[syntax.SyntaxNode] = []
        walk_node = node
        while walk_node.kind == SK.ScopedName:
            parts.append(walk_node.right)
            walk_node = walk_node.left
        parts.append(walk_node)
        parts.reverse()
        index = 0
        if parts[0].kind in (SK.RootScope, SK.UnitScope):
            index = 1
        head = parts[index] if index < len(parts) else None
        token = _name_token(head)
        if token is not None:
            if index == 0 and token.valueText in own:
                rename(token)
            elif module_name(token) and index + 1 < len(parts):
                inner = _name_token(parts[index + 1])
                if inner is not None and inner.valueText in scopes.get(token.valueText, frozenset()):
                    rename(inner)
        for part in parts:  # the selects' expressions may name scopes too
            for child in part:
                if isinstance(child, syntax.SyntaxNode) and child.kind not in (SK.IdentifierName,):
                    walk(child, own)

    def walk(node: syntax.SyntaxNode, own: frozenset[str]) -> None:
        kind = node.kind
        if kind in _DEFINITIONS:
            module_name(node.header.name)
            own = scopes.get(node.header.name.valueText, frozenset())
            if node.blockName is not None:
                module_name(node.blockName.name)
        elif kind == SK.HierarchyInstantiation:
            module_name(node.type)
        elif kind == SK.ScopedName:
            chain(node, own)
            return
        elif kind in (SK.IdentifierName, SK.IdentifierSelectName):
            if node.identifier.valueText in own:
                rename(node.identifier)
        elif kind in (SK.InstanceName, SK.NamedBlockClause, SK.NamedLabel) and node.name.valueText in own:
            rename(node.name)
        for child in node:
            if isinstance(child, syntax.SyntaxNode):
                walk(child, own)

    walk(tree.root, frozenset())
    return spans


def _name_token(node: syntax.SyntaxNode | None):
    if node is not None and node.kind in (SK.IdentifierName, SK.IdentifierSelectName):
        return node.identifier
    return None


class _Unrenamable(Exception):
    """A name to rename comes from a macro or an include: the text holds nothing to rewrite."""


def _cut(text: str, spans: Iterable[tuple[int, str]]) -> _Plan:
    data = text.encode()
    pieces, names, last = [], [], 0
    for offset, name in sorted(set(spans)):
        pieces.append(data[last:offset].decode())
        names.append(name)
        last = offset + len(name.encode())
    pieces.append(data[last:].decode())
    return _Plan(tuple(pieces), tuple(names))

