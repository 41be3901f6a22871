"""Print the import graph of cvdp_gym and rtl_trainer, and fail on a cycle or an upward import.

Every ``import`` statement counts, wherever it sits (module level, inside a function, under
``TYPE_CHECKING``): an import placed inside a function to dodge a cycle is still a cycle in
the design. So does a plug-in load: a module-level ``PluginTable(part, ..., shared=...)``
(:mod:`cvdp_gym.plugins`) imports, by name, ``<pkg>.<part>`` of every built-in benchmark
package (``plugins.BUILT_IN``, read from the checkout's source, not imported) and every
``shared`` package; each such part that exists is an edge from the module holding the table,
counted for cycles (a plug-in that imports the module loading it is a cycle) but not for
the layering rule (a load by name is how a lower layer reaches a higher plug-in).
Layers, lowest first (a module may import its own layer and the ones below):

- cvdp_gym: the shared leaves (``errors``, ``jsonl``, ``interrupt``, ``seeds``, ``plugins``,
  ``data``, ``parsers``), then toolchain < sandbox < harness < execution < grading < envs <
  eval / integrations / service / check < benchmarks < cli (``execution`` runs jobs and keeps
  their results: executors, Ray, worker processes, the cache; ``grading`` decides what a run
  means and sends its runs there; ``benchmarks`` holds the built-in plug-ins, each one
  benchmark's parts for every layer, which the layers load by name through ``plugins``, never
  by an import); the package root (``cvdp_gym/__init__.py``) registers the environments by
  name and sits above them all.
- rtl_trainer, above every cvdp_gym layer (never imported by it): errors / config <
  models / rendering < backends < losses < rollouts < loop / tracking / plot < demo /
  export < cli (the loop reports to its trackers, which attach the run's plot).

  python scripts/import_graph.py            # summary; exit 1 on a cycle or a violation
  python scripts/import_graph.py --edges    # also every package-to-package edge
  python scripts/import_graph.py --root DIR # another checkout
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGES = ("cvdp_gym", "rtl_trainer")
#: cvdp_gym's layers, lowest first; names are first-level subpackages or modules.
CVDP_GYM_LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "jsonl", "interrupt", "_version", "chat", "user_dirs", "seeds", "plugins"),
    ("data", "parsers"),
    ("gate",),
    ("toolchain",),
    ("sandbox",),
    ("harness", "quality"),
    ("equivalence",),
    ("tasks",),
    ("execution",),
    ("grading",),
    ("envs",),
    ("agents",),
    ("eval", "integrations", "service", "check", "coverage", "decontaminate", "parity", "report", "debug", "audit"),
    ("benchmarks",),
    ("cli",),
)
#: rtl_trainer's layers, lowest first, all above cvdp_gym's.
RTL_TRAINER_LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "teacher_rules", "config"),
    ("models", "rendering"),
    ("backends",),
    ("losses",),
    ("rollouts",),
    ("loop", "tracking", "plot"),
    ("demo", "export"),
    ("cli",),
)
#: Folders that hold data (bundled problems' own harness files), not the package's code.
SKIP_PARTS = ("bundled",)


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules(root: Path) -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if any(part in SKIP_PARTS for part in path.relative_to(root).parts):
                continue
            modules[module_name(root, path)] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports (a ``from pkg import sub`` of a submodule counts
    as importing the submodule)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def built_in_plugins(root: Path) -> tuple[str, ...]:
    """``BUILT_IN`` of ``root``'s ``cvdp_gym/plugins.py``, read from its source: ``--root`` may be
    another checkout, whose list is not the one this interpreter would import."""
    path = root / "cvdp_gym" / "plugins.py"
    if not path.is_file():
        return ()
    for node in ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "BUILT_IN" for t in targets) and node.value is not None:
            return strings(node.value)
    return ()


def strings(node: ast.expr) -> tuple[str, ...]:
    """The string literals of a tuple or list literal (others skipped)."""
    if not isinstance(node, ast.Tuple | ast.List):
        return ()
    return tuple(e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))


def plugin_loads(path: Path, plugins: tuple[str, ...], modules: dict[str, Path]) -> set[str]:
    """The plug-in parts that the tables (``PluginTable``) built at ``path``'s module level load by name:
    ``<pkg>.<part>`` for each of ``plugins`` and the table's ``shared`` packages, where it exists."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(statement):
            if not (isinstance(node, ast.Call) and _called_name(node.func) == "PluginTable"):
                continue
            part_node = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "part"), None)
            if not (isinstance(part_node, ast.Constant) and isinstance(part_node.value, str)):
                continue
            shared = next((strings(k.value) for k in node.keywords if k.arg == "shared"), ())
            found |= {f"{package}.{part_node.value}" for package in (*shared, *plugins)} & modules.keys()
    return found


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def layer_of(module: str) -> int:
    """The layer index of a module (higher = may import more)."""
    parts = module.split(".")
    layers, offset = CVDP_GYM_LAYERS, 0
    if parts[0] == "rtl_trainer":
        layers, offset = RTL_TRAINER_LAYERS, len(CVDP_GYM_LAYERS) + 1
    if len(parts) == 1:  # a package root: above its own layers
        return offset + len(layers)
    for index, names in enumerate(layers):
        if parts[1] in names:
            return offset + index
    raise SystemExit(f"{module}: not in any layer; add its first-level name to CVDP_GYM_LAYERS")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def group(module: str) -> str:
    """``cvdp_gym.grading.grader`` → ``cvdp_gym.grading`` (for the package-level summary)."""
    return ".".join(module.split(".")[:2])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--edges", action="store_true", help="print every package-to-package edge")
    args = parser.parse_args(argv)

    modules = find_modules(args.root)
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    plugins = built_in_plugins(args.root)
    loads = {name: plugin_loads(path, plugins, modules) - {name} for name, path in modules.items()}
    violations = [
        (source, target)
        for source, targets in sorted(graph.items())
        for target in sorted(targets)
        if layer_of(target) > layer_of(source)
    ]
    loops = cycles({name: graph[name] | loads[name] for name in graph})

    package_edges: dict[str, set[str]] = defaultdict(set)
    for source, targets in graph.items():
        for target in targets:
            if group(source) != group(target):
                package_edges[group(source)].add(group(target))
    print(f"{len(modules)} modules, {sum(map(len, graph.values()))} imports, "
          f"{sum(map(len, package_edges.values()))} package-to-package edges")
    print(f"{sum(map(len, loads.values()))} plug-in loads (PluginTable parts, counted for cycles)")
    if args.edges:
        for source in sorted(package_edges, key=lambda g: (layer_of(g), g)):
            print(f"  {source} (layer {layer_of(source)}) -> {', '.join(sorted(package_edges[source]))}")
        for source in sorted(name for name in loads if loads[name]):
            print(f"  {source} loads {', '.join(sorted(loads[source]))}")
    for source, target in violations:
        print(f"upward import: {source} (layer {layer_of(source)}) imports {target} (layer {layer_of(target)})")
    for loop in loops:
        print(f"cycle: {' <-> '.join(loop)}")
    if violations or loops:
        print(f"FAILED: {len(violations)} upward import(s), {len(loops)} cycle(s)")
        return 1
    print("ok: no cycle, no upward import")
    return 0


if __name__ == "__main__":
    sys.exit(main())
