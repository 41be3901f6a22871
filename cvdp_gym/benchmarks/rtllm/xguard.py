"""Outputs that never carry a 0 or a 1: the X trick a test bench's ``!=`` cannot see.

A test bench that checks ``if (out != expected) errors = errors + 1;`` counts nothing when
``out`` is X: the comparison is X, and ``if`` takes X as false. RTLLM v2.0's test benches
check this way: an answer that drives every output X (``assign out = 'x;``) passed 4 of its
50 designs (``comparator_3bit``, ``comparator_4bit``, ``sequence_detector``,
``square_wave``), under the benchmark's own rule and, before this guard, under the verdict
here. VerilogEval's test benches compare with ``===`` against the reference and are not fooled.

The guard is one more root module compiled beside the answer (a random name, like the test
bench's in an isolated run: :mod:`cvdp_gym.harness.isolation`), which watches the answer's
instance by its hierarchical names and, at the end of the simulation, prints a line of its
own for each output that had no known bit (every bit X or Z) at any moment when every input
was known (0 or 1): an output is allowed to be X while its inputs are (three RTLLM v2.0 test
benches drive X into their designs: ``$random % (1 << 32)``), and before it first settles,
never throughout. Its lines carry a marker of their own and are taken out of the log before
either reading: the benchmark's ``official`` reading never sees them. A flow fails an answer
the guard names (``test_failure``). Honest designs drive their outputs: no reference of
RTLLM v2.0 or v1.1 is flagged (``cvdp-gym check``).

Contract: ``plan(testbench, answer, top)`` finds the test bench's module that instantiates
``top`` and the instance's name (pyslang), and the answer's outputs; None where any of it
cannot be found (then no guard runs: the verdict is the test bench's alone).
``Guard.source(module, scope, instance)`` is the guard's text for the run's names;
``split(text, marker)`` takes the guard's lines out of a log and names the outputs it flagged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from pyslang import syntax

from cvdp_gym.errors import HarnessError
from cvdp_gym.harness.equivalence.ports import read_design

__all__ = ["Guard", "plan", "split"]

SK = syntax.SyntaxKind


@dataclass(frozen=True)
class Guard:
    """Where the answer's instance is (``scope``: the test bench's module, ``instance``), its
    inputs and its outputs (name, width)."""

    scope: str
    instance: str
    inputs: tuple[tuple[str, int], ...]
    outputs: tuple[tuple[str, int], ...]

    def source(self, module: str, scope: str, instance: str, marker: str) -> str:
        """The guard's module ``module``, watching ``scope.instance`` (the run's names)."""
        path = f"{scope}.{instance}"
        known_inputs = " && ".join(f"((^{path}.{name}) !== 1'bx)" for name, _ in self.inputs) or "1'b1"
        watched = " or ".join(f"{path}.{name}" for name, _ in (*self.inputs, *self.outputs))
        # ``v ^ v`` is 0 in each known bit and X in each X or Z bit: one vector compare, no loop.
        # Once every output has been seen known, the block only tests ``done``.
        lines = [f"module {module};", "  reg driven = 1'b0;", "  reg done = 1'b0;"]
        lines += [f"  reg seen{index} = 1'b0;" for index in range(len(self.outputs))]
        checks = [
            f"      if (!seen{index} && (({path}.{name} ^ {path}.{name}) !== {{{width}{{1'bx}}}})) seen{index} = 1'b1;"
            for index, (name, width) in enumerate(self.outputs)
        ]
        every = " && ".join(f"seen{index}" for index in range(len(self.outputs)))
        lines += [
            f"  always @({watched}) if (!done && {known_inputs}) begin", "      driven = 1'b1;", *checks,
            f"      done = {every};", "  end",
        ]
        lines += [
            f'  final if (driven && !seen{index}) $display("{marker}{name}");'
            for index, (name, _) in enumerate(self.outputs)
        ]
        return "\n".join([*lines, "endmodule", ""])


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


def plan(testbench: str, answer: str, top: str) -> Guard | None:
    """The guard for ``answer`` (whose top module is ``top``) under ``testbench``, or None."""
    where = _instance(testbench, top)
    if where is None:
        return None
    try:
        design = read_design(answer, top)
    except HarnessError:
        return None
    inputs = tuple((port.name, port.width) for port in design.ports if port.direction == "input")
    outputs = tuple((port.name, port.width) for port in design.ports if port.direction == "output")
    return Guard(where[0], where[1], inputs, outputs) if outputs and not design.errors else None


def split(text: str, marker: str) -> tuple[str, list[str]]:
    """``text`` without the guard's lines, and the outputs they name."""
    kept, flagged = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith(marker):
            flagged.append(line[len(marker):].strip())
        else:
            kept.append(line)
    return "".join(kept), flagged
