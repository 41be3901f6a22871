"""A design's interface, clocks and resets, read in process with pyslang (slang).

Contract: ``read_design(source, top)`` elaborates ``top`` from one file's text and returns a
``Design``: its ports (name, direction, width at the default parameters), its module names,
whether it is sequential (any edge-triggered event anywhere below ``top``), its clocks and
its resets; or raises ``HarnessError`` (no such module, a port type the test bench cannot
drive: for the reference grader, the reference is the harness; for an answer, the flow
reads it as an interface error). ``port_differences`` lists how an answer's ports differ
from the reference's.

How clocks and resets are found (from the reference; the answer must only match its ports):

- every ``posedge``/``negedge`` event below ``top`` is traced back to a top-level input,
  through port connections of submodules (``.clk(clk)``); an input in an event is a
  **reset** when its name is a reset's (``rst``, ``reset``, ``rst_n``, ``arst``, ``nreset``,
  ``i_rst_ni``...) or the block tests it first (``if (!x)``), and is then **asynchronous**;
  any other is a **clock**. A sequential design whose events reach no input falls back on
  clock names (``clk``, ``clock``, ``*_clk``, ``clk_*``, not ``clk_en``-like enables);
- a reset-named input in no event is a **synchronous** reset;
- polarity: from the event's edge (``negedge`` = active low), else from a name marked low
  (``_n``, ``n``, ``_b``, ``_l`` suffixes, an ``n`` prefix), else from how the design's
  ``if`` statements test it (``if (!reset)``, ``reset == 1'b0``: the reset template puts
  the reset's action first), else active high.

Only the top-level port list and the events matter: a reset that the design does not use
is still driven as a reset (asserted during reset phases, rarely otherwise).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pyslang
from pyslang import ast, syntax

from cvdp_gym.equivalence.state import StateRegister, edge_events, state_registers
from cvdp_gym.errors import HarnessError

#: The widest port the test bench drives or compares.
MAX_PORT_WIDTH = 4096
_RESET_NAME = re.compile(
    r"^(?:(?:i|in|sys|soft|hard|async|sync|global|g|por|master|m|a|s)_)?(?P<pre>n_?)?(?:a|s)?(?:rst|reset)"
    r"(?P<post>_?n|_?b|_l|_ni|_bi)?(?:_i|_in)?$"
)
_CLOCK_NAME = re.compile(r"^(?:[a-z0-9]+_)*(?:clk|clock)\d*(?:_[a-z0-9]+)*$")
_NOT_A_CLOCK = re.compile(r"(?:^|_)(?:en|ena|enable|sel|select|gate|gated|div|cnt|count|out|valid|ok|stable)$")
_DIRECTIONS = {"In": "input", "Out": "output", "InOut": "inout", "Ref": "ref"}
_PRIMARY_CLOCKS = ("clk", "clock", "i_clk", "clk_i")
_EDGES = {ast.EdgeKind.PosEdge: {"posedge"}, ast.EdgeKind.NegEdge: {"negedge"}}


@dataclass(frozen=True)
class Port:
    name: str
    direction: str  # "input" | "output"
    width: int


@dataclass(frozen=True)
class Reset:
    name: str
    active_low: bool
    asynchronous: bool

    @property
    def asserted(self) -> int:
        """The level that asserts it."""
        return 0 if self.active_low else 1


@dataclass
class Design:
    """What the grader needs to know about one design's top module."""

    top: str
    ports: tuple[Port, ...]
    modules: tuple[str, ...]
    sequential: bool = False
    #: Clock inputs, the primary (``clk``/``clock`` if present, else the first) first.
    clocks: tuple[str, ...] = ()
    #: The edges each clock is used on ("posedge", "negedge").
    clock_edges: dict[str, frozenset[str]] = field(default_factory=dict)
    resets: tuple[Reset, ...] = ()
    #: pyslang's errors (Icarus decides whether the design compiles; these are for the record).
    errors: tuple[str, ...] = ()
    #: The registers the simulation's coverage is measured on (:mod:`.state`); None: too many
    #: bits, or a design slang's walk could not list (no measure: the formal stage must decide).
    state: tuple[StateRegister, ...] | None = ()

    @property
    def inputs(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.direction == "input")

    @property
    def outputs(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.direction == "output")

    @property
    def driven(self) -> tuple[Port, ...]:
        """Inputs the stimulus drives (every input but the clocks)."""
        return tuple(p for p in self.inputs if p.name not in self.clocks)

    def port(self, name: str) -> Port:
        return next(p for p in self.ports if p.name == name)


