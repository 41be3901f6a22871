"""Benchmark plug-ins (:mod:`cvdp_gym.plugins`): a third party's benchmark, found through a Python
entry point, runs through the real commands like a built-in one; a broken or clashing plug-in is
a clear message.

The third-party package is written here, into a temporary folder with its own ``.dist-info``
(what ``pip install`` leaves), and is reached only through the entry point, never imported by
the test: a lab's private benchmark as it would ship, without forking cvdp-gym.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cvdp_gym.errors import ConfigError
from cvdp_gym.plugins import BUILT_IN, ENTRY_POINT_GROUP, PluginTable, packages

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
CLI = [sys.executable, "-m", "cvdp_gym.cli"]

ACME_DATA = '''
"""ACME's gate problems: one folder, ``<name>_{prompt.txt,ref.sv,test.sv}`` each, and an ``acme.toml``."""
from pathlib import Path

from cvdp_gym.data.benchmark import Benchmark, Pin
from cvdp_gym.data.problems import Problem


class AcmeGates(Benchmark):
    name = "acme-gates"
    title = "ACME gates"
    tasks = ()
    grader = "acme"
    toolchain = "icarus12"
    env_var = "ACME_GATES"
    pin = Pin("https://example.invalid/acme-gates", "0" * 40, "", "main")

    def holds(self, path):
        return (path / "acme.toml").is_file()

    def files(self, root):
        return sorted(root.glob("*_*"))

    def load(self, root, tasks, options):
        problems = []
        for prompt in sorted(root.glob("*_prompt.txt")):
            name = prompt.name.removesuffix("_prompt.txt")
            ref, test = (root / f"{name}_ref.sv").read_text(), (root / f"{name}_test.sv").read_text()
            target = f"{name}.sv"
            problems.append(Problem(
                id=f"acme-gates.{name}", categories=("gates",), agentic=False, prompt=prompt.read_text(),
                context={}, targets=(target,), harness={f"{name}_test.sv": test, f"{name}_ref.sv": ref},
                reference={target: ref.replace("RefModule", "TopModule")}, benchmark=self.name,
                grader=self.grader, toolchain=self.toolchain, extra={"name": name},
            ))
        return problems


BENCHMARKS = (AcmeGates(),)
'''
ACME_FLOW = '''
"""ACME grades as VerilogEval v2 does, under its own name."""
from cvdp_gym.benchmarks.verilog_eval_v2.flow import VerilogEvalV2Flow


class AcmeFlow(VerilogEvalV2Flow):
    name = "acme"


FLOWS = (AcmeFlow(),)
'''
ACME_REPORT = '''
"""ACME's own report arithmetic: the share of problems whose every sample passed."""
from cvdp_gym.eval.report_kit import cell


def build(section, everyone, clean, meta):
    solved = sum(all(r["passed"] for r in rows) for rows in everyone)
    value = 100 * solved / len(everyone)
    section["figures"] = [{"name": "acme solved", "k": 1, "cells": {"official": cell(value, len(everyone)), "ours": cell(value, len(everyone))}}]
    section["headline"] = [{"label": "acme solved", "value": value}]


