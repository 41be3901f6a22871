"""The layering rule, checked on every run: scripts/import_graph.py finds no cycle and no
import from a lower layer to a higher one in cvdp_gym or rtl_trainer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "import_graph.py"


def load_script():
    spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_cycle_and_no_upward_import(capsys):
    assert load_script().main([]) == 0, capsys.readouterr().out


def test_the_check_catches_a_cycle_and_an_upward_import(tmp_path):
    """The checker itself works: a made-up tree with both faults fails, naming them."""
    graph = load_script()
    for package, files in {
        "cvdp_gym": {
            "__init__.py": "",
            "sandbox/__init__.py": "",
            "sandbox/a.py": "from cvdp_gym.harness import b\n",
            "harness/__init__.py": "",
            "harness/b.py": "def f():\n    from cvdp_gym.harness import c\n",
            "harness/c.py": "from cvdp_gym.harness import b\n",
        },
        "rtl_trainer": {"__init__.py": ""},
    }.items():
        for rel, text in files.items():
            path = tmp_path / package / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    modules = graph.find_modules(tmp_path)
    edges = {name: graph.imports_of(name, path, modules) for name, path in modules.items()}
    assert graph.cycles(edges) == [["cvdp_gym.harness.b", "cvdp_gym.harness.c"]]
    assert graph.layer_of("cvdp_gym.sandbox.a") < graph.layer_of("cvdp_gym.harness.b")
    assert graph.main(["--root", str(tmp_path)]) == 1


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


PLUGIN_TREE = {
    "cvdp_gym/__init__.py": "",
    "cvdp_gym/plugins.py": 'BUILT_IN: tuple[str, ...] = ("cvdp_gym.benchmarks.bench",)\nclass PluginTable: ...\n',
    "cvdp_gym/parsers/__init__.py": "",
    "cvdp_gym/parsers/answer_kit.py": "def helper(): ...\n",
    "cvdp_gym/parsers/table.py": (
        "from cvdp_gym.plugins import PluginTable\n"
        'TABLE: PluginTable = PluginTable("answers", "EXTRACTORS", shared=("cvdp_gym.harness",))\n'
    ),
    "cvdp_gym/harness/__init__.py": "",
    "cvdp_gym/harness/answers.py": "",
    "cvdp_gym/benchmarks/__init__.py": "",
    "cvdp_gym/benchmarks/bench/__init__.py": "",
    "cvdp_gym/benchmarks/bench/answers.py": "from cvdp_gym.parsers.answer_kit import helper\n",
    "rtl_trainer/__init__.py": "",
}


def test_a_plugin_load_is_an_edge_for_cycles_not_for_layers(tmp_path, capsys):
    """A PluginTable loads every built-in and shared package's part by name: that load is not an
    upward import (a lower layer reaching a higher plug-in), but a plug-in that imports the
    module whose table loads it closes a cycle, which the check names."""
    graph = load_script()
    write_tree(tmp_path, PLUGIN_TREE)
    modules = graph.find_modules(tmp_path)
    assert graph.built_in_plugins(tmp_path) == ("cvdp_gym.benchmarks.bench",)
    assert graph.plugin_loads(modules["cvdp_gym.parsers.table"], ("cvdp_gym.benchmarks.bench",), modules) == {
        "cvdp_gym.benchmarks.bench.answers", "cvdp_gym.harness.answers",
    }
    assert graph.main(["--root", str(tmp_path)]) == 0  # the plug-in imports a kit, not the table
    assert "2 plug-in loads" in capsys.readouterr().out

    write_tree(tmp_path, {"cvdp_gym/benchmarks/bench/answers.py": "from cvdp_gym.parsers.table import TABLE\n"})
    assert graph.main(["--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "cycle: cvdp_gym.benchmarks.bench.answers <-> cvdp_gym.parsers.table" in out
    assert "0 upward import(s), 1 cycle(s)" in out