def read_design(source: str, top: str, path: str = "design.sv") -> Design:
    """Elaborate ``top`` from ``source`` and describe it (``HarnessError`` when it cannot be driven)."""
    options = ast.CompilationOptions()
    options.topModules = {top}
    compilation = ast.Compilation(pyslang.Bag([options]))
    tree = syntax.SyntaxTree.fromText(source, path)
    compilation.addSyntaxTree(tree)
    modules = tuple(sorted(d.name for d in compilation.getDefinitions() if str(d.definitionKind).endswith("Module")))
    instance = next((i for i in compilation.getRoot().topInstances if i.name == top), None)
    if instance is None or top not in modules:
        raise HarnessError(f"module {top!r} not found (modules declared: {', '.join(modules) or 'none'})")
    ports = tuple(_port(p) for p in instance.body.portList)
    errors = tuple(
        str(d.code) for d in compilation.getAllDiagnostics() if d.isError() and "MissingTimeScale" not in str(d.code)
    )
    design = Design(top, ports, modules, errors=errors)
    _find_clocks_and_resets(instance, design)
    try:
        design.state = state_registers(instance, {p.name for p in design.outputs})
    except Exception:  # slang's walk of a construct it models oddly: no coverage measure, never a crash
        design.state = None
    return design


def port_differences(reference: Design, answer: Design) -> list[str]:
    """How ``answer``'s top-level ports differ from ``reference``'s (empty: they match)."""
    theirs = {p.name: p for p in answer.ports}
    problems = []
    for port in reference.ports:
        other = theirs.get(port.name)
        if other is None:
            problems.append(f"missing port {port.direction} [{port.width}] {port.name}")
        elif other.direction != port.direction:
            problems.append(f"port {port.name} is an {other.direction}, expected an {port.direction}")
        elif other.width != port.width:
            problems.append(f"port {port.name} is {other.width} bit(s) wide, expected {port.width}")
    expected = {p.name for p in reference.ports}
    problems += [f"unexpected port {p.name}" for p in answer.ports if p.name not in expected]
    return problems


def is_reset_name(name: str) -> bool:
    return _RESET_NAME.match(name.lower()) is not None


def reset_name_active_low(name: str) -> bool:
    match = _RESET_NAME.match(name.lower())
    return bool(match and (match.group("pre") or match.group("post")))


def is_clock_name(name: str) -> bool:
    lowered = name.lower()
    return _CLOCK_NAME.match(lowered) is not None and not _NOT_A_CLOCK.search(lowered) and not is_reset_name(lowered)


def _port(port) -> Port:
    """A top-level port, or ``HarnessError`` for one the test bench cannot drive or compare."""
    direction = _DIRECTIONS.get(str(getattr(port, "direction", "")).split(".")[-1], "?")
    if str(port.kind) != "SymbolKind.Port":
        raise HarnessError(f"port {port.name!r} is an interface or multi-port; only plain ports are supported")
    if direction not in ("input", "output"):
        raise HarnessError(f"port {port.name!r} is {direction}; only inputs and outputs are supported")
    port_type = port.type
    if not port_type.isIntegral:
        raise HarnessError(f"port {port.name!r} has type {port_type}, which is not a packed (integral) type")
    width = int(port_type.bitWidth)
    if not 0 < width <= MAX_PORT_WIDTH:
        raise HarnessError(f"port {port.name!r} is {width} bits wide (at most {MAX_PORT_WIDTH} are supported)")
    return Port(port.name, direction, width)


@dataclass
class _Findings:
    """Events and reset tests seen below the top, traced to top-level inputs."""

    any_edge: bool = False
    edges: dict[str, set[str]] = field(default_factory=dict)  # input -> {"posedge", "negedge"}
    tested_first: set[str] = field(default_factory=set)  # inputs tested first in a multi-event block
    polarity_votes: dict[str, list[bool]] = field(default_factory=dict)  # input -> [active_low, ...]


def _find_clocks_and_resets(instance, design: Design) -> None:
    inputs = {p.name for p in design.inputs}
    found = _Findings()
    _walk(instance, {name: name for name in inputs}, found, 0)
    design.sequential = found.any_edge
    resets: dict[str, Reset] = {}
    clocks: list[str] = []
    for name in (p.name for p in design.inputs):  # port order
        edges = found.edges.get(name)
        votes = found.polarity_votes.get(name, [])
        if edges and (is_reset_name(name) or name in found.tested_first):
            low = "negedge" in edges if len(edges) == 1 else _vote(votes, name)
            resets[name] = Reset(name, low, asynchronous=True)
        elif edges:
            clocks.append(name)
            design.clock_edges[name] = frozenset(edges)
        elif is_reset_name(name) and design.inputs and design.port(name).width == 1:
            resets[name] = Reset(name, _vote(votes, name), asynchronous=False)
    if found.any_edge and not clocks:
        clocks = [p.name for p in design.inputs if p.width == 1 and is_clock_name(p.name) and p.name not in resets]
        design.clock_edges.update({name: frozenset({"posedge"}) for name in clocks})
    primary = next((c for c in clocks if c.lower() in _PRIMARY_CLOCKS), clocks[0] if clocks else None)
    design.clocks = tuple([primary] + [c for c in clocks if c != primary]) if primary else ()
    design.resets = tuple(resets[name] for name in resets if name not in design.clocks) if design.sequential else ()


def _vote(votes: list[bool], name: str) -> bool:
    """Active low? A name marked low (``rst_n``), else how the design tests it, else high."""
    if reset_name_active_low(name):
        return True
    return bool(votes) and votes.count(True) > votes.count(False)


