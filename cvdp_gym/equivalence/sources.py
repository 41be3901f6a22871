"""The files of one run: the reference's modules renamed apart, and names the answer cannot guess.

Contract: ``rename_modules(source, renames)`` returns ``source`` with every module declaration
and instantiation named in ``renames`` renamed, found with pyslang's syntax tree (a wire or
port that shares a module's name keeps its name); ``HarnessError`` if a name comes from a
macro expansion (nothing to rewrite). ``RunNames`` draws the per-run names: the reference's
module prefix, the test bench's module and instance names (``%m`` can reveal these to the
answer, so they must lead nowhere; being random, the answer cannot instantiate the
reference or reach into the test bench by name) and, from an independent draw, the names
of the stimulus files and the formal stage's folder (nothing the answer can print reveals
those, so it cannot open them: it cannot rewrite the stimulus while the test bench reads it).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyslang import syntax

from cvdp_gym.errors import HarnessError

#: Put before each design file: what one file sets (`default_nettype, `timescale) must not
#: leak into the next, and a file without `timescale gets the test bench's.
PRELUDE = "`resetall\n`timescale 1ns/1ps\n"


@dataclass(frozen=True)
class RunNames:
    """Names drawn fresh for one run."""

    module_tag: str = field(default_factory=lambda: secrets.token_hex(6))
    file_tag: str = field(default_factory=lambda: secrets.token_hex(8))

    @property
    def ref_prefix(self) -> str:
        return f"cvdp_ref_{self.module_tag}_"

    @property
    def tb_module(self) -> str:
        return f"cvdp_tb_{self.module_tag}"

    @property
    def ref_instance(self) -> str:
        return f"cvdp_ref_{self.module_tag}"

    @property
    def dut_instance(self) -> str:
        return f"cvdp_dut_{self.module_tag}"

    @property
    def ref_file(self) -> str:
        return f"ref_{self.file_tag}.sv"

    @property
    def tb_file(self) -> str:
        return f"tb_{self.file_tag}.sv"

    @property
    def stimulus_file(self) -> str:
        return f"stim_{self.file_tag}.hex"

    @property
    def key_file(self) -> str:
        return f"key_{self.file_tag}.hex"

    @property
    def formal_dir(self) -> str:
        return f"formal_{self.file_tag}"

    def prelude_file(self, index: int) -> str:
        return f"prelude{index}_{self.file_tag}.v"


def rename_modules(source: str, renames: Mapping[str, str], path: str = "reference.sv") -> str:
    """``source`` with the modules in ``renames`` renamed where declared and instantiated."""
    data = source.encode()
    tree = syntax.SyntaxTree.fromText(source, path)
    spans: list[tuple[int, int, str]] = []

    def visit(node) -> bool:
        token = None
        if node.kind in (syntax.SyntaxKind.ModuleDeclaration, syntax.SyntaxKind.InterfaceDeclaration):
            token = node.header.name
        elif node.kind == syntax.SyntaxKind.HierarchyInstantiation:
            token = node.type
        if token is not None and token.valueText in renames:
            start = token.location.offset
            end = start + len(token.valueText.encode())
            if data[start:end].decode(errors="replace") != token.valueText:
                raise HarnessError(f"module name {token.valueText!r} comes from a macro; it cannot be renamed")
            spans.append((start, end, renames[token.valueText]))
        return True

    tree.root.visit(visit)
    for start, end, new in sorted(spans, reverse=True):
        data = data[:start] + new.encode() + data[end:]
    return data.decode()
