"""A full SystemVerilog front end (slang, via pyslang) for second opinions and interfaces.

Icarus 11 rejects some code that the official image's Icarus 13 accepts; when Icarus fails
and slang parses and elaborates the same sources cleanly, the failure is a toolchain gap.
The same parse gives module names and ports for the interface check. It runs in-process on
source text only (include directives are not followed to the host's files).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyslang import ast, syntax


@dataclass
class ModuleInterface:
    name: str
    ports: dict[str, str]  # name -> "in" | "out" | "inout" | "ref"
    parameters: set[str] = field(default_factory=set)
    members: set[str] = field(default_factory=set)  # every named member (nets, variables, ...)


@dataclass
class ParseResult:
    errors: list[str]
    modules: dict[str, ModuleInterface]

    @property
    def ok(self) -> bool:
        return not self.errors


#: Simulators get the timescale from the command line (cocotb passes one), so a file without
#: a `timescale is not an error for them.
_IGNORED = {"DiagCode(MissingTimeScale)"}
_DIRECTIONS = {"In": "in", "Out": "out", "InOut": "inout", "Ref": "ref"}


def parse_sources(sources: dict[str, str]) -> ParseResult:
    """Parse and elaborate ``{path: text}``; errors as ``path:line: message`` strings."""
    compilation = ast.Compilation()
    for path, text in sources.items():
        compilation.addSyntaxTree(syntax.SyntaxTree.fromText(text, path))
    modules: dict[str, ModuleInterface] = {}
    root = compilation.getRoot()
    for definition in compilation.getDefinitions():
        if str(definition.definitionKind) != "DefinitionKind.Module":
            continue
        modules[definition.name] = ModuleInterface(definition.name, {})
    for instance in root.topInstances:
        _describe(instance, modules)
    errors = []
    engine = compilation.sourceManager
    for diag in compilation.getAllDiagnostics():
        if diag.isError() and str(diag.code) not in _IGNORED:
            try:
                loc = f"{engine.getFileName(diag.location)}:{engine.getLineNumber(diag.location)}: "
            except Exception:  # a diagnostic without a location
                loc = ""
            errors.append(f"{loc}{diag.code}")
    return ParseResult(errors, modules)


def _describe(instance, modules: dict[str, ModuleInterface], depth: int = 0) -> None:
    body = instance.body
    info = modules.setdefault(body.name, ModuleInterface(body.name, {}))
    if info.ports or info.members:
        return  # described through another instance already
    for port in body.portList:
        direction = str(getattr(port, "direction", "")).split(".")[-1]
        info.ports[port.name] = _DIRECTIONS.get(direction, direction.lower())
    for member in body:
        name = getattr(member, "name", "")
        if not name:
            continue
        kind = str(member.kind)
        if "Parameter" in kind:
            info.parameters.add(name)
        info.members.add(name)
        if kind == "SymbolKind.Instance" and depth < 32 and hasattr(member, "body"):
            _describe(member, modules, depth + 1)  # modules only instantiated by others
