"""The benchmark flows (VerilogEval v2 and v1, RTLLM) on the made-up copies, with real
simulator runs in the real sandbox.

Counts a test bench printed are read from the log files the run left (``keep_dir``), never
from the result under test; the official verdict is checked against the benchmark's rule
applied to those same lines.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from pathlib import Path
from typing import ClassVar

import pytest

from cvdp_gym.benchmarks.verilog_eval_v2.data import VerilogEvalV2
from cvdp_gym.data import load_dataset
from cvdp_gym.data.problems import Problem
from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.grading import Grader
from cvdp_gym.harness import HarnessRunner
from cvdp_gym.harness.flows import FLOWS
from cvdp_gym.harness.results import HarnessResult
from cvdp_gym.harness.results import TestCounts as Counts  # not Test...: pytest would collect it
from cvdp_gym.harness.runner import RunOptions
from cvdp_gym.sandbox.base import Limits

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
VE2, VE1, RTLLM2, RTLLM11 = (FIXTURES / n for n in ("verilog-eval", "verilog-eval-v1", "rtllm", "rtllm-v1.1"))
SPEC, COMPLETE = "spec-to-rtl", "code-complete-iccad2023"
#: The fixture's defect: its stimulus outlasts the test bench's 1,000,000 ps watchdog.
SLOW = "Prob004_slow_watchdog"
#: The log each flow's simulation writes (read from the kept run folder).
SIM_LOG = {"verilog-eval-v2": "sim.log", "verilog-eval-v1": "out.txt", "rtllm": "output.txt"}
MISMATCHES = re.compile(r"Mismatches: (\d+) in (\d+) samples")
AND3 = "module TopModule (input a, input b, input c, output out);\n{body}endmodule\n"
PASSED_BANNER = "===========Your Design Passed==========="


@pytest.fixture(scope="module")
def ve2():
    return {(p.task, p.extra["name"]): p for p in load_dataset("verilog-eval-v2", benchmark_dir=VE2)}


@pytest.fixture(scope="module")
def ve1():
    return {p.extra["name"]: p for p in load_dataset("verilog-eval-v1:human", benchmark_dir=VE1)}


@pytest.fixture(scope="module")
def rtllm():
    return {p.extra["name"]: p for p in load_dataset("rtllm-v2", benchmark_dir=RTLLM2)}


@pytest.fixture(scope="module")
def rtllm_open():
    return {p.extra["name"]: p for p in load_dataset("rtllm-v2?rule=open", benchmark_dir=RTLLM2)}


@pytest.fixture(scope="module")
def grader(runner):
    return Grader(runner, cache=None)


def grade_all(grader: Grader, items):
    """``(problem, response)`` pairs graded two at a time, in order."""
    return asyncio.run(grader.grade_many(items, concurrency=2))


def kept(sandbox, problem, files, where: Path, **options):
    """Run ``files`` through ``problem``'s flow keeping the run folder: (result, the simulation's log)."""
    runner = HarnessRunner(sandbox, RunOptions(keep_dir=where, **options))
    result = runner.run(problem, files)
    log = where / problem.id / "work" / SIM_LOG[problem.flow]
    return result, log.read_text() if log.is_file() else ""


def counts(log: str) -> tuple[int, int]:
    """The test bench's ``Mismatches: N in M samples`` (the only such line in these logs)."""
    found = MISMATCHES.findall(log)
    assert len(found) == 1, log
    return int(found[0][0]), int(found[0][1])


def answer(problem, verilog: str) -> dict[str, str]:
    return {problem.targets[0]: verilog}


# ---------------------------------------------------------------------------------------------
# Every reference passes its own test bench, the official verdict agreeing
# ---------------------------------------------------------------------------------------------


