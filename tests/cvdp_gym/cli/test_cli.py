"""The cvdp-gym command line, run as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from cvdp_gym.cli import app
from cvdp_gym.data import load_dataset

CLI = [sys.executable, "-m", "cvdp_gym.cli"]


def run_cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("kind", ["root", "host"])
def test_doctor_lists_every_component(kind):
    out = run_cli("doctor", "--toolchain", kind)
    for name in ("toolchain", "bwrap", "iverilog", "verilator", "yosys", "python env cocotb2", "python env cocotb1",
                 "repository problems", "repository workspaces"):
        assert name in out.stdout
    assert f"cvdp-gym toolchain ({kind})" in out.stdout
    assert out.returncode in (0, 1)
    if out.returncode == 1:
        assert "cvdp-gym toolchain install" in out.stdout or "apt-get install" in out.stdout


@pytest.mark.sandbox
def test_doctor_shows_icarus_13_and_the_lock_of_the_root(toolchain):
    out = run_cli("doctor")
    assert out.returncode == 0, out.stdout
    assert "Icarus Verilog version 13.0 (stable) (v13_0)" in out.stdout
    assert "lock.json" in out.stdout and str(toolchain.root) in out.stdout.replace("\n", "")


def test_unknown_toolchain_is_one_clear_error():
    out = run_cli("doctor", "--toolchain", "nope")
    assert out.returncode == 2 and "unknown toolchain 'nope'" in out.stdout


@pytest.mark.sandbox
def test_check_writes_results_and_resumes(toolchain, tmp_path):
    pid = load_dataset("bundled").ids[0]
    out_file = tmp_path / "check.jsonl"
    # Harnesses in worker processes (the --executor option); verdicts as in-process.
    first = run_cli("check", "bundled", "--id", pid, "--out", str(out_file), "--executor", "processes:2")
    assert first.returncode == 0, first.stdout + first.stderr
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    names = {r["name"] for r in rows}
    assert {"reference", "syntax_error", "functional_bug", "wrong_port_name"} <= names
    assert all(r["matches"] for r in rows)
    assert "verdicts as expected" in first.stdout
    # A torn last line (an interrupted run) is ignored; finished rows are not run again.
    with open(out_file, "a") as handle:
        handle.write('{"key": "torn')
    second = run_cli("check", "bundled", "--id", pid, "--out", str(out_file), "--resume")
    assert second.returncode == 0, second.stdout
    lines = out_file.read_text().splitlines()
    assert len([ln for ln in lines if ln.startswith('{"key": "' + pid)]) == len(rows)


def test_unknown_executor_is_one_clear_error(tmp_path):
    done = run_cli("check", "bundled", "--executor", "gpu", "--out", str(tmp_path / "c.jsonl"))
    assert done.returncode == 2 and "unknown executor 'gpu'" in done.stdout + done.stderr


def test_check_reports_bad_dataset_clearly(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    out = run_cli("check", str(bad), "--out", str(tmp_path / "o.jsonl"))
    assert out.returncode == 2
    assert "bad.jsonl:1: malformed JSON" in out.stdout


def test_export_bundled_round_trips(tmp_path):
    path = tmp_path / "b.jsonl"
    assert run_cli("export-bundled", str(path)).returncode == 0
    assert load_dataset(str(path)).ids == load_dataset("bundled").ids


def _leaf_commands(group: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Every command of the app by its words (``("toolchain", "install")``), groups included.
    Duck-typed: typer ships its own copy of click's classes."""
    found: dict[tuple[str, ...], Any] = {path: group}
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            found.update(_leaf_commands(command, (*path, name)))
        else:
            found[(*path, name)] = command
    return found


COMMANDS = _leaf_commands(typer.main.get_command(app))


def test_the_app_has_every_command_group():
    assert {" ".join(words) for words in COMMANDS} == {
        "", "doctor", "check", "audit", "eval", "compare", "rescore", "export-bundled", "coverage", "parity", "debug", "report", "serve",
        "toolchain", "toolchain install", "toolchain pack", "toolchain path", "toolchain docker-image",
        "agents", "agents list", "agents install", "agents check",
        "benchmarks", "benchmarks list", "benchmarks fetch", "benchmarks path", "decontaminate",
        "export", "export harbor", "export nemo-gym", "export verl", "quality", "quality list", "quality fetch", "quality measure",
    }


@pytest.mark.parametrize("words", sorted(COMMANDS), ids=lambda words: " ".join(words) or "cvdp-gym")
def test_help_lists_every_option(words):
    done = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "250", "TERMINAL_WIDTH": "250"})
    assert done.exit_code == 0, done.output
    command = COMMANDS[words]
    for param in command.params:
        assert max(param.opts, key=len) in done.output or param.name in done.output
    for name in getattr(command, "commands", {}):
        assert name in done.output


# Options that share a flag but not a meaning: check's --out is a JSONL file, eval's a folder
# of results, debug's a workspace folder (its --force replaces it, toolchain install's rebuilds);
# report's --out is the HTML report's folder (compare's holds compare.json and compare.md,
# decontaminate's the report and the filtered training set);
# parity's --dataset takes fewer kinds than debug's;
# `toolchain install --toolchain` says what gets built (and defaults to root);
# serve's --cache defaults to the user cache (every request shares it), eval's to none;
# `benchmarks fetch --force` fetches a benchmark's files again;
# rescore's --reward is the new reward of stored rows (eval's the one it grades with), its --out a JSONL file of those rows;
# export harbor's --reward is what each task's test script writes; export verl's --agentic writes rows (eval's plays episodes);
# `quality fetch --from` is a liberty's mirror (toolchain install's a packed root); `quality measure --json` prints measurements.
_OWN_HELP = {("check", "--out"), ("eval", "--out"), ("debug", "--out"), ("debug", "--force"), ("parity", "--dataset"), ("report", "--out"),
             ("decontaminate", "--out"), ("rescore", "--reward"), ("rescore", "--out"),
             ("toolchain install", "--toolchain"), ("serve", "--cache"), ("benchmarks fetch", "--force"),
             ("export harbor", "--reward"), ("export verl", "--agentic"), ("audit", "--out"), ("audit", "--seed"),
             ("quality fetch", "--from"), ("quality measure", "--json")}


def test_an_option_several_commands_take_says_the_same_everywhere():
    helps: dict[str, set[str]] = {}
    for words, command in COMMANDS.items():
        for param in command.params:
            flag = max(param.opts, key=len)
            if param.param_type_name == "option" and (" ".join(words), flag) not in _OWN_HELP:
                helps.setdefault(flag, set()).add(param.help or "")
    assert {flag: texts for flag, texts in helps.items() if len(texts) > 1} == {}
