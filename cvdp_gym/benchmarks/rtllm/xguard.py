"""Outputs left X or Z where the reference's are known: the X trick a test bench's ``!=`` cannot see.

A test bench that checks ``if (out != expected) errors = errors + 1;`` counts nothing when
``out`` is X: the comparison is X, and ``if`` takes X as false. RTLLM v2.0's test benches
check this way: an answer that drives every output X (``assign out = 'x;``) passed 4 of its
50 designs (``comparator_3bit``, ``comparator_4bit``, ``sequence_detector``,
``square_wave``), under the benchmark's own rule and, before this guard, under the verdict
here; so did one whose outputs are known for a moment and X afterwards, X on every other
cycle or X in one bit. VerilogEval's test benches compare with ``===`` against the
reference and are not fooled.

The guard is one more root module compiled after the test bench (a random name, like the
test bench's in an isolated run: :mod:`cvdp_gym.harness.isolation`), with a copy of the
problem's reference beside it (RTLLM's ``verified_<name>.v``, every module it declares
renamed with the guard's own prefix, its ``timescale`` directives dropped so that it takes the
test bench's, as the guard does: no new time precision, so ``%t`` prints as before). The copy
is instantiated with the parameters the test bench gives the answer's instance (read by
elaborating the test bench with the reference, pyslang) and fed the answer's own input ports
(hierarchical names: ``scope.instance.port``); it sees exactly what the answer sees. At every
change of an input or of either design's outputs the guard reads both sides, and it judges
the last reading of each time step (once the step is over: no delta-cycle glitch counts),
where every input is known (0 or 1; RTLLM v2.0's fixed-point test benches drive X into their
designs, ``$random % (1 << N)`` with N = 32, and a design's X-handling is its own). An output is
**flagged** when

- after its first judged moment with every bit known, any bit of it is X or Z at a judged
  moment where the same bit of the reference's is known (before it first settles, an answer
  may be X where the reference is not, at no more than ``SETTLE_GRACE`` judged moments: a
  synchronous reset against an asynchronous one settles at the first clock edge); or
- it never has every bit known at a judged moment, where the reference's output does at some.

At the end of the simulation the guard prints a line of its own for each flagged output
(a time step the simulation's end cut short is not judged). Its lines, and any the
reference's copy prints, carry a marker of their own and are taken out of the log before
either reading: the benchmark's ``official`` reading never sees them. A flow fails an answer
the guard names (``test_failure``). A reference run judges the reference against its own
copy, so no reference is flagged: of RTLLM v2.0's 50 and v1.1's 29, the same 47 and 26 pass as
without a guard, and so does every answer of the benchmark's own ``_chatgpt35``/``_chatgpt4``
samples that passed before.

Without a reference (or where the copy cannot be placed: the instance or a port not found by
elaboration, a parameter that is not a number, an ``inout``, a module of the copy from a macro,
an ordered connection the answer's header does not match; or where it does not build beside
the answer, as v1.1's ``pe`` reference does not), the guard falls back to the answer's own
ports and the weaker rule: an output that has no known bit at any judged moment (the flow then
counts only the outputs the reference drives, ``RtllmFlow._driven``).

Contract: ``plan(testbench, answer, top, reference)`` finds the test bench's module that
instantiates ``top`` and the instance's name (pyslang), and the ports to watch (from the
reference's elaboration beside the test bench, else the answer's own); None where neither can
be found (then no guard runs: the verdict is the test bench's alone). ``Guard.source(module,
scope, instance, marker)`` is the guard's text (the reference's copy included) for the run's
names; ``split(text, marker)`` takes the guard's lines out of a log and names the outputs it
flagged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import pyslang
from pyslang import ast, syntax

from cvdp_gym.equivalence.ports import read_design
from cvdp_gym.errors import HarnessError
from cvdp_gym.harness.flows.flow_kit import instrument, isolate

__all__ = ["Guard", "plan", "split"]

SK = syntax.SyntaxKind
#: What follows the marker on a line the reference's copy printed (dropped, never a flag).
COPY_LINE = "#"
_TIMESCALE = re.compile(r"`timescale\b[^\n]*")
#: A parameter value slang prints that Verilog reads back as the same number.
_LITERAL = re.compile(r"^-?(?:\d+|\d+'s?[bodh][0-9a-fA-FxXzZ?_]+|\d+\.\d+(?:[eE][-+]?\d+)?)$")
_DIRECTIONS = {"In": "input", "Out": "output", "InOut": "inout"}
#: The last reading of a time step is its end: judged when a later step (or the end) begins.
#: (Inline: a ``final`` block may not call a task.)
_COMMIT = (
    "    if (pending && now_time != $realtime) begin",
    "      if (now_judged) begin",
    "        judged = 1'b1;",
    "        flagged = flagged | (settled & now_bad);",
    "        late = ~settled & now_reference_full & ~now_full;",
    "        for (b = 0; b < outputs; b = b + 1) if (late[b]) begin",
    "          if (waits[b] >= GRACE) overdue[b] = 1'b1; else waits[b] = waits[b] + 1;",
    "        end",
    "        settled = settled | now_full;",
    "        reference_full = reference_full | now_reference_full;",
    "        any_known = any_known | now_any;",
    "      end",
    "      pending = 1'b0;",
    "    end",
)
#: Judged moments an answer's output may stay unknown, before it first settles, where the
#: reference's is known (a synchronous reset settles at the first clock edge, one or two).
SETTLE_GRACE = 4
#: The widest port the guard watches (as the reference grader: ``equivalence.ports``).
MAX_WIDTH = 4096


@dataclass(frozen=True)
class Copy:
    """The reference's copy in the guard: its text (its top module named as the answer's),
    that module's name, the parameters the test bench overrides (name, literal), and the
    reference's names of the guard's inputs and outputs, in their order."""

    text: str
    top: str
    parameters: tuple[tuple[str, str], ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class Guard:
    """Where the answer's instance is (``scope``: the test bench's module, ``instance``), its
    inputs and its outputs (the answer's port names, widths), and the reference's copy that
    judges them (None: the fallback rule, outputs never known at all)."""

    scope: str
    instance: str
    inputs: tuple[tuple[str, int], ...]
    outputs: tuple[tuple[str, int], ...]
    copy: Copy | None = None

    def source(self, module: str, scope: str, instance: str, marker: str) -> str:
        """The guard's module ``module``, watching ``scope.instance`` (the run's names), and
        the reference's copy (its modules prefixed ``<module>_``)."""
        path = f"{scope}.{instance}"
        count = len(self.outputs)
        known_inputs = " && ".join(f"((^{path}.{name}) !== 1'bx)" for name, _ in self.inputs) or "1'b1"
        lines = ["`default_nettype wire", f"module {module};"]
        lines += [f"  reg [{width - 1}:0] a{index};" for index, (_, width) in enumerate(self.outputs)]
        watched = [f"{path}.{name}" for name, _ in (*self.inputs, *self.outputs)]
        copy_text = ""
        if self.copy is not None:
            copy_text, top = self._copy(module, marker)
            lines += [f"  wire [{width - 1}:0] r{index};" for index, (_, width) in enumerate(self.outputs)]
            watched += [f"r{index}" for index in range(count)]
            parameters = ", ".join(f".{name}({value})" for name, value in self.copy.parameters)
            connections = [
                *(f".{ref}({path}.{name})" for ref, (name, _) in zip(self.copy.inputs, self.inputs, strict=True)),
                *(f".{ref}(r{index})" for index, ref in enumerate(self.copy.outputs)),
            ]
            lines.append(f"  {top} {'#(' + parameters + ') ' if parameters else ''}reference ({', '.join(connections)});")
        zero = f"{{{count}{{1'b0}}}}"
        lines += [
            f"  reg [{count - 1}:0] settled = {zero}, reference_full = {zero}, flagged = {zero}, any_known = {zero};",
            # An answer may settle later than the reference (a synchronous reset beside an
            # asynchronous one: the first clock edge), never much later: unknown at more than
            # GRACE judged moments where the reference's output is known, it is overdue.
            f"  localparam integer GRACE = {SETTLE_GRACE}, outputs = {count};",
            f"  reg [{count - 1}:0] late = {zero}, overdue = {zero};",
            f"  integer waits [0:{count - 1}];",
            f"  reg [{count - 1}:0] now_bad = {zero}, now_full = {zero}, now_reference_full = {zero}, now_any = {zero};",
            "  reg pending = 1'b0, now_judged = 1'b0, judged = 1'b0;",
            "  realtime now_time = 0.0;",
            "  integer b;",
            f"  initial for (b = 0; b < {count}; b = b + 1) waits[b] = 0;",
            f"  always @({' or '.join(watched)}) begin",
            *_COMMIT,
            f"    now_judged = {known_inputs};",
        ]
        for index, (name, width) in enumerate(self.outputs):
            # ``^v`` is X when any bit is X or Z; ``v ^ v`` is 0 in each known bit and X in each other.
            lines += [
                f"    a{index} = {path}.{name};",
                f"    now_full[{index}] = ((^a{index}) !== 1'bx);",
                f"    now_any[{index}] = ((a{index} ^ a{index}) !== {{{width}{{1'bx}}}});",
            ]
            if self.copy is not None:
                lines += [
                    f"    now_reference_full[{index}] = ((^r{index}) !== 1'bx);",
                    f"    now_bad[{index}] = 1'b0;",
                    f"    if (!now_full[{index}]) for (b = 0; b < {width}; b = b + 1)",
                    f"      if ((a{index}[b] !== 1'b0 && a{index}[b] !== 1'b1) && (r{index}[b] === 1'b0 || r{index}[b] === 1'b1))"
                    f" now_bad[{index}] = 1'b1;",
                ]
        lines += ["    pending = 1'b1;", "    now_time = $realtime;", "  end", "  final begin", *_COMMIT]
        for index, (name, _) in enumerate(self.outputs):
            rule = (
                f"flagged[{index}] || overdue[{index}] || (!settled[{index}] && reference_full[{index}])" if self.copy is not None
                else f"judged && !any_known[{index}]"
            )
            lines.append(f'    if ({rule}) $display("{marker}{name}");')
        lines += ["  end", "endmodule", ""]
        return "\n".join(lines) + copy_text

    def _copy(self, module: str, marker: str) -> tuple[str, str]:
        """The reference's copy (its modules renamed ``<module>_<name>``, its prints marked as
        the copy's, its ``timescale`` lines dropped) and its top module's name."""
        assert self.copy is not None
        isolated = isolate({"reference.v": self.copy.text}, prefixes=(f"{module}_", ""))
        text = instrument(isolated.files["reference.v"], marker + COPY_LINE)
        return _TIMESCALE.sub("", text) + "\n", isolated.module(self.copy.top)