def test_references_pass_with_the_official_verdict_agreeing(grader):
    problems = [
        p
        for spec, folder in (
            ("verilog-eval-v2", VE2), ("verilog-eval-v1", VE1), ("rtllm-v2", RTLLM2), ("rtllm-v1.1", RTLLM11),
        )
        for p in load_dataset(spec, benchmark_dir=folder)
        if p.extra["name"] != SLOW
    ]
    results = grade_all(grader, [(p, answer_text(p, p.reference)) for p in problems])
    for p, r in zip(problems, results, strict=True):
        assert r.passed and r.failure_class is None, (p.id, r.reason, r.log_tail)
        assert not r.excluded and r.defect is None
        if p.flow == "verilog-eval-v2":
            assert r.official["passed"] and r.official["class"] == r.official["verdict_class"] == "."
            assert r.official["mismatches"] == 0 and r.tests.total == r.official["samples"] > 1 and r.tests.failed == 0
        elif p.flow == "verilog-eval-v1":
            assert r.official["result"] == r.official["verdict_result"] == "passed" and r.official["passed"]
        else:
            assert r.official["compiled"] and r.official["auto_run"] and r.official["open"]
            assert r.official["rule"] == "auto_run"


# ---------------------------------------------------------------------------------------------
# VerilogEval v2: partial credit and sv-iv-analyze's classes
# ---------------------------------------------------------------------------------------------


def test_a_wrong_answer_gets_partial_credit(sandbox, ve2, tmp_path):
    p = ve2[(SPEC, "Prob003_priority4")]
    lowest_bit = (
        "module TopModule (input [3:0] in, output reg [1:0] pos);\n"
        "  always @(*)\n    casez (in)\n      4'b???1: pos = 2'd0;\n      4'b??10: pos = 2'd1;\n"
        "      4'b?100: pos = 2'd2;\n      4'b1000: pos = 2'd3;\n      default: pos = 2'd0;\n    endcase\n"
        "endmodule\n"
    )
    result, log = kept(sandbox, p, answer(p, lowest_bit), tmp_path)
    wrong, samples = counts(log)
    assert 0 < wrong < samples
    assert f"Hint: Total mismatched samples is {wrong} out of {samples} samples" in log
    assert (result.tests.total, result.tests.passed, result.tests.failed) == (samples, samples - wrong, wrong)
    assert result.tests.passed / result.tests.total == (samples - wrong) / samples
    assert not result.passed and result.failure_class == "test_failure"
    assert result.official["class"] == "R" and result.official["mismatches"] == wrong
    assert result.official["samples"] == samples


def test_an_asynchronous_reset_is_class_r_with_the_hint(sandbox, ve2, tmp_path):
    p = ve2[(SPEC, "Prob002_count4")]
    asynchronous = (
        "module TopModule (input clk, input reset, output reg [3:0] q);\n"
        "  always @(posedge clk, posedge reset)\n    if (reset) q <= 4'd0;\n    else q <= q + 4'd1;\n"
        "endmodule\n"
    )
    result, log = kept(sandbox, p, answer(p, asynchronous), tmp_path)
    wrong, samples = counts(log)
    assert 0 < wrong < samples
    assert "Hint: Your reset should be synchronous, but doesn't appear to be." in log
    assert result.official["class"] == result.official["verdict_class"] == "r"
    assert result.failure_class == "test_failure" and result.tests.failed == wrong


CLASSES = {
    "S": (AND3.format(body="  assign out = a & b & c\n"), "build_error"),
    "m": (AND3.replace("TopModule", "AndGate").format(body="  assign out = a & b & c;\n"), "interface_error"),
    "C": (AND3.replace("output out", "output y").format(body="  assign y = a & b & c;\n"), "interface_error"),
}


@pytest.mark.parametrize("cls", CLASSES)
def test_failure_classes(runner, ve2, cls):
    p = ve2[(SPEC, "Prob001_and3")]
    verilog, failure = CLASSES[cls]
    result = runner.run(p, answer(p, verilog))
    assert result.official["class"] == result.official["verdict_class"] == cls
    assert not result.passed and not result.official["passed"] and result.failure_class == failure


def test_an_always_comb_without_sensitivities_fails_though_icarus_only_warns(sandbox, ve2, tmp_path):
    p = ve2[(SPEC, "Prob001_and3")]
    verilog = AND3.format(body="  logic unused;\n  always_comb unused = 1'b0;\n  assign out = a & b & c;\n")
    result, log = kept(sandbox, p, answer(p, verilog), tmp_path)
    compile_log = (tmp_path / p.id / "work" / "compile.log").read_text()
    assert "warning: always_comb process has no sensitivities" in compile_log
    assert "error" not in compile_log.lower()
    assert counts(log)[0] == 0  # it compiled, ran and matched every sample
    assert result.official["class"] == "n" and result.failure_class == "build_error" and not result.passed


