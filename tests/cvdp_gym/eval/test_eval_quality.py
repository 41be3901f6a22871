"""``cvdp-gym eval --references --quality``, and ``serve`` with and without the quality stage.

The made-up RTLLM v2.0 copy's references graded by the real CLI and simulators, then
measured by the real ASIC flow (Yosys + ABC to the test liberty, OpenSTA) and the real FPGA
flow (Yosys ``synth_ice40`` + nextpnr-ice40): every reference is measured, report.json and
report.md carry the quality section. The service answers a passing design with its quality
and the ``quality`` reward, and refuses that reward (400) where it does not measure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cvdp_gym.cli import app
from cvdp_gym.data import load_dataset
from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.grading import Grader
from cvdp_gym.grading.quality import QualitySettings, QualityStage
from cvdp_gym.toolchain import quality_tools
from tests.support import RTLLM_COPY, WRONG_ADDER, ServedApp, missing

pytestmark = pytest.mark.sandbox

LIBERTY = str(Path(__file__).parents[2] / "fixtures" / "quality" / "tiny.lib")


@pytest.fixture(scope="module")
def tools(toolchain):
    if not quality_tools.ready():
        missing(f"quality tools: {quality_tools.problem()}; run cvdp-gym toolchain install")


@pytest.mark.parametrize("flow", ["asic", "fpga"])
def test_the_references_of_a_benchmark_are_graded_and_measured(tools, tmp_path, flow):
    out = tmp_path / "run"
    words = ["eval", "rtllm-v2", "--benchmark-dir", str(RTLLM_COPY), "--references", "--quality", flow, "--liberty", LIBERTY, "--out", str(out)]
    done = CliRunner().invoke(app, words, env={"COLUMNS": "250"})
    assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert rows and all(row["passed"] for row in rows)
    report = json.loads((out / "report.json").read_text())
    assert report["meta"]["source"] == "the problems' reference solutions" and report["meta"]["quality"]["flow"] == flow
    summary = report["quality"]["by_benchmark"]["rtllm-v2"]
    assert summary["scored"] == summary["answers"] == len(rows) and summary["mean_score"] == 0.5
    for answer in report["quality"]["answers"]:
        figures = answer["design"]
        assert figures == answer["reference"]
        assert (figures["area_um2"] > 0 and figures["delay_ns"] > 0) if flow == "asic" else figures["luts"] > 0
    assert "## Design quality" in (out / "report.md").read_text()
    assert "design quality per answer" in done.output


def test_a_missing_liberty_is_one_line_before_anything_runs(tools, tmp_path):
    words = ["eval", "rtllm-v2", "--benchmark-dir", str(RTLLM_COPY), "--references", "--quality", "asic", "--out", str(tmp_path)]
    done = CliRunner().invoke(app, [*words, "--liberty", str(tmp_path / "none.lib")], env={"COLUMNS": "250"})
    assert done.exit_code == 2 and "unknown liberty" in done.output and "Traceback" not in done.output


def test_the_service_answers_quality_and_refuses_the_reward_where_it_does_not_measure(tools, runner, tmp_path):
    import httpx

    from cvdp_gym.service.app import ServiceConfig, create_app

    data = load_dataset("rtllm-v2", benchmark_dir=RTLLM_COPY)
    adder = data["rtllm-v2.adder_4bit"]
    grader = Grader(runner, cache=GradeCache(tmp_path / "grades.sqlite"))
    stage = QualityStage(runner.sandbox, QualitySettings(liberty=LIBERTY), cache=grader.cache)
    measured = ServedApp(create_app(ServiceConfig(Grader(runner, cache=grader.cache, quality=stage), data, workers=1)))
    plain = ServedApp(create_app(ServiceConfig(grader, data, workers=1)))
    try:
        right = {"problem_id": adder.id, "files": dict(adder.reference), "reward": "quality"}
        good = httpx.post(f"{measured.url}/v1/grade", json=right, timeout=120).json()
        wrong = httpx.post(f"{measured.url}/v1/grade", json={**right, "files": {adder.targets[0]: WRONG_ADDER}}, timeout=120).json()
        refused = httpx.post(f"{plain.url}/v1/grade", json=right, timeout=30)
    finally:
        measured.stop()
        plain.stop()
    assert good["passed"] and good["quality"]["score"] == 0.5
    assert good["reward"] == pytest.approx(1.4 + 0.5) and good["rewards"]["shaped"] == pytest.approx(1.4)
    # RTLLM's own test bench passes this wrong adder (``--verdict testbench+reference`` does not):
    # it is never measured, since the reference grader shows it differs from the reference.
    assert wrong["passed"] and wrong["quality"]["score"] is None, wrong["quality"]
    assert "not shown equivalent to the reference" in wrong["quality"]["failure"]
    assert refused.status_code == 400 and "--quality" in refused.json()["detail"]


#: RTLLM's ``adder_4bit`` as a carry select: equivalent to the reference, and larger.
SELECT_ADDER = """module adder_4bit (input [3:0] a, input [3:0] b, input cin, output [3:0] sum, output cout);
    assign {cout, sum} = cin ? ({1'b0, a} + {1'b0, b} + 5'd1) : ({1'b0, a} + {1'b0, b});
endmodule
"""


def test_compare_puts_two_runs_quality_side_by_side(tools, tmp_path):
    """The reference against a right answer that costs more area: compare reports both mean
    scores on the common problem and a negative difference."""
    from cvdp_gym.envs.prompts import answer_text

    adder = load_dataset("rtllm-v2", benchmark_dir=RTLLM_COPY)["rtllm-v2.adder_4bit"]
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"id": adder.id, "response": answer_text(adder, {adder.targets[0]: SELECT_ADDER})}) + "\n")
    common = ["eval", "rtllm-v2", "--benchmark-dir", str(RTLLM_COPY), "--id", adder.id, "--quality", "asic", "--liberty", LIBERTY]
    for words, out in ((["--references"], "base"), (["--responses", str(responses)], "run")):
        done = CliRunner().invoke(app, [*common, *words, "--out", str(tmp_path / out)], env={"COLUMNS": "250"})
        assert done.exit_code == 0, done.output
    done = CliRunner().invoke(app, ["compare", str(tmp_path / "base"), str(tmp_path / "run"), "--out", str(tmp_path / "cmp")], env={"COLUMNS": "250"})
    assert done.exit_code == 0, done.output
    quality = json.loads((tmp_path / "cmp" / "compare.json").read_text())["comparisons"][0]["quality"]
    assert quality["problems"] == 1 and quality["baseline_score"] == 0.5 and quality["difference"] < 0
    assert "design quality (mean score over the 1 problems both measured" in done.output