@lru_cache(maxsize=256)
def _instance(testbench: str, top: str) -> tuple[str, str] | None:
    """The test bench's module that instantiates ``top``, and the instance's name (the first)."""
    tree = syntax.SyntaxTree.fromText(testbench, "testbench.v")
    found: list[tuple[str, str]] = []

    def visit(node: syntax.SyntaxNode) -> None:
        if node.kind == SK.ModuleDeclaration:
            module = node.header.name.valueText
            for member in node.members:
                if member.kind == SK.HierarchyInstantiation and member.type.valueText == top:
                    for instance in member.instances:
                        if isinstance(instance, syntax.SyntaxNode) and instance.decl is not None:
                            found.append((module, instance.decl.name.valueText))

    tree.root.visit(lambda node: visit(node) or True)
    return found[0] if found else None


@dataclass(frozen=True)
class _Elaborated:
    """The reference as the test bench instantiates it: its ports in declaration order (name,
    direction, width under the test bench's parameters, whether the test bench connects it),
    the parameters the test bench overrides (name, literal), and whether the ports are
    connected by order."""

    ports: tuple[tuple[str, str, int, bool], ...]
    parameters: tuple[tuple[str, str], ...]
    ordered: bool


@lru_cache(maxsize=256)
def _elaborate(testbench: str, reference: str, top: str, scope: str, instance: str) -> _Elaborated | None:
    """The reference's instance ``scope.instance`` elaborated beside the test bench, or None."""
    if top not in isolate({"reference.v": reference}).modules:  # the copy could not be renamed
        return None
    compilation = ast.Compilation(pyslang.Bag([ast.CompilationOptions()]))
    compilation.addSyntaxTree(syntax.SyntaxTree.fromText(testbench, "testbench.v"))
    compilation.addSyntaxTree(syntax.SyntaxTree.fromText(reference, "reference.v"))
    found: list = []

    def visit(symbol) -> bool:
        if symbol.kind == ast.SymbolKind.Instance and symbol.hierarchicalPath == f"{scope}.{instance}":
            found.append(symbol)
        return not found

    compilation.getRoot().visit(visit)
    if not found or found[0].definition.name != top:
        return None
    symbol = found[0]
    ports = []
    for port in symbol.body.portList:
        direction = _DIRECTIONS.get(str(getattr(port, "direction", "")).split(".")[-1])
        if str(port.kind) != "SymbolKind.Port" or direction not in ("input", "output"):
            return None
        width = port.type.bitWidth
        if not 0 < width <= MAX_WIDTH:
            return None
        connection = symbol.getPortConnection(port)
        ports.append((port.name, direction, width, connection is not None and connection.expression is not None))
    parameters = []
    for parameter in symbol.body.parameters:
        if parameter.isOverridden:
            value = str(parameter.value)
            if not _LITERAL.match(value):
                return None
            parameters.append((parameter.name, f"({value})" if value.startswith("-") else value))
    node = symbol.syntax
    ordered = node is not None and any(
        isinstance(c, syntax.SyntaxNode) and c.kind == SK.OrderedPortConnection for c in node.connections
    )
    return _Elaborated(tuple(ports), tuple(parameters), ordered)