def test_the_watchdog_times_out_a_defect_problem_and_excludes_its_failures(grader):
    class Flagged(VerilogEvalV2):
        defects: ClassVar[dict[str, str]] = {SLOW: "the stimulus outlasts the test bench's watchdog"}

    bench = Flagged()
    problems = [p for p in bench.load(VE2, (), bench.options({})) if p.extra["name"] == SLOW]
    assert {p.task for p in problems} == {SPEC, COMPLETE}
    wrong = {SPEC: "module TopModule (input in, output out);\n  assign out = in;\nendmodule\n",
             COMPLETE: "  assign out = in;\nendmodule\n"}
    items = [(p, answer_text(p, p.reference)) for p in problems]
    items += [(p, answer_text(p, {p.targets[0]: wrong[p.task]})) for p in problems]
    for (p, _), r in zip(items, grade_all(grader, items), strict=True):
        assert r.failure_class == "timeout" and r.official["class"] == r.official["verdict_class"] == "T"
        assert r.defect == Flagged.defects[SLOW] and r.excluded, p.id


def test_a_failure_on_a_sound_problem_is_not_excluded(grader, ve2):
    p = ve2[(SPEC, "Prob001_and3")]
    [r] = grade_all(grader, [(p, answer_text(p, answer(p, AND3.format(body="  assign out = a | b | c;\n"))))])
    assert r.failure_class == "test_failure" and r.defect is None and not r.excluded


@pytest.fixture(scope="module")
def hung(runner, ve2):
    """An answer whose design loops at time 0 (a non-blocking self-inversion), under a 5 s limit."""
    p = ve2[(SPEC, "Prob001_and3")]
    loop = "  logic x;\n  initial x = 1'b0;\n  always @(*) x <= ~x;\n  assign out = a & b & c;\n"
    return runner.run(p, answer(p, AND3.format(body=loop)), limits=Limits(wall_s=5))


def test_a_zero_delay_loop_ends_at_the_wall_clock_limit(hung):
    assert hung.failure_class == "timeout" and not hung.passed
    assert hung.official["verdict_class"] == "T" and not hung.official["passed"]
    assert "wall-time limit" in hung.reason  # the sandbox's 5 s, not the flow's own 30 s


def test_a_run_killed_at_the_wall_clock_limit_is_an_official_timeout(hung):
    """The official flow's own ``timeout 30`` would have ended this run as TIMEOUT (class T);
    the test bench reported no mismatches, so "R: mismatches" is not what the benchmark says."""
    assert hung.official["class"] == "T"


# ---------------------------------------------------------------------------------------------
# Forgery: what an answer prints sways the official reading, never the verdict
# ---------------------------------------------------------------------------------------------


def test_a_forged_mismatch_line_fools_only_the_official_reading(runner, ve2, ve1):
    p = ve2[(SPEC, "Prob001_and3")]
    forged = AND3.format(body='  assign out = a | b | c;\n  initial $display("Mismatches: 0 in 20 samples");\n')
    result = runner.run(p, answer(p, forged))
    assert result.official["passed"] and result.official["class"] == "."
    assert not result.passed and result.failure_class == "test_failure"
    assert result.official["verdict_class"] == "R" and result.tests.failed > 0

    v1 = ve1["and3"]
    body = '\n\tassign out = a | b;\n\tinitial $display("Mismatches: 0 in 5 samples");\nendmodule\n'
    result = runner.run(v1, answer(v1, body))
    assert result.official["result"] == "passed" and result.official["passed"]
    assert not result.passed and result.reason.startswith("failed: ") and result.reason.endswith(" samples.")


