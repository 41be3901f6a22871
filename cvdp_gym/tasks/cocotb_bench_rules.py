"""What a model-written cocotb test bench may not do: tell designs apart by anything but behaviour.

Contract: ``cocotb_bench_findings(text, ports=)`` reads a cocotb bench's Python (``ast``, never
running it) and returns one line per finding, ``[]`` when clean. As for a Verilog bench
(:mod:`cvdp_gym.tasks.bench_rules`), the bench is run on the reference and on mutants that
share file and module names, and earns credit only for failing a design that *behaves*
differently; so it may drive and read the top's ports and nothing else:

- imports only from ``cocotb`` and a few pure standard modules (``random``, ``math``, ...);
  no ``cocotb.simulator`` (raw handles by name), no private name of a module;
- no ``open``, ``exec``, ``eval``, ``compile``, ``__import__``, ``globals``, ``vars``, ...,
  no ``os``/``sys``/``subprocess``/``pathlib``/``socket``; nor those modules (and
  ``builtins``, ``importlib``, ``inspect``, ``sys.modules``...) as an attribute, reached
  through a module that imported them (``dataclasses.sys.modules["builtins"].open``,
  ``typing.sys``, ``getattr(enum, "sys")``), unless it is the DUT's port of that name; no
  frame's way to globals (``.gi_frame``, ``.f_globals``); no dunder attribute (the ways out of
  the rules above), no ``getattr``-like call with a computed or private name;
- the DUT handle (the first parameter of a ``@cocotb.test``, any name ``dut``,
  ``cocotb.top``, and every name, parameter or attribute it is handed to) is used only as
  ``dut.<port>``, ``dut["<port>"]``, ``getattr(dut, "<port>")`` and ``dut._log``, or handed to
  a function or class of the bench (whose parameter is then followed the same way); anything
  else (``for x in dut``, ``dut._id(...)``, ``dut._handle``, ``dir(dut)``, a handle put in a
  list) is a finding, since what it reaches cannot be told from here.

The tracking is by name, not by flow: a name that holds the handle anywhere is a handle
everywhere, which errs towards findings. A bench that does not parse (by this interpreter's
grammar) is a finding too: what cannot be read is not run. These rules are a reading, so they
are the first line only: the bench then runs under a guard inside its interpreter that refuses
files, processes, sockets, ``ctypes`` and imports outside the list at run time
(:mod:`cvdp_gym.tasks.cocotb_bench`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

__all__ = ["cocotb_bench_findings"]

ALLOWED_MODULES = frozenset({
    "cocotb", "random", "math", "itertools", "collections", "functools", "dataclasses", "typing", "enum",
    "operator", "__future__",
})
#: Parts of cocotb that reach the simulator's hierarchy by name, past the handle.
_COCOTB_FORBIDDEN = frozenset({"simulator"})
_FORBIDDEN_NAMES = frozenset({
    "open", "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "breakpoint", "input", "help",
    "os", "sys", "subprocess", "pathlib", "socket", "shutil", "builtins", "__builtins__", "importlib",
    "__loader__", "__spec__",
})
#: Attributes no bench may read, on whatever object: the modules a forbidden name would reach,
#: reached through a module that imported them (``dataclasses.sys``, ``typing.sys``,
#: ``enum.sys``, ``dataclasses.inspect``), and the ways from a frame, generator or traceback to
#: another module's globals. (A method of the bench's own named ``open`` or ``eval`` is no way
#: out: what it would call is refused at run time.)
_FORBIDDEN_ATTRS = frozenset({
    "os", "sys", "subprocess", "pathlib", "socket", "shutil", "builtins", "importlib", "modules", "inspect",
    "linecache", "posix", "ctypes", "gc", "f_globals", "f_builtins", "f_locals", "f_back", "f_code", "gi_frame",
    "cr_frame", "ag_frame", "tb_frame", "gi_code", "cr_code", "ag_code",
})
_HANDLE_INTERNALS = frozenset({"_handle", "_sub_handles", "_discover_all"})
_ATTR_CALLS = frozenset({"getattr", "setattr", "hasattr", "delattr"})
_DUNDERS_ALLOWED = frozenset({"__init__", "__name__"})
_HANDLE_EXTRAS = frozenset({"_log"})  # a handle's logger: no way into the design


class _Reader:
    """One bench's findings; the handle names grow to a fixed point before the uses are checked."""

    def __init__(self, tree: ast.Module, ports: frozenset[str], path: str):
        self.tree, self.ports, self.path = tree, ports, path
        self.findings: list[tuple[int, str]] = []
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.modules: set[str] = set()  # names bound to modules by imports
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.handle_names: set[str] = {"dut"}
        self.handle_attrs: set[str] = set()

    def add(self, node: ast.AST, text: str) -> None:
        at: ast.AST | None = node
        while at is not None and not hasattr(at, "lineno"):  # a comprehension or keyword has no line
            at = self.parents.get(at)
        line = getattr(at, "lineno", 0)
        self.findings.append((line, f"{self.path}:{line or '?'}: {text}"))

    def read(self) -> list[str]:
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self._import(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, []).append(node)
                params = _params(node)
                if params and any("test" in ast.unparse(d) for d in node.decorator_list):
                    self.handle_names.add(params[0])
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        for node in ast.walk(self.tree):
            self._forbidden(node)
        while self._spread():
            pass
        for node in ast.walk(self.tree):  # a port may bear any name: ``dut.open`` is a port's
            if isinstance(node, ast.Attribute) and node.attr in _FORBIDDEN_ATTRS and not (
                self._is_handle(node.value) and node.attr in self.ports
            ):
                self.add(node, f"`{ast.unparse(node)}`: `.{node.attr}` leads to files, processes or the interpreter")
        for node in ast.walk(self.tree):
            if self._is_handle(node) and isinstance(getattr(node, "ctx", None), ast.Load):
                self._handle_use(node)
        return [text for _, text in sorted(self.findings, key=lambda found: found[0])]

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level or module.split(".")[0] not in ALLOWED_MODULES:
                self.add(node, f"`from {'.' * node.level}{module} import`: a bench may import only {_allowed()}")
                return
            for alias in node.names:
                if (alias.name.startswith("_") and module != "__future__") or alias.name in _COCOTB_FORBIDDEN:
                    self.add(node, f"`from {module} import {alias.name}`: a private or raw part of a module")
                elif module == "cocotb" and alias.name == "top":
                    self.handle_names.add(alias.asname or alias.name)
                else:
                    self.modules.add(alias.asname or alias.name)
            return
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[0] not in ALLOWED_MODULES:
                self.add(node, f"`import {alias.name}`: a bench may import only {_allowed()}")
            elif any(p.startswith("_") or p in _COCOTB_FORBIDDEN for p in parts[1:]):
                self.add(node, f"`import {alias.name}`: a private or raw part of a module")
            else:
                self.modules.add(alias.asname or parts[0])

    def _forbidden(self, node: ast.AST) -> None:
        """What no bench may name, whatever it is applied to."""
        if isinstance(node, ast.Name) and node.id in _FORBIDDEN_NAMES:
            self.add(node, f"`{node.id}`: no file, process, interpreter or system access in a bench")
        elif isinstance(node, ast.Attribute):
            attr = node.attr
            if attr in _HANDLE_INTERNALS:
                self.add(node, f"`.{attr}`: a handle's internals reach past the design's ports")
            elif attr.startswith("__") and attr.endswith("__") and attr not in _DUNDERS_ALLOWED:
                self.add(node, f"`.{attr}`: no dunder attributes in a bench")
            elif attr in _COCOTB_FORBIDDEN or (attr.startswith("_") and _root_name(node) in self.modules):
                self.add(node, f"`{ast.unparse(node)}`: a private or raw part of a module")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ATTR_CALLS:
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.add(node, f"`{node.func.id}` with a computed name: a bench names what it reads")
            elif name.value.startswith("_") and name.value not in _HANDLE_EXTRAS:
                self.add(node, f"`{node.func.id}(..., {name.value!r})`: a private name")
            elif name.value in _FORBIDDEN_ATTRS and not (self._is_handle(node.args[0]) and name.value in self.ports):
                self.add(node, f"`{node.func.id}(..., {name.value!r})`: leads to files, processes or the interpreter")

    def _is_handle(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.handle_names
        if isinstance(node, ast.Attribute):
            if node.attr == "top" and isinstance(node.value, ast.Name) and node.value.id in self.modules:
                return True  # cocotb.top
            return node.attr in self.handle_attrs
        return False

    def _spread(self) -> bool:
        """Follow the handle one step (aliases, attributes, the bench's own callees); True when it grew."""
        before = len(self.handle_names) + len(self.handle_attrs)
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None and self._is_handle(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.handle_names.add(target.id)
                    elif isinstance(target, ast.Attribute):
                        self.handle_attrs.add(target.attr)
            elif isinstance(node, ast.Call):
                for param in self._params_given_handles(node):
                    self.handle_names.add(param)
        return len(self.handle_names) + len(self.handle_attrs) > before

    def _callees(self, call: ast.Call) -> list[tuple[list[str], int]] | None:
        """The parameter lists ``call`` may bind (with the count of leading ``self``), or None."""
        func = call.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name is None:
            return None
        found: list[tuple[list[str], int]] = []
        if name in self.classes:
            init = next((f for f in self.classes[name].body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            found.append((_params(init), 1) if init is not None else ([], 0))
        bound = isinstance(func, ast.Attribute)  # a method called on an object: ``self`` comes first
        for function in self.functions.get(name, []):
            found.append((_params(function), 1 if bound and _is_method(function, self.parents) else 0))
        return found or None

    def _params_given_handles(self, call: ast.Call) -> list[str]:
        callees = self._callees(call)
        if callees is None:
            return []
        names: list[str] = []
        for params, skip in callees:
            for index, arg in enumerate(call.args):
                if self._is_handle(arg) and index + skip < len(params):
                    names.append(params[index + skip])
            names += [kw.arg for kw in call.keywords if kw.arg and self._is_handle(kw.value)]
        return names

    def _handle_use(self, node: ast.AST) -> None:
        """A use of the handle that the rules allow, or a finding."""
        parent = self.parents.get(node)
        shown = ast.unparse(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if parent.attr not in self.ports and parent.attr not in _HANDLE_EXTRAS | _HANDLE_INTERNALS:
                self.add(parent, f"`{shown}.{parent.attr}`: not a port of the design (a bench may use only its ports)")
            return
        if isinstance(parent, ast.Subscript) and parent.value is node:
            key = parent.slice
            if not (isinstance(key, ast.Constant) and key.value in self.ports):
                self.add(parent, f"`{ast.unparse(parent)}`: a bench may index the DUT only by a port's name")
            return
        if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and parent.value is node:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            if not all(isinstance(t, (ast.Name, ast.Attribute)) for t in targets):
                self.add(parent, f"`{shown}` stored where the check cannot follow it")
            return
        call, via_keyword = (self.parents.get(parent), True) if isinstance(parent, ast.keyword) else (parent, False)
        if isinstance(call, ast.Call) and call.func is not node:
            if isinstance(call.func, ast.Name) and call.func.id in _ATTR_CALLS and not via_keyword and call.args[:1] == [node]:
                name = call.args[1] if len(call.args) > 1 else None
                if isinstance(name, ast.Constant) and name.value not in self.ports | _HANDLE_EXTRAS:
                    self.add(call, f"`{call.func.id}({shown}, {name.value!r})`: not a port of the design")
                return  # a computed name is a finding of its own
            starred = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
            if self._callees(call) is not None and not starred:
                return
            self.add(call, f"`{shown}` handed to `{ast.unparse(call.func)}`, which the check cannot follow")
            return
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and parent.iter is node:
            self.add(parent, f"iterates over `{shown}`: a bench may use only the design's ports, by name")
            return
        self.add(node, f"`{shown}` used where the check cannot follow it ({type(parent).__name__.lower()})")


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> list[str]:
    return [] if function is None else [a.arg for a in (*function.args.posonlyargs, *function.args.args)]


def _is_method(function: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    return isinstance(parents.get(function), ast.ClassDef)


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _allowed() -> str:
    return ", ".join(f"`{m}`" for m in sorted(ALLOWED_MODULES - {"__future__"}))


def cocotb_bench_findings(text: str, *, ports: Iterable[str], path: str = "test_tb.py") -> list[str]:
    """Why the cocotb bench ``text`` may not be run on a design with ``ports`` (``[]``: it may)."""
    try:
        tree = ast.parse(text, path)
    except (SyntaxError, ValueError) as exc:
        return [f"{path}:{getattr(exc, 'lineno', None) or '?'}: does not parse ({getattr(exc, 'msg', exc)}): a bench that cannot be read is not run"]
    return _Reader(tree, frozenset(ports), path).read()