def _walk(instance, alias: dict[str, str], found: _Findings, depth: int) -> None:
    """Record the events and reset tests of ``instance``'s body; ``alias``: its names that
    are top-level inputs (by the top's name)."""

    def visit(node):
        kind = node.kind
        if kind == ast.SymbolKind.Instance and node is not instance:
            if depth < 32:
                _walk(node, _child_alias(node, alias), found, depth + 1)
            return ast.VisitAction.Skip
        if kind == ast.SymbolKind.ProceduralBlock:
            _procedure(node, alias, found)
        elif kind == ast.StatementKind.Conditional:  # `if (!rst_n) <reset>`: ternaries put resets either side
            for condition in node.conditions:
                _polarity(condition.expr, alias, found)
        return ast.VisitAction.Advance

    instance.body.visit(visit)


def _child_alias(child, alias: dict[str, str]) -> dict[str, str]:
    """The submodule's port names that carry a top-level input, through its connections."""
    mapped = {}
    for port in getattr(child.body, "portList", ()):
        try:
            connection = child.getPortConnection(port)
        except Exception:  # pyslang raises on ports it could not connect
            continue
        name = _named(connection.expression) if connection is not None and connection.expression else None
        if name in alias:
            mapped[port.name] = alias[name]
    return mapped


def _named(expr) -> str | None:
    """The name an expression reads when it is a plain (possibly converted) name."""
    while expr is not None and expr.kind == ast.ExpressionKind.Conversion:
        expr = expr.operand
    if expr is not None and expr.kind == ast.ExpressionKind.NamedValue:
        return expr.symbol.name
    return None


def _procedure(block, alias: dict[str, str], found: _Findings) -> None:
    edged = []
    for event in edge_events(block):
        found.any_edge = True
        name = alias.get(_named(event.expr) or "")
        if name is None:
            continue
        edges = _EDGES.get(event.edge, {"posedge", "negedge"})
        found.edges.setdefault(name, set()).update(edges)
        edged.append(name)
    if len(edged) > 1:
        first = _first_condition(block.body.stmt)
        if first is not None:
            found.tested_first.update(n for n in _names_in(first, alias) if n in edged)


def _first_condition(stmt):
    """The condition of the first ``if`` of a block (the asynchronous reset test of a flop)."""
    for _ in range(8):
        if stmt.kind == ast.StatementKind.Block:
            stmt = stmt.body
        elif stmt.kind == ast.StatementKind.List and len(stmt.list):
            stmt = stmt.list[0]
        elif stmt.kind == ast.StatementKind.Conditional:
            return stmt.conditions[0].expr
        else:
            return None
    return None


def _names_in(expr, alias: dict[str, str]) -> set[str]:
    names: set[str] = set()

    def visit(node):
        if node.kind == ast.ExpressionKind.NamedValue and node.symbol.name in alias:
            names.add(alias[node.symbol.name])
        return ast.VisitAction.Advance

    expr.visit(visit)
    return names


def _polarity(expr, alias: dict[str, str], found: _Findings) -> None:
    """A vote on a top-level input's polarity from a test of it: ``x`` high, ``!x``/``~x`` low,
    ``x == 0`` low, ``x == 1`` high (and the negations)."""
    low = False
    while expr.kind in (ast.ExpressionKind.UnaryOp, ast.ExpressionKind.Conversion):
        if expr.kind == ast.ExpressionKind.UnaryOp:
            if expr.op not in (ast.UnaryOperator.LogicalNot, ast.UnaryOperator.BitwiseNot):
                return
            low = not low
        expr = expr.operand
    if expr.kind == ast.ExpressionKind.BinaryOp and expr.op in _COMPARISONS:
        name, literal = _named(expr.left), expr.right
        if name is None:
            name, literal = _named(expr.right), expr.left
        value = _literal(literal)
        if name is None or value not in (0, 1):
            return
        low ^= (value == 0) ^ (expr.op in _NEGATED)
    else:
        name = _named(expr)
    if name in alias and is_reset_name(alias[name]):
        found.polarity_votes.setdefault(alias[name], []).append(low)


_COMPARISONS = (
    ast.BinaryOperator.Equality, ast.BinaryOperator.Inequality,
    ast.BinaryOperator.CaseEquality, ast.BinaryOperator.CaseInequality,
)
_NEGATED = (ast.BinaryOperator.Inequality, ast.BinaryOperator.CaseInequality)


def _literal(expr) -> int | None:
    """The value of an integer literal (``0``, ``1'b0``, ``'1``), or None."""
    while expr.kind == ast.ExpressionKind.Conversion:
        expr = expr.operand
    if expr.kind not in (ast.ExpressionKind.IntegerLiteral, ast.ExpressionKind.UnbasedUnsizedIntegerLiteral):
        return None
    text = str(expr.value).replace("_", "")
    match = _SIZED.fullmatch(text)
    try:
        return int(match.group(2), _BASES[match.group(1).lower()]) if match else int(text)
    except ValueError:  # x or z digits
        return None


_SIZED = re.compile(r"\d*'s?([bodhBODH])([0-9a-fA-FxXzZ?]+)")
_BASES = {"b": 2, "o": 8, "d": 10, "h": 16}