@pytest.mark.parametrize("rule", ["auto_run", "open"])
def test_a_forged_pass_banner_fools_only_the_official_reading(runner, rtllm, rtllm_open, rule):
    p = (rtllm if rule == "auto_run" else rtllm_open)["adder_4bit"]
    assert p.extra["rule"] == rule
    no_carry_in = (
        "module adder_4bit (input [3:0] a, input [3:0] b, input cin, output [3:0] sum, output cout);\n"
        f'  assign {{cout, sum}} = a + b;\n  initial #1 $display("{PASSED_BANNER}");\nendmodule\n'
    )
    result = runner.run(p, answer(p, no_carry_in))
    assert result.official["auto_run"] and result.official["open"]
    assert not result.passed and result.failure_class == "test_failure"


def test_printing_syntax_error_fails_only_the_answer_itself(runner, ve2):
    p = ve2[(SPEC, "Prob001_and3")]
    verilog = AND3.format(body='  assign out = a & b & c;\n  initial $display("syntax error");\n')
    result = runner.run(p, answer(p, verilog))
    assert not result.official["passed"] and result.official["class"] == "S"
    assert not result.passed and result.official["verdict_class"] == "S"


# ---------------------------------------------------------------------------------------------
# Icarus 12 vs 13
# ---------------------------------------------------------------------------------------------


def test_icarus_13_rejects_the_test_benchs_dump_of_tb_mismatch(runner, ve2, ve1):
    p = ve2[(SPEC, "Prob002_count4")]
    assert "$dumpvars(1, stim1.clk, tb_mismatch" in p.harness[f"{p.extra['name']}_test.sv"]
    on_12 = runner.run(p, p.reference)
    assert on_12.passed and "version 12." in on_12.toolchain["simulator"]
    on_13 = runner.run(dataclasses.replace(p, toolchain="cvdp-sim"), p.reference)
    assert "version 13." in on_13.toolchain["simulator"]
    assert on_13.official["class"] == on_13.official["verdict_class"] == "p"
    assert not on_13.passed and on_13.failure_class == "build_error" and "tb_mismatch" in on_13.reason

    v1 = ve1["count4"]
    assert runner.run(v1, v1.reference).passed
    on_13 = runner.run(dataclasses.replace(v1, toolchain="cvdp-sim"), v1.reference)
    assert on_13.official["result"] == "failed: compile error." and not on_13.passed


# ---------------------------------------------------------------------------------------------
# VerilogEval v1: execution.py's rule
# ---------------------------------------------------------------------------------------------


def test_v1_a_warning_is_a_compile_error(sandbox, ve1, tmp_path):
    p = ve1["and3"]
    clean = "\n\twire [3:0] t = 4'b1111;\n\twire spare = t[3];\n\tassign out = a & b & c;\nendmodule\n"
    warned = clean.replace("t[3]", "t[7]")  # a constant select past the vector: -Wall warns, nothing else changes
    assert kept(sandbox, p, answer(p, clean), tmp_path / "clean")[0].passed
    result, log = kept(sandbox, p, answer(p, warned), tmp_path / "warned")
    err = (tmp_path / "warned" / p.id / "work" / "err.txt").read_text()
    assert "warning" in err and "error" not in err.lower()
    assert counts(log)[0] == 0  # every sample matched
    assert result.official["result"] == result.reason == "failed: compile error."
    assert result.failure_class == "build_error" and not result.official["passed"]


def test_v1_mismatches_are_counted(sandbox, ve1, tmp_path):
    p = ve1["priority4"]
    body = "\n\talways @(*) pos = in[1:0];\nendmodule\n"
    result, log = kept(sandbox, p, answer(p, body), tmp_path)
    wrong, samples = counts(log)
    assert 0 < wrong < samples
    assert result.reason == result.official["result"] == f"failed: {wrong} out of {samples} samples."
    assert (result.tests.total, result.tests.failed) == (samples, wrong)


# ---------------------------------------------------------------------------------------------
# RTLLM
# ---------------------------------------------------------------------------------------------

