"""``cvdp-gym audit``: seeded mutants of each reference graded by the problem's own test bench,
the survivors by the equivalence grader; each problem's kill rate and the benchmark's
distribution as JSON, Markdown and HTML; an interrupted or repeated audit resumes.

On the made-up RTLLM v1.1 copy (two problems), with the real simulators.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cvdp_gym.cli import app

pytestmark = pytest.mark.sandbox

COPY = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks" / "rtllm-v1.1"
WIDE = {"COLUMNS": "250"}


def audit(*words: str) -> object:
    return CliRunner().invoke(app, ["audit", *words], env=WIDE)


def test_an_audit_measures_each_test_bench_and_resumes(toolchain, tmp_path):
    out = tmp_path / "audit"
    done = audit("rtllm-v1.1", "--benchmark-dir", str(COPY), "--mutants", "4", "--out", str(out))
    assert done.exit_code == 0, done.output
    report = json.loads((out / "audit.json").read_text())
    bench = report["benchmarks"]["rtllm-v1.1"]
    assert bench["audited"] == bench["problems"] == 2
    by_id = {m["mutant"]: m for m in report["mutants"]}
    for row in report["problems"]:
        outcomes = [m["outcome"] for m in report["mutants"] if m["id"] == row["id"]]
        assert len(outcomes) == row["mutants"] <= 4 and row["reference"] == "passed"
        assert row["reference_equivalence"] == "equivalent"  # the grader decides these references
        assert row["kill_rate"] == row["killed"] / (row["killed"] + row["missed"])
        assert all(by_id[name]["outcome"] == "missed" for name in row["missed_mutants"])
    for mutant in report["mutants"]:
        if mutant["outcome"] == "killed":
            assert mutant["testbench"] in ("test_failure", "timeout") and mutant["equivalence"] is None
        if mutant["outcome"] == "missed":  # passed its test bench, and differs from the reference
            assert mutant["testbench"] == "passed" and mutant["equivalence"] in ("test_failure", "interface_error")
    assert bench["killed"] + bench["missed"] > 0
    assert bench["kill_rate_pooled"] == bench["killed"] / (bench["killed"] + bench["missed"])
    below = {r["id"] for r in report["problems"] if r["kill_rate"] < 0.95}
    assert set(bench["below_95"]) == below and sum(bench["distribution"].values()) == 2
    markdown = (out / "audit.md").read_text()
    assert "## Problems by kill rate" in markdown and "| rtllm-v1.1 |" in markdown
    assert (out / "audit.html").read_text().startswith("<!DOCTYPE html>")
    assert "kill rate" in done.output and "audit.md" in done.output

    runs = (out / "audit.jsonl").read_text().splitlines()
    again = audit("rtllm-v1.1", "--benchmark-dir", str(COPY), "--mutants", "4", "--out", str(out), "--resume")
    assert again.exit_code == 0, again.output
    assert (out / "audit.jsonl").read_text().splitlines() == runs  # nothing graded twice
    assert json.loads((out / "audit.json").read_text())["problems"] == report["problems"]


@pytest.mark.parametrize(("words", "message"), [
    (["rtllm-v1.1", "--benchmark-dir", str(COPY), "--mutants", "0"], "--mutants must be at least 1"),
    (["no/such/file.jsonl"], "no/such/file.jsonl"),
])
def test_bad_input_is_one_line(tmp_path, words, message):
    done = audit(*words, "--out", str(tmp_path / "audit"))
    assert done.exit_code == 2
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0]