def _header_ports(answer: str, top: str) -> list[str] | None:
    """The answer's ``top`` ports in header order (syntax only), or None."""
    tree = syntax.SyntaxTree.fromText(answer, "answer.v")
    found: list[list[str] | None] = []

    def visit(node: syntax.SyntaxNode) -> bool:
        if node.kind == SK.ModuleDeclaration and node.header.name.valueText == top and node.header.ports is not None:
            names: list[str] | None = []
            for port in node.header.ports.ports:
                if not isinstance(port, syntax.SyntaxNode):
                    continue
                if port.kind == SK.ImplicitAnsiPort:
                    names.append(port.declarator.name.valueText)
                elif port.kind == SK.ImplicitNonAnsiPort and port.expr is not None and port.expr.kind == SK.PortReference:
                    names.append(port.expr.name.valueText)
                else:
                    names = None
                    break
            found.append(names)
        return not found

    tree.root.visit(visit)
    return found[0] if found else None


def _with_copy(testbench: str, answer: str, top: str, reference: str, scope: str, instance: str) -> Guard | None:
    """The guard that judges the answer against the reference's copy, or None where it cannot be placed."""
    try:
        found = _elaborate(testbench, reference, top, scope, instance)
    except Exception:  # slang's walk of a construct it models oddly: the fallback guard, never a crash
        return None
    if found is None:
        return None
    names = [name for name, _, _, _ in found.ports]
    if found.ordered:  # the answer's ports by position, as the test bench connects them
        header = _header_ports(answer, top)
        if header is None or len(header) != len(names):
            return None
        names = header
    inputs, outputs, reference_inputs, reference_outputs = [], [], [], []
    for name, (reference_name, direction, width, connected) in zip(names, found.ports, strict=True):
        if connected:
            (inputs if direction == "input" else outputs).append((name, width))
            (reference_inputs if direction == "input" else reference_outputs).append(reference_name)
    if not outputs:
        return None
    copy = Copy(reference, top, found.parameters, tuple(reference_inputs), tuple(reference_outputs))
    return Guard(scope, instance, tuple(inputs), tuple(outputs), copy)


def plan(testbench: str, answer: str, top: str, reference: str | None = None) -> Guard | None:
    """The guard for ``answer`` (whose top module is ``top``) under ``testbench``, judged
    against ``reference`` (the reference's text, its top module named ``top``) where its copy
    can be placed; else the fallback guard on the answer's own ports; or None."""
    where = _instance(testbench, top)
    if where is None:
        return None
    if reference:
        guard = _with_copy(testbench, answer, top, reference, *where)
        if guard is not None:
            return guard
    try:
        design = read_design(answer, top)
    except HarnessError:
        return None
    inputs = tuple((port.name, port.width) for port in design.ports if port.direction == "input")
    outputs = tuple((port.name, port.width) for port in design.ports if port.direction == "output")
    return Guard(where[0], where[1], inputs, outputs) if outputs and not design.errors else None


def split(text: str, marker: str) -> tuple[str, list[str]]:
    """``text`` without the guard's lines (and the reference's copy's), and the outputs they name."""
    kept, flagged = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith(marker):
            rest = line[len(marker):]
            if not rest.startswith(COPY_LINE):
                flagged.append(rest.strip())
        else:
            kept.append(line)
    return "".join(kept), flagged
