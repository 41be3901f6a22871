"""``cvdp-gym eval --verdict testbench+reference``: a wrong design its test bench passes is
counted failed (``not_equivalent``), while the benchmark's own figures stay the test bench's.

A responses file on the made-up RTLLM v2.0 copy, graded by the real CLI and simulators.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cvdp_gym.cli import app
from cvdp_gym.data import load_dataset
from cvdp_gym.envs.prompts import answer_text
from tests.support import RTLLM_COPY, WRONG_ADDER

pytestmark = pytest.mark.sandbox



def test_the_backed_verdict_fails_what_the_test_bench_alone_passes(toolchain, tmp_path):
    adder = load_dataset("rtllm-v2", benchmark_dir=RTLLM_COPY)["rtllm-v2.adder_4bit"]
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"id": adder.id, "response": answer_text(adder, {adder.targets[0]: WRONG_ADDER})}) + "\n")
    out = tmp_path / "run"
    words = ["eval", "rtllm-v2", "--benchmark-dir", str(RTLLM_COPY), "--id", adder.id, "--responses", str(responses), "--out", str(out)]
    done = CliRunner().invoke(app, [*words, "--verdict", "testbench+reference"], env={"COLUMNS": "250"})
    assert done.exit_code == 0, done.output
    (row,) = map(json.loads, (out / "results.jsonl").read_text().splitlines())
    assert (row["passed"], row["verdict"], row["official"]["auto_run"]) == (False, "not_equivalent", True)
    report = json.loads((out / "report.json").read_text())
    assert report["meta"]["verdict"] == "testbench+reference"
    section = next(iter(report["benchmark_reports"].values()))
    functional = next(f["cells"] for f in section["figures"] if f["name"] == "functional pass@1, auto_run rule")
    assert functional["mean"]["value"] == 100.0 and functional["ours"]["value"] == 0.0  # the benchmark's rule; ours

    bad = CliRunner().invoke(app, [*words, "--verdict", "reference-only"], env={"COLUMNS": "250"})
    assert bad.exit_code == 2 and "unknown verdict 'reference-only'" in bad.output
