"""What an answer may not reach outside its own design: a static check before anything runs.

An answer to a test-bench benchmark (VerilogEval, RTLLM) or to the reference grader is
compiled in one simulation with the test bench and often the reference, and Icarus lets a
design name them: upward names whose head is a test-bench instance or named block
(``good1.q``), calls of its tasks by simple name (``peek;``), names from the root
(``tb.tb_match``, ``$root.tb.x``); it can instantiate the reference, ``force`` the test
bench's verdict signals, ``bind`` into them, open the test bench's files or its own process's
memory (``/proc/self/mem``, where :mod:`cvdp_gym.harness.testbench`'s per-run secret lives).
Per-run random names (:mod:`cvdp_gym.harness.isolation`) make such names lead nowhere; this
check names the attempt, so the verdict says ``reach_in`` and why.

Contract: ``scan(files, supplied=, readable=, protected=, rules=, kind=, included=)`` parses
the answer's files (``{path: text}``, with the files its includes reach, ``included``: see
:mod:`cvdp_gym.gate.directives`, which is read first) with slang (pyslang), in process, and
returns a :class:`Scan`: the :class:`Finding` list (each ``path:line: what``) and the
definitions the answer declares. Every system task or function the answer calls must be on
its kind's allowlist (:mod:`cvdp_gym.gate.system_tasks`); the file tasks there are checked by
these rules. ``rules``:

- ``FULL`` (the test-bench flows and the reference grader): the answer's files are compiled
  alone, with ``supplied`` (RTL the problem gives the answer, counted as its own); a dotted
  name, a task or function call or a ``disable`` that does not resolve there, a module that
  is not defined there, ``$root``, ``bind``, DPI, a file name (``$fopen``, ``$readmem*``,
  ``$writemem*``, ``$dumpfile``) that is not a literal (or a parameter's literal), a file read that is
  not the answer's own (its files, ``readable``, a file it writes itself), a file written
  outside its working folder or over a ``protected`` one (the test bench's files and data), a
  descriptor (``$fgets``, ``$fdisplay``...) it did not open itself (a literal such as
  ``32'h8000_0003`` names the test bench's open files; standard output and error may be
  written; a variable of its own counts only when every assignment is a ``$fopen`` and it is
  used nowhere but as a descriptor, compared or tested: ``fd + 1``, ``fd++`` or ``$sscanf``
  into it reach other descriptors). ``force``/``release``, procedural ``assign``/``deassign`` and
  ``defparam`` are named as such when their target is outside. A plain undeclared name is not
  a finding: Icarus resolves none outside either, so it is the build error it always was;
- ``NEVER`` (CVDP's cocotb harnesses, which compile no test-bench module beside the answer):
  only what no design answer needs: ``$root``, ``bind`` into a module that neither the answer
  nor ``supplied`` defines, DPI, file names that are not literals; a file read by a path that
  is absolute or climbs out of the working folder (``/proc/self/environ``, the harness's
  ``/src``), a file written anywhere but a plain name of the working folder with a data
  extension (:data:`WRITABLE_SUFFIXES`: never cocotb's ``*.xml`` results nor Python).

Includes are resolved before this reading (:mod:`cvdp_gym.gate.directives`: an include of
anything but the answer's own files never gets here). Never a finding on legitimate code
(``tests/cvdp_gym/gate/test_reach_in.py``): every
reference of every benchmark, the bundled CVDP problems and the training fixtures scan clean,
and a design's own hierarchy (``u_sub.sig``, generate blocks, struct members, interface
ports) resolves in its own compilation. Cheap: the syntax walk calls Python only for the node
kinds it reads, and the compilation runs only where a name could lead outside.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pyslang import SourceManager, ast, syntax

from cvdp_gym.gate.findings import Finding, Scan
from cvdp_gym.gate.system_tasks import allowed

__all__ = ["FULL", "NEVER", "RTL_SUFFIXES", "Finding", "Scan", "scan"]

SK = syntax.SyntaxKind
FULL, NEVER = "full", "never"
#: The files of an answer the gate reads as Verilog (included files are read whatever their name).
RTL_SUFFIXES = (".v", ".sv", ".vh", ".svh")
#: System tasks whose first argument names a file they read, and those that name one they write
#: (``$fopen``'s mode decides: ``"r"`` reads, ``"w"``/``"a"`` or no mode, a multichannel
#: descriptor, writes).
FILE_READS = frozenset({"$readmemb", "$readmemh"})
FILE_WRITES = frozenset({"$writememb", "$writememh", "$dumpfile"})
FILE_NAME_TASKS = FILE_READS | FILE_WRITES | {"$fopen"}
#: System tasks that read or write through a file descriptor: only one the answer opened itself
#: (a variable every assignment of which is a ``$fopen``), or standard output and error to write.
FD_READS = frozenset({"$fgets", "$fgetc", "$ungetc", "$fscanf", "$fread", "$fseek", "$frewind", "$rewind", "$ftell", "$feof", "$ferror"})
FD_WRITES = frozenset(f"$f{base}{radix}" for base in ("display", "write", "strobe", "monitor") for radix in ("", "b", "h", "o"))
FD_WRITES |= {"$fflush", "$fclose"}
#: Where a descriptor variable may stand besides a descriptor argument: compared, negated, a condition.
_READ_ONLY_USES = frozenset({
    SK.EqualityExpression, SK.InequalityExpression, SK.CaseEqualityExpression, SK.CaseInequalityExpression,
    SK.LessThanExpression, SK.LessThanEqualExpression, SK.GreaterThanExpression, SK.GreaterThanEqualExpression,
    SK.UnaryLogicalNotExpression, SK.LogicalAndExpression, SK.LogicalOrExpression, SK.ConditionalPattern,
})
#: Standard output and error, as descriptors and as multichannel descriptors (Icarus).
STANDARD_FDS = frozenset({1, 2, 0x8000_0001, 0x8000_0002})
#: The extensions of the files a design may write under ``NEVER`` (data and waveforms; never a
#: results file a harness reads, nor code).
WRITABLE_SUFFIXES = (".txt", ".log", ".out", ".dat", ".csv", ".hex", ".mem", ".bin", ".vcd", ".fst", ".lxt", ".lx2", ".ghw")
#: slang's diagnostics of a name declared nowhere in what was compiled ("did you mean" included).
_UNDECLARED = frozenset({"UndeclaredIdentifier", "TypoIdentifier", "UndeclaredButFoundPackage"})
#: slang's diagnostics of a name that leads outside what was compiled.
_OUTSIDE = {
    "UnknownModule": "an instance of module `{0}`, which the answer does not define",
    "UnknownInterface": "an instance of interface `{0}`, which the answer does not define",
    "UnknownPrimitive": "an instance of `{0}`, which the answer does not define",
    "UnknownPackage": "`{0}::`, a package the answer does not define",
    "UnknownClassOrPackage": "`{0}::`, a package the answer does not define",
    "HierarchicalRefUnknownModule": "a hierarchical reference into `{0}`, which the answer does not define",
    "CouldNotResolveHierarchicalPath": "a hierarchical reference that does not resolve inside the answer",
}
#: Statements named by their own keyword when their target leads outside.
_TARGETED = {
    SK.ProceduralForceStatement: "force",
    SK.ProceduralReleaseStatement: "release",
    SK.ProceduralAssignStatement: "procedural assign",
    SK.ProceduralDeassignStatement: "deassign",
    SK.DefParam: "defparam",
}
_SVINT = re.compile(r"\d+'s?([bodh])([0-9a-fA-F]+)")
_RADIX = {"b": 2, "o": 8, "d": 10, "h": 16}
_DEFINITIONS = (SK.ModuleDeclaration, SK.InterfaceDeclaration, SK.ProgramDeclaration, SK.PackageDeclaration, SK.UdpDeclaration)


@dataclass
class _Site:
    """A place where a name could lead outside: its span (buffer, start, end), text and kind
    (``dotted``, ``call`` or ``disable``)."""

    buffer: int
    start: int
    end: int
    text: str
    kind: str

    def holds(self, key: tuple[int, int]) -> bool:
        return key[0] == self.buffer and self.start <= key[1] < self.end


@dataclass
class _File:
    path: str
    tree: syntax.SyntaxTree
    own: bool
    sites: dict[tuple[int, int], _Site] = field(default_factory=dict)  # by the head's (buffer, offset)
    targeted: list[tuple[int, int, int, str]] = field(default_factory=list)  # buffer, start, end, keyword
    instantiated: list[str] = field(default_factory=list)
    binds: list[tuple[str, int]] = field(default_factory=list)  # target module, line
    findings: list[Finding] = field(default_factory=list)
    string_params: dict[str, list[str | None]] = field(default_factory=dict)
    #: Each descriptor argument (``$fgets``, ``$fdisplay``...): the task, the argument, the line.
    descriptors: list[tuple[str, syntax.SyntaxNode | None, int]] = field(default_factory=list)
    #: Each variable's assignments: whether each assigns it a ``$fopen`` (a descriptor of the answer's own).
    assigned: dict[str, list[bool]] = field(default_factory=dict)
    #: Each use of a plain name other than an assignment's target, a comparison or a condition:
    #: the name and where it starts (a descriptor argument is resolved against these at the end).
    loose: list[tuple[str, int]] = field(default_factory=list)
    #: Each file-name argument: the task, the argument, whether it writes, the line.
    file_args: list[tuple[str, syntax.SyntaxNode | None, bool, int]] = field(default_factory=list)


def scan(
    files: Mapping[str, str],
    *,
    supplied: Mapping[str, str] | None = None,
    readable: Iterable[str] = (),
    protected: Iterable[str] = (),
    rules: str = FULL,
    kind: str = "design",
    included: Mapping[str, str] | None = None,
) -> Scan:
    """Find what the answer's ``files`` reach outside themselves (and ``supplied``, counted as
    theirs); ``readable``: more file names the answer may read by literal name; ``protected``:
    names it may not write (the test bench's files and data); ``kind``: whose allowlist of
    system tasks applies; ``included``: the files its includes reach (already resolved inside
    the answer by :func:`cvdp_gym.gate.directives.read_directives`), by the path slang looks up."""
    manager = SourceManager()
    supplied = dict(supplied or {})
    # Every file is a buffer of its own path, so an `include of one resolves in memory, never on
    # the host (the directives were read first: an include of anything else never gets here).
    for path, text in (included or {}).items():
        if path not in files and path not in supplied:
            manager.assignText(path, text)
    buffers = {path: manager.assignText(path, text) for path, text in {**supplied, **files}.items()}
    parsed = [_File(path, syntax.SyntaxTree.fromBuffer(buffers[path], manager), path in files) for path in buffers]
    own = [item for item in parsed if item.own]
    definitions: set[str] = set()
    for item in own:
        _walk(item, manager, definitions, rules, kind)
    defined = set(definitions)
    for item in (i for i in parsed if not i.own):
        item.tree.root.visit(lookup_table={kind: lambda node: defined.add(_definition_name(node)) for kind in _DEFINITIONS})
    own_names = {posixpath.normpath(p) for p in (*files, *supplied)} | {posixpath.basename(p) for p in files}
    params: dict[str, list[str | None]] = {}
    for item in own:
        for name, values in item.string_params.items():
            params.setdefault(name, []).extend(values)
    files_of = _Files(own_names | {posixpath.normpath(p) for p in readable}, {posixpath.normpath(p) for p in protected})
    for item in own:  # the names it writes first: a file it wrote itself it may read back
        for _, argument, writes, _ in item.file_args:
            if writes:
                files_of.note_written(_values(argument, params))
    for item in own:
        item.findings += [
            Finding(item.path, line, f"`bind {target}`: a target the answer does not define")
            for target, line in item.binds if target not in defined
        ]
        for task, argument, writes, line in item.file_args:
            why = files_of.why_not(_values(argument, params), writes=writes, rules=rules)
            if why:
                item.findings.append(Finding(item.path, line, f"`{task}` {why}"))
        # A descriptor of the answer's own: every assignment is a ``$fopen``, and it is used
        # nowhere else than as a descriptor, in a comparison or as a condition (not
        # incremented, selected, passed to a task or a port, read into by ``$sscanf``...).
        at = {descriptor.sourceRange.start.offset for _, descriptor, _ in item.descriptors if descriptor is not None}
        loose = {name for name, offset in item.loose if offset not in at}
        opened = {name for name, opens in item.assigned.items() if all(opens)} - loose
        item.findings += [
            Finding(item.path, line, f"`{task}` through a descriptor the answer did not open itself (`$fopen`, left unchanged)")
            for task, descriptor, line in item.descriptors
            if descriptor is None or descriptor.kind != SK.IdentifierName or descriptor.identifier.valueText not in opened
        ]
    if rules == FULL and any(i.sites or i.targeted or any(t not in defined for t in i.instantiated) for i in own):
        _compile(parsed, manager)
    findings = [f for item in own for f in sorted(set(item.findings), key=lambda f: (f.line, f.what))]
    return Scan(findings, frozenset(definitions))


def _definition_name(node: syntax.SyntaxNode) -> str:
    return node.name.valueText if node.kind == SK.UdpDeclaration else node.header.name.valueText


def _line(manager: SourceManager, location) -> int:
    return int(manager.getLineNumber(manager.getFullyExpandedLoc(location)))


def _walk(item: _File, manager: SourceManager, definitions: set[str], rules: str, kind: str) -> None:
    """One pass over the syntax tree: definitions, sites, and the syntactic findings."""
    tree = item.tree

    def add(node: syntax.SyntaxNode, what: str) -> None:
        item.findings.append(Finding(item.path, _line(manager, node.sourceRange.start), what))

    def site(head: syntax.SyntaxNode, whole: syntax.SyntaxNode, kind: str) -> None:
        key = _key(head)
        item.sites.setdefault(key, _Site(key[0], key[1], _offset_end(whole), _text(whole), kind))

    def scoped(node: syntax.SyntaxNode) -> None:
        parent = node.parent
        if parent is not None and parent.kind == SK.ScopedName and parent.left is node:
            return  # the outer name records the whole chain
        head = node
        while head.kind == SK.ScopedName:
            head = head.left
        if head.kind == SK.RootScope:
            add(node, f"`{_text(node)}`: `$root` names the whole simulation, outside the answer")
            site(head, node, "root")  # slang's own complaint about it is the same finding
        else:
            site(head, node, "dotted")

    def invocation(node: syntax.SyntaxNode) -> None:
        if node.left.kind in (SK.IdentifierName, SK.IdentifierSelectName):
            site(node.left, node.left, "call")

    def statement(node: syntax.SyntaxNode) -> None:
        expr = node.expr
        if expr is not None and expr.kind in (SK.IdentifierName, SK.IdentifierSelectName):  # a task enabled without ()
            site(expr, expr, "call")

    def disable(node: syntax.SyntaxNode) -> None:
        if node.name.kind in (SK.IdentifierName, SK.IdentifierSelectName):
            site(node.name, node.name, "disable")

    def targeted(node: syntax.SyntaxNode) -> None:
        buffer, start = _key(node)
        item.targeted.append((buffer, start, _offset_end(node), _TARGETED[node.kind]))

    def instantiation(node: syntax.SyntaxNode) -> None:
        item.instantiated.append(node.type.valueText)

    def system(node: syntax.SyntaxNode) -> None:
        name = node.systemIdentifier.valueText
        if not allowed(name, kind):
            add(node, f"`{name}`: not one of the system tasks a {kind} answer may call")
            return
        if name not in FILE_NAME_TASKS | FD_READS | FD_WRITES:
            return
        args = _arguments(node)
        line = _line(manager, node.sourceRange.start)
        if name in FILE_NAME_TASKS:
            mode = _literal(args[1]) if name == "$fopen" and len(args) > 1 else None
            writes = name in FILE_WRITES or (name == "$fopen" and (len(args) < 2 or (mode or "r")[:1] in "wa"))
            item.file_args.append((name, args[0] if args else None, writes, line))
        elif rules == FULL:  # a descriptor: $fgets(s, fd) reads through its second argument
            descriptor = args[1] if name in ("$fgets", "$ungetc", "$fread") and len(args) > 1 else (args[0] if args else None)
            if not (name in FD_WRITES and _standard_fd(descriptor)) and not (name == "$fflush" and descriptor is None):
                item.descriptors.append((name, descriptor, line))

    def assigned(node: syntax.SyntaxNode) -> None:
        if node.left.kind == SK.IdentifierName:
            item.assigned.setdefault(node.left.identifier.valueText, []).append(_opens(node.right))

    def identifier(node: syntax.SyntaxNode) -> None:
        parent = node.parent
        if parent is not None and (
            parent.kind in _READ_ONLY_USES
            or (parent.kind in (SK.AssignmentExpression, SK.NonblockingAssignmentExpression) and parent.left is node)
        ):
            return
        item.loose.append((node.identifier.valueText, node.sourceRange.start.offset))

    def declarator(node: syntax.SyntaxNode) -> None:
        if node.initializer is not None:
            item.assigned.setdefault(node.name.valueText, []).append(_opens(node.initializer.expr))

    def dpi(node: syntax.SyntaxNode) -> None:
        add(node, f"`{_text(node).split('(')[0].strip()}`: DPI calls code outside the simulation")

    def bind(node: syntax.SyntaxNode) -> None:
        if rules == FULL:
            add(node, f"`{_text(node)[:80]}`: `bind` puts code into a design other than the answer's")
            return
        head = node.target
        while head.kind == SK.ScopedName:
            head = head.left
        item.binds.append((_text(head).split("[")[0].strip(), _line(manager, node.sourceRange.start)))

    def parameter(node: syntax.SyntaxNode) -> None:
        for declarator in (d for d in node.declarators if isinstance(d, syntax.SyntaxNode)):
            value = declarator.initializer.expr if declarator.initializer is not None else None
            item.string_params.setdefault(declarator.name.valueText, []).append(_literal(value))

    def override(node: syntax.SyntaxNode) -> None:
        item.string_params.setdefault(node.name.valueText, []).append(_literal(node.expr))

    table = {kind: lambda node: definitions.add(_definition_name(node)) for kind in _DEFINITIONS}
    table.update({
        SK.ScopedName: scoped,
        SK.InvocationExpression: invocation,
        SK.ExpressionStatement: statement,
        SK.DisableStatement: disable,
        SK.HierarchyInstantiation: instantiation,
        SK.SystemName: system,
        SK.DPIImport: dpi,
        SK.DPIExport: dpi,
        SK.BindDirective: bind,
        SK.ParameterDeclaration: parameter,
        SK.NamedParamAssignment: override,
        SK.AssignmentExpression: assigned,
        SK.NonblockingAssignmentExpression: assigned,
        SK.Declarator: declarator,
        SK.IdentifierName: identifier,
        SK.IdentifierSelectName: lambda node: item.loose.append((node.identifier.valueText, -1)),  # fd[0]
    })
    table.update({kind: targeted for kind in _TARGETED})
    tree.root.visit(lookup_table=table)
    if rules != FULL:
        item.sites.clear()
        item.targeted.clear()


def _compile(parsed: list[_File], manager: SourceManager) -> None:
    """Compile the answer's files (and the supplied ones) alone: what does not resolve there
    leads outside. Only diagnostics at a site (a dotted name's head, a call, a ``disable``) or
    of an unknown definition count; a plain undeclared name is a build error, not a reach."""
    compilation = ast.Compilation()
    for item in parsed:
        compilation.addSyntaxTree(item.tree)
    own = {item.path: item for item in parsed if item.own}
    for diag in compilation.getAllDiagnostics():
        code = str(diag.code).removeprefix("DiagCode(").removesuffix(")")
        if code not in _UNDECLARED and code not in _OUTSIDE:
            continue
        location = diag.location
        item = own.get(str(manager.getFileName(manager.getFullyExpandedLoc(location))))
        if item is None:
            continue
        key = (location.buffer.id, location.offset)
        args = [str(a) for a in diag.args]
        site = item.sites.get(key)
        if code in _UNDECLARED and site is None:
            continue  # a plain name: not resolved outside by the simulator either
        if site is None:
            site = next((s for s in item.sites.values() if s.holds(key)), None)
        if site is not None and site.kind == "root":
            continue
        line = _line(manager, location)
        keyword = next((k for buffer, start, end, k in item.targeted if buffer == key[0] and start <= key[1] < end), None)
        what = _describe(code, args, site)
        if keyword is not None:
            what = f"{keyword} of {what}"
        item.findings.append(Finding(item.path, line, what))


def _describe(code: str, args: list[str], site: _Site | None) -> str:
    name = args[0] if args else "?"
    if site is not None and site.kind == "call":
        return f"`{site.text}`: a call of a task or function the answer does not define"
    if site is not None and site.kind == "disable":
        return f"`disable {site.text}`: a block the answer does not define"
    if site is not None and (code in _UNDECLARED or code == "CouldNotResolveHierarchicalPath"):
        return f"`{site.text}`: a hierarchical reference that leaves the answer's own design"
    return _OUTSIDE.get(code, "`{0}`: a name the answer does not define").format(name)


@dataclass
class _Files:
    """Which files a design may open by name: its own (its files, ``readable``, and the new
    files it writes itself) to read; to write, any plain name in its working folder but a
    ``protected`` one (the test bench's files and data)."""

    own: set[str]
    protected: set[str]

    def note_written(self, values: list[str | None]) -> None:
        self.own |= {posixpath.normpath(v) for v in values if v is not None and _plain(v) and v not in self.protected}

    def why_not(self, values: list[str | None], *, writes: bool, rules: str) -> str:
        """Why opening these names is not allowed ("" when it is)."""
        for value in values:
            if value is None:
                return "with a file name that is not a literal"
            path = posixpath.normpath(value)
            if rules != FULL:
                if writes and not (_plain(value) and value.lower().endswith(WRITABLE_SUFFIXES)):
                    return f'of "{value}", not a data file of the working folder'
                if not writes and (path.startswith(("/", "..")) or not value):
                    return f'of "{value}", a file outside the answer\'s working folder'
            elif writes and (not _plain(value) or path in self.protected):
                return f'of "{value}", a file that is not the answer\'s own to write'
            elif not writes and path not in self.own:
                return f'of "{value}", a file that is not the answer\'s own'
        return ""


def _plain(name: str) -> bool:
    """A file name of the working folder itself (no folder, not hidden, not a parent)."""
    return bool(name) and "/" not in name and not name.startswith(".")


def _values(argument, params: dict[str, list[str | None]]) -> list[str | None]:
    """The literal values a file-name argument can take (None: one that is not a literal)."""
    if argument is None:
        return []
    literal = _literal(argument)
    if literal is not None:
        return [literal]
    if argument.kind == SK.IdentifierName and argument.identifier.valueText in params:
        return params[argument.identifier.valueText]
    return [None]


def _arguments(node: syntax.SyntaxNode) -> list:
    """The argument expressions of the system call named by ``node`` (empty without any)."""
    parent = node.parent
    if parent is None or parent.kind != SK.InvocationExpression or parent.arguments is None:
        return []
    return [
        _unwrap(argument.expr) if argument.kind == SK.OrderedArgument else argument
        for argument in parent.arguments.parameters
        if isinstance(argument, syntax.SyntaxNode)  # not the commas
    ]


def _unwrap(expr):
    """The expression inside an argument's property/sequence wrappers and parentheses."""
    while expr is not None and expr.kind in (SK.SimplePropertyExpr, SK.SimpleSequenceExpr, SK.ParenthesizedExpression):
        expr = expr.expression if expr.kind == SK.ParenthesizedExpression else expr.expr
    return expr


def _literal(expr) -> str | None:
    """A string literal's value (None for anything else)."""
    expr = _unwrap(expr)
    if expr is None or expr.kind != SK.StringLiteralExpression:
        return None
    return str(expr.literal.value)


def _opens(expr) -> bool:
    """Whether an assigned expression is a ``$fopen`` call (a descriptor the answer opened)."""
    expr = _unwrap(expr)
    return (
        expr is not None and expr.kind == SK.InvocationExpression and expr.left.kind == SK.SystemName
        and expr.left.systemIdentifier.valueText.startswith("$fopen")
    )


def _standard_fd(expr) -> bool:
    """Whether a descriptor argument is a literal naming standard output or error."""
    if expr is None or expr.kind not in (SK.IntegerVectorExpression, SK.IntegerLiteralExpression):
        return False
    match = _SVINT.fullmatch(str(expr.getLastToken().value))  # slang's value: 32'd2147483649
    return bool(match) and int(match.group(2), _RADIX[match.group(1)]) in STANDARD_FDS


def _text(node: syntax.SyntaxNode) -> str:
    return " ".join(str(node).split())


def _key(node: syntax.SyntaxNode) -> tuple[int, int]:
    """Where a node starts: (buffer, offset), as slang's diagnostics locate it."""
    location = node.getFirstToken().location
    return int(location.buffer.id), int(location.offset)


def _offset_end(node: syntax.SyntaxNode) -> int:
    last = node.getLastToken()
    return int(last.location.offset) + len(last.rawText)
