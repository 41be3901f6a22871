"""The reference's state, found with pyslang: what the simulation's coverage is measured on.

Contract: ``state_registers(instance, outputs)`` lists the variables below the elaborated
top ``instance`` that an edge-triggered procedural block (``always @(posedge ...)``,
``always_ff``) assigns, each as a ``StateRegister`` (its hierarchical path below the top,
its width), in declaration-visit order, at most ``MAX_STATE_BITS`` bits in all (``None``
when there is more: the measure is then not taken). ``edge_events(block)`` is the edge
events of a procedural block (``ports`` reads clocks and resets from the same events).

Why these: the simulation can only vouch for the state it drove through. A register is
state when a clock edge writes it; its bits going both ways in normal operation (the
test bench's coverage, :mod:`.testbench`) says the stimulus reached its values, where a
counter that never wrapped leaves its top bit stuck. Left out, and said so in the docs:
memories (unpacked arrays: thousands of words no run of a few thousand cycles fills),
variables of functions, tasks and automatic blocks (no value between cycles), ``for``
loop variables (a constant after each block), top-level output ports (measured as
outputs), and names the test bench could not write as a plain hierarchical path (escaped
identifiers, variables of unnamed ``begin`` blocks). A register the test bench cannot reach
after all (a simulator that rejects the path) makes the flow fall back on a bench without
probes: the measure is then absent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyslang import ast, syntax

#: The most state bits probed (beyond it, the design's coverage is not measured).
MAX_STATE_BITS = 16_384
#: Widest register probed (the test bench's own limit on ports).
MAX_REGISTER_BITS = 4096
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(?:\[\d+\])*(?:\.[A-Za-z_][A-Za-z0-9_$]*(?:\[\d+\])*)*")
_SELECTS = (ast.ExpressionKind.ElementSelect, ast.ExpressionKind.RangeSelect, ast.ExpressionKind.MemberAccess)


@dataclass(frozen=True)
class StateRegister:
    """A register of the reference: its path below the top instance (``count``, ``u_fifo.wptr``) and width."""

    path: str
    width: int


def edge_events(block) -> list:
    """The ``posedge``/``negedge`` events a procedural block waits on (empty: not edge-triggered)."""
    body = block.body
    if body.kind != ast.StatementKind.Timed:
        return []
    timing = body.timing
    events = list(timing.events) if timing.kind == ast.TimingControlKind.EventList else [timing]
    return [e for e in events if e.kind == ast.TimingControlKind.SignalEvent and e.edge != ast.EdgeKind.None_]


def state_registers(instance, outputs: set[str]) -> tuple[StateRegister, ...] | None:
    """The registers below ``instance`` (see the module docstring); None when over ``MAX_STATE_BITS``."""
    assigned: dict[str, object] = {}
    loop_vars: set[str] = set()

    def in_clocked(node):
        if node.kind == ast.ExpressionKind.Assignment:
            for symbol in _roots(node.left):
                assigned.setdefault(symbol.hierarchicalPath, symbol)
        elif node.kind == ast.StatementKind.ForLoop:
            loop_vars.update(v.hierarchicalPath for v in node.loopVars)
            for init in node.initializers:
                if init.kind == ast.ExpressionKind.Assignment:
                    loop_vars.update(s.hierarchicalPath for s in _roots(init.left))
        return ast.VisitAction.Advance

    def visit(node):
        if node.kind == ast.SymbolKind.ProceduralBlock and edge_events(node):
            node.body.visit(in_clocked)
            return ast.VisitAction.Skip
        return ast.VisitAction.Advance

    instance.body.visit(visit)
    top = instance.hierarchicalPath + "."
    found: list[StateRegister] = []
    bits = 0
    for path, symbol in assigned.items():
        relative = path.removeprefix(top)
        if path in loop_vars or not path.startswith(top) or relative in outputs or not _PATH.fullmatch(relative):
            continue
        if symbol.kind != ast.SymbolKind.Variable or str(symbol.lifetime).endswith("Automatic") or _in_unnamed_block(symbol):
            continue
        kind = symbol.type
        if not kind.isIntegral or not 0 < int(kind.bitWidth) <= MAX_REGISTER_BITS:
            continue
        found.append(StateRegister(relative, int(kind.bitWidth)))
        bits += int(kind.bitWidth)
        if bits > MAX_STATE_BITS:
            return None
    return tuple(found)


def _in_unnamed_block(symbol) -> bool:
    """Declared in a ``begin``/``fork`` block with no name: no hierarchical name reaches it
    (slang gives it its module's path, which names nothing in a simulator)."""
    declaration = symbol.syntax.parent if symbol.syntax is not None else None
    block = declaration.parent if declaration is not None else None
    kinds = (syntax.SyntaxKind.SequentialBlockStatement, syntax.SyntaxKind.ParallelBlockStatement)
    return block is not None and block.kind in kinds and block.blockName is None


def _roots(expr) -> list:
    """The variables an assignment's left-hand side writes (through selects and concatenations)."""
    while expr.kind in _SELECTS or expr.kind == ast.ExpressionKind.Conversion:
        expr = expr.value if expr.kind in _SELECTS else expr.operand
    if expr.kind == ast.ExpressionKind.Concatenation:
        return [root for operand in expr.operands for root in _roots(operand)]
    if expr.kind == ast.ExpressionKind.NamedValue:
        return [expr.symbol]
    return []