WRONG_DESIGNS = {
    "adder_4bit": "module adder_4bit (input [3:0] a, input [3:0] b, input cin, output [3:0] sum, output cout);\n"
    "  assign {cout, sum} = a + b;\nendmodule\n",
    "counter_mod6": "module counter_mod6 (input clk, input rst_n, input en, output reg [2:0] count);\n"
    "  always @(posedge clk or negedge rst_n)\n    if (!rst_n) count <= 0;\n    else if (en) count <= count + 1;\n"
    "endmodule\n",
    "gray_code": "module gray_code (input [3:0] bin, output [3:0] gray);\n  assign gray = bin;\nendmodule\n",
}


def test_rtllm_wrong_designs_fail_under_both_rules(grader, rtllm, rtllm_open):
    items = [(ps[name], answer_text(ps[name], answer(ps[name], v))) for ps in (rtllm, rtllm_open) for name, v in WRONG_DESIGNS.items()]
    for (p, _), r in zip(items, grade_all(grader, items), strict=True):
        assert r.failure_class == "test_failure", (p.id, r.reason)
        assert r.official["compiled"] and not r.official["auto_run"] and not r.official["open"]


def test_rtllm_data_file_is_read_from_the_working_folder(runner, rtllm):
    p = rtllm["gray_code"]
    assert runner.run(p, p.reference).passed
    without = dataclasses.replace(p, harness={"testbench.v": p.harness["testbench.v"]})
    result = runner.run(without, p.reference)
    assert not result.passed and result.failure_class == "test_failure"


def test_rtllm_a_build_error(runner, rtllm):
    p = rtllm["adder_4bit"]
    result = runner.run(p, answer(p, p.reference[p.targets[0]].replace("endmodule", "")))
    assert result.failure_class == "build_error" and not result.official["compiled"]
    assert not result.official["auto_run"] and not result.official["open"]


def test_rtllm_pass_without_passed_meets_auto_run_but_not_open(runner, rtllm, rtllm_open):
    """auto_run.py takes "Pass" anywhere; the open flows want "Passed"."""
    for rule, problems in (("auto_run", rtllm), ("open", rtllm_open)):
        p = problems["adder_4bit"]
        testbench = p.harness["testbench.v"]
        assert PASSED_BANNER in testbench
        terse = dataclasses.replace(p, harness={**p.harness, "testbench.v": testbench.replace(PASSED_BANNER, "=== Pass ===")})
        result = runner.run(terse, p.reference)
        assert result.official["auto_run"] and not result.official["open"]
        assert result.passed == (rule == "auto_run"), rule


class SeedNotingFlow:
    """A made-up flow that notes the seed each run is given, and passes."""

    name = "seed-noting"

    def __init__(self) -> None:
        self.given: list[int | None] = []

    def run(self, sandbox, problem, files, *, limits, keep_dir=None, seed=None):
        self.given.append(seed)
        return HarnessResult.of_one_check(problem.id, "made-up", True, None, "", tests=Counts(1, 1, 0), official={}, wall_s=0.0)


class SeedDrawingFlow(SeedNotingFlow):
    """The same, for a flow whose verdict depends on the seed (``seeded``)."""

    name = "seed-drawing"
    seeded: ClassVar[bool] = True


@pytest.mark.parametrize("flow", [SeedNotingFlow(), SeedDrawingFlow()], ids=["draws-nothing", "seeded"])
def test_every_flow_is_given_the_runs_seed_and_a_seeded_one_records_it(runner, monkeypatch, flow):
    """``seed`` is part of every flow's ``run``: the runner passes the run's seed (a fresh one when
    none is asked for); only a flow whose verdict depends on it has it recorded with the result."""
    monkeypatch.setitem(FLOWS._load(), flow.name, flow)  # a test's registration, removed on exit
    problem = Problem(
        id=f"made-up.{flow.name}", categories=(), agentic=False, prompt="", context={}, targets=("top.sv",),
        harness={}, grader=flow.name,
    )
    answer = {"top.sv": "module top(input a, output y);\n  assign y = a;\nendmodule\n"}
    fixed, fresh = runner.run(problem, answer, seed=7), runner.run(problem, answer)
    assert fixed.passed and fresh.passed
    assert flow.given[0] == 7 and isinstance(flow.given[1], int)
    seeded = getattr(flow, "seeded", False)
    assert (fixed.seed, fresh.seed) == ((7, flow.given[1]) if seeded else (None, None))