REPORTS = {"acme-gates": build}
'''


ACME_PUBLISHED = {
    "settings": {"acme-own": "n=1 at temperature 0, ACME's own runs"},
    "sources": {"acme-wiki": {"title": "ACME gates results", "where": "the results table", "url": "https://example.invalid/acme"}},
    "entries": [
        {"benchmark": "acme-gates", "task": "", "model": "acme-coder-1b", "metric": "pass@1", "value": 42.0,
         "settings": "acme-own", "source": "acme-wiki"},
    ],
}


def _install(site: Path, package: str, parts: dict[str, str], *, entry: str = "acme") -> None:
    """``package`` with ``parts`` (module name -> source) and the ``.dist-info`` naming it in the group."""
    folder = site / package
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text('"""A benchmark plug-in made up for this test."""\n')
    for name, source in parts.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(source).lstrip())
    info = site / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{entry} = {package}\n")


@pytest.fixture
def on_path(tmp_path, monkeypatch):
    """A folder on ``sys.path`` for made-up installed packages; the plug-in list re-read around the test."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    packages.cache_clear()
    yield site
    packages.cache_clear()


@pytest.mark.sandbox
def test_a_third_party_benchmark_runs_through_eval_from_its_entry_point(toolchain, tmp_path):
    site = tmp_path / "site"
    _install(site, "acme_bench", {"data": ACME_DATA, "flow": ACME_FLOW, "report": ACME_REPORT})
    (site / "acme_bench" / "published.json").write_text(json.dumps(ACME_PUBLISHED))
    copy = tmp_path / "acme-copy"
    copy.mkdir()
    (copy / "acme.toml").write_text("")
    for suffix in ("prompt.txt", "ref.sv", "test.sv"):
        shutil.copy(FIXTURES / "verilog-eval" / "dataset_spec-to-rtl" / f"Prob001_and3_{suffix}", copy / f"and3_{suffix}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]), "COLUMNS": "250"}

    listed = subprocess.run([*CLI, "benchmarks", "list"], capture_output=True, text=True, timeout=120, env=env)
    assert listed.returncode == 0, listed.stderr
    assert "acme-gates" in listed.stdout and "verilog-eval-v2" in listed.stdout

    reference = (copy / "and3_ref.sv").read_text().replace("RefModule", "TopModule")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        json.dumps({"id": "acme-gates.and3", "response": f"```verilog\n{reference}```"}) + "\n"
        + json.dumps({"id": "acme-gates.and3", "sample": 1, "response": f"```verilog\n{reference.replace('a & b & c', 'a | b | c')}```"}) + "\n"
    )
    out = tmp_path / "run"
    done = subprocess.run(
        [*CLI, "eval", str(copy), "--responses", str(answers), "--out", str(out)],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = sorted(map(json.loads, (out / "results.jsonl").read_text().splitlines()), key=lambda r: r["sample"])
    assert [r["passed"] for r in rows] == [True, False]
    assert rows[0]["official"]["class"] == "." and rows[1]["official"]["class"] == "R"  # the flow's own reading
    section = json.loads((out / "report.json").read_text())["benchmark_reports"]["acme-gates"]
    assert section["figures"][0]["name"] == "acme solved" and section["figures"][0]["cells"]["official"]["value"] == 0.0
    assert [(e["model"], e["value"], e["source"]["title"]) for e in section["published"]] == [("acme-coder-1b", 42.0, "ACME gates results")]


def test_a_plugin_that_fails_to_import_is_skipped_with_a_warning(on_path):
    _install(on_path, "broken_bench", {"data": "raise RuntimeError('half-installed')\n"})
    assert packages() == (*BUILT_IN, "broken_bench")
    with pytest.warns(UserWarning, match=re.escape("broken_bench: cannot import broken_bench.data: half-installed")):
        table = PluginTable("data", "BENCHMARKS")
        names = list(table)
    assert {"verilog-eval-v2", "rtllm-v2", "chipbench"} <= set(names)


def test_a_plugin_claiming_a_built_in_name_is_refused(on_path):
    _install(on_path, "clash_bench", {"data": "from cvdp_gym.benchmarks.rtllm.data import RtllmV2\n\nBENCHMARKS = (RtllmV2(),)\n"})
    with pytest.raises(ConfigError, match=re.escape("'rtllm-v2' is claimed by both cvdp_gym.benchmarks.rtllm.data and clash_bench.data")):
        list(PluginTable("data", "BENCHMARKS"))


def test_a_plugin_part_without_its_table_is_named(on_path):
    _install(on_path, "bare_bench", {"flow": '"""No FLOWS here."""\n'})
    with pytest.raises(ConfigError, match=re.escape("bare_bench.flow has no FLOWS")):
        list(PluginTable("flow", "FLOWS"))


def test_a_table_only_some_plugins_fill_skips_the_others(on_path):
    _install(on_path, "bare_bench", {"report": '"""Sections only."""\n\nREPORTS = {}\n'})
    table = PluginTable("report", "OFFICIAL_TABLES", key=lambda t: t.name, optional=True)
    assert list(table) == ["cvdp"]  # CVDP's; the other built-in reports and bare_bench list none
    with pytest.raises(ConfigError, match=re.escape("report has no OFFICIAL_TABLES")):  # the same table, required
        list(PluginTable("report", "OFFICIAL_TABLES", key=lambda t: t.name))
