"""``cvdp-gym eval --task testbench``: the made-up VerilogEval v2 copy's problems asked for test
benches, answers from a responses file and the golden row (``--references``: the benchmark's
own test bench on the same seeded bugs), graded by the real CLI, Icarus, Yosys and Verilator."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cvdp_gym.cli import app
from tests.support import REPO

pytestmark = pytest.mark.sandbox

VE2 = ["verilog-eval-v2:spec-to-rtl", "--benchmark-dir", str(REPO / "tests" / "fixtures" / "benchmarks" / "verilog-eval")]
PRIORITY = "verilog-eval-v2.spec-to-rtl.Prob003_priority4.testbench"
#: Every input value, each output checked against a model written from the specification.
PRIORITY_BENCH = """module tb;
  reg [3:0] in; wire [1:0] pos; integer i; reg [1:0] want;
  TopModule dut(.in(in), .pos(pos));
  initial begin
    for (i = 0; i < 16; i = i + 1) begin
      in = i;
      want = in[3] ? 3 : in[2] ? 2 : in[1] ? 1 : 0;
      #1 if (pos !== want) $error("in=%b pos=%0d want %0d", in, pos, want);
    end
    $finish;
  end
endmodule
"""
#: Only one input value.
WEAK_PRIORITY_BENCH = PRIORITY_BENCH.replace("i < 16", "i < 1")


def run(words: list[str]):
    return CliRunner().invoke(app, ["eval", *VE2, "--task", "testbench", *words], env={"COLUMNS": "250"})


def test_the_golden_row_scores_the_benchmarks_own_benches_on_the_seeded_bugs(toolchain, tmp_path):
    done = run(["--references", "--out", str(tmp_path)])
    assert done.exit_code == 0, done.output
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "results.jsonl").read_text().splitlines())}
    assert set(rows) == {f"verilog-eval-v2.spec-to-rtl.{n}.testbench" for n in ("Prob001_and3", "Prob002_count4", "Prob003_priority4", "Prob004_slow_watchdog")}
    watchdog = rows["verilog-eval-v2.spec-to-rtl.Prob004_slow_watchdog.testbench"]
    assert watchdog["excluded"] and "fails its own test bench" in watchdog["reason"]  # the fixture's known defect
    counter = rows["verilog-eval-v2.spec-to-rtl.Prob002_count4.testbench"]
    assert counter["official"]["golden"] and counter["tests_total"] >= 4
    assert counter["reward"] == counter["official"]["kill_rate"] == counter["tests_passed"] / counter["tests_total"]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["meta"]["source"] == "the benchmarks' own test benches (golden)" and report["meta"]["task"] == "testbench"
    assert "benchmark_reports" not in report  # VerilogEval's own table reads designs, not benches
    entry = report["verification"]["by_task"]["testbench · verilog-eval-v2"]
    assert entry["answers"] == 4 and entry["excluded"] == 1 and entry["valid_rate"] == 1.0
    assert "## Verification tasks" in (tmp_path / "report.md").read_text()


def test_model_benches_get_kill_rates_and_coverage(toolchain, tmp_path):
    answers = tmp_path / "answers.jsonl"
    rows = [
        {"id": PRIORITY, "response": f"```verilog\n{PRIORITY_BENCH}```", "sample": 0},
        {"id": PRIORITY, "response": f"```verilog\n{WEAK_PRIORITY_BENCH}```", "sample": 1},
    ]
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = run(["--id", "verilog-eval-v2.spec-to-rtl.Prob003_priority4", "--responses", str(answers), "--out", str(tmp_path / "run")])
    assert done.exit_code == 0, done.output
    graded = sorted(map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines()), key=lambda r: r["sample"])
    thorough, weak = graded
    assert thorough["reward"] == 1.0 and thorough["passed"]
    assert weak["official"]["reference"]["passed"] and weak["reward"] < thorough["reward"]
    line, toggle = thorough["official"]["coverage"]["line"], thorough["official"]["coverage"]["toggle"]
    assert line[0] == line[1] > 0 and toggle[0] > 0
    assert weak["official"]["coverage"]["toggle"][0] < toggle[0]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    entry = report["verification"]["by_task"]["testbench · verilog-eval-v2"]
    assert entry["valid_rate"] == 1.0 and entry["full_catch_rate"] == 0.5 and entry["mean_line_coverage"] > 0
    assert report["meta"]["reward"] == "kills"


@pytest.mark.parametrize(("words", "message"), [
    (["--task", "proof", "--references"], "unknown --task 'proof'"),
    (["--task", "assertion", "--references"], "no golden assertions"),
])
def test_bad_task_options_are_one_line(tmp_path, words, message):
    done = CliRunner().invoke(app, ["eval", *VE2, *words, "--out", str(tmp_path)], env={"COLUMNS": "250"})
    assert done.exit_code == 2 and message in done.output and "Traceback" not in done.output


def test_the_task_is_posed_as_agentic_episodes_for_eval_agentic():
    from cvdp_gym.cli.options import ProblemOptions

    posed = ProblemOptions(task="testbench").load("bundled", agentic=True).problems
    assert posed and all(p.agentic and p.targets == ("verif/tb.sv",) and p.id.endswith(".testbench") for p in posed)
    assert all(p.extra["testbench"] == {"coverage": True} for p in posed)
