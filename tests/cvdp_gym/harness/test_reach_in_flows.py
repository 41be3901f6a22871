"""Answers that reach into their test bench or reference, graded by the real flows (issue 35).

On the made-up benchmark copies, with the real simulators in the real sandbox: each attack
(instantiating the reference, forcing a test-bench signal, an upward name into the
reference's instance, a test-bench named block or function, ``$root``, an `` `include `` of the
test bench, ``/proc/self/mem``, ``defparam``, ``bind``) is ``reach_in``, never a pass, and
earns no more than a build error; ``official`` still says what the benchmark's own commands
say, checked here by running those commands plainly (no secret, no renaming) on the same
answer. Single-shot ``env.step`` grades through the same grader as refine and agentic
(``Grader.grade_files`` -> ``run_stages`` -> the flow), so one environment test covers them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from pathlib import Path

import gymnasium as gym
import pytest

import cvdp_gym  # noqa: F401  (registers the environments)
from cvdp_gym.benchmarks.rtllm.flow import auto_run_pass
from cvdp_gym.benchmarks.verilog_eval_v1.flow import judge
from cvdp_gym.benchmarks.verilog_eval_v2.flow import analyze
from cvdp_gym.data import load_dataset
from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.grading import Grader
from cvdp_gym.grading.rewards import make_reward
from cvdp_gym.harness import HarnessRunner
from cvdp_gym.harness.runner import RunOptions
from cvdp_gym.harness.testbench import run_script
from cvdp_gym.sandbox.base import Limits

pytestmark = pytest.mark.sandbox

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
AND3 = "module TopModule (input a, input b, input c, output out);\n{body}endmodule\n"
WRONG = "  assign out = a | b;\n"
#: Each attack on VerilogEval v2's Prob001_and3 (its test bench: tb, stim1, good1, out_ref).
ATTACKS = {
    "instantiates the reference": AND3.format(body="  RefModule r (.a, .b, .c, .out);\n"),
    "forces a test-bench signal": AND3.format(body=WRONG + "  initial force tb.tb_match = 1'b1;\n"),
    "names the reference's instance": AND3.format(body="  assign out = good1.out;\n"),
    "reads a test-bench named block": AND3.format(body="  assign out = expect_blk.v;\n"),
    "calls a test-bench function": AND3.format(body="  assign out = expected(a, b, c);\n"),
    "names the root": AND3.format(body="  assign out = $root.tb.out_ref;\n"),
    "includes the test bench": '`include "Prob001_and3_test.sv"\n' + AND3.format(body=WRONG),
    "reads its own memory": AND3.format(
        body="  integer fd;\n  initial fd = $fopen(\"/proc/self/mem\", \"r\");\n  assign out = a & b & c;\n",
    ),
    "defparam on the reference": AND3.format(body=WRONG + "  defparam good1.WIDTH = 2;\n"),
    "binds into the test bench": AND3.format(body=WRONG)
    + "module forcer; initial force tb.tb_match = 1'b1; endmodule\nbind tb forcer f ();\n",
}
#: A named block and a function of the test bench's root scope, for the attacks that name them.
EXTRA_SCOPES = (
    "\tfunction automatic logic expected(input logic x, y, z); return x & y & z; endfunction\n"
    "\talways @(*) begin : expect_blk logic v; v = out_ref; end\n"
)


@pytest.fixture(scope="module")
def and3():
    """Prob001_and3, its test bench also holding a named block and a function."""
    problems = {(p.task, p.extra["name"]): p for p in load_dataset("verilog-eval-v2", benchmark_dir=FIXTURES / "verilog-eval")}
    p = problems[("spec-to-rtl", "Prob001_and3")]
    test = "Prob001_and3_test.sv"
    bench = p.harness[test].replace("\tassign tb_match = ", EXTRA_SCOPES + "\tassign tb_match = ", 1)
    assert bench != p.harness[test]
    return dataclasses.replace(p, harness={**p.harness, test: bench})


@pytest.fixture(scope="module")
def grader(runner):
    return Grader(runner, cache=None)


@pytest.fixture(scope="module")
def attacked(grader, and3):
    """Every attack graded (two at a time), and a build error beside them."""
    answers = {**ATTACKS, "build error": AND3.format(body="  assign out = a &\n")}
    items = [(and3, answer_text(and3, {and3.targets[0]: v})) for v in answers.values()]
    return dict(zip(answers, asyncio.run(grader.grade_many(items, concurrency=2)), strict=True))


def plain_verilog_eval(sandbox, problem, answer: str) -> str:
    """sv-iv-analyze's class of the Makefile's own commands on ``answer``, run plainly."""
    name, target = problem.extra["name"], problem.targets[0]
    test, ref = f"{name}_test.sv", f"{name}_ref.sv"
    script = (
        f"iverilog -Wall -Winfloop -Wno-timescale -g2012 -s tb -o x {target} {test} {ref} > log 2>&1\n"
        "if [ -f x ]; then timeout 30 vvp x >> log 2>&1; fi\n"
    )
    files = {target: answer, test: problem.harness[test], ref: problem.harness[ref]}
    run = run_script(sandbox, problem.toolchain, script, files, ("log",), limits=Limits(wall_s=60))
    return analyze(run.logs["log"].splitlines(), answer).cls


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_answer_that_reaches_out_is_never_a_pass(attacked, sandbox, and3, attack):
    result = attacked[attack]
    assert not result.passed and result.failure_class == "reach_in", (attack, result.reason)
    assert result.reason.startswith("Prob001_and3_sample01.sv:") and "`" in result.reason
    assert result.stage("syntax").passed is False and result.stage("tests").passed is None
    # The benchmark's own reading is what its commands say of the same answer.
    assert result.official["class"] == plain_verilog_eval(sandbox, and3, ATTACKS[attack]), attack
    assert result.official["verdict_class"] == "reach_in"


def test_no_reach_earns_more_than_a_build_error(attacked):
    build_error = attacked["build error"]
    assert build_error.failure_class == "build_error"
    for name in ("shaped", "partial", "binary"):
        reward = make_reward(name, interface_credit=0.2)
        assert {reward(r) for key, r in attacked.items() if key in ATTACKS} == {reward(build_error)}, name


def test_the_benchmark_s_own_reading_passes_the_attacks_that_work(attacked):
    """The hole: the benchmark's own flow passes these, so its figure counts them."""
    for attack in ("instantiates the reference", "forces a test-bench signal", "names the reference's instance",
                   "reads a test-bench named block", "calls a test-bench function", "reads its own memory"):
        assert attacked[attack].official["passed"], attack


def test_a_test_bench_s_names_are_fresh_each_run_and_mapped_back(sandbox, and3, tmp_path):
    """The design prints its own hierarchical name: the run saw random names, the official
    log (and its reading) the benchmark's own."""
    printing = AND3.format(body="  assign out = a & b & c;\n  initial $display(\"in %m\");\n")
    seen = []
    for n in range(2):
        result = HarnessRunner(sandbox, RunOptions(keep_dir=tmp_path / str(n))).run(and3, {and3.targets[0]: printing})
        raw = (tmp_path / str(n) / and3.id / "work" / "sim.log").read_text()
        seen.append(re.search(r"^in (\S+)$", raw, re.M).group(1))
        assert result.passed and result.official["class"] == "." == plain_verilog_eval(sandbox, and3, printing)
        assert "in tb.top_module1\n" in result.log_tail and "cvdp" not in result.log_tail
        assert "Prob001_and3_test.sv:" in result.log_tail  # $finish's location: the file's own name
    first, second = seen
    assert first != second
    for name in seen:
        root, instance = name.split(".")
        assert root.endswith("_tb") and instance.endswith("_top_module1") and root != "tb"


def test_a_module_of_the_test_bench_s_name_takes_the_official_reading_from_an_untouched_run(runner, sandbox, and3):
    """The benchmark's compilation rejects a second ``stimulus_gen``; the isolated run does not
    see it: the verdict is the design's, the official reading the benchmark's."""
    clash = AND3.format(body="  assign out = a & b & c;\n") + "module stimulus_gen; endmodule\n"
    result = runner.run(and3, {and3.targets[0]: clash})
    assert result.passed and result.official["verdict_class"] == "."
    assert result.official["class"] == plain_verilog_eval(sandbox, and3, clash) != "."


def test_verilog_eval_v1_instantiating_the_reference(runner, sandbox):
    p = {q.extra["name"]: q for q in load_dataset("verilog-eval-v1:human", benchmark_dir=FIXTURES / "verilog-eval-v1")}["and3"]
    completion = "\n\treference_module r (.a, .b, .c, .out);\nendmodule\n"
    result = runner.run(p, {p.targets[0]: completion})
    assert not result.passed and result.failure_class == "reach_in"
    assert result.reason.startswith("and3_completion.sv:2: an instance of module `reference_module`")
    test = next(t for name, t in p.harness.items() if name.endswith("_test.sv"))
    prompt = next(t for name, t in p.harness.items() if name.endswith("_prompt.sv"))
    script = "iverilog -Wall -Winfloop -Wno-timescale -g2012 -s tb -o t.vvp a.sv > out 2> err; vvp -n t.vvp >> out 2>> err\n"
    plain = run_script(sandbox, p.toolchain, script, {"a.sv": f"{test}\n{prompt}\n{completion}"}, ("out", "err"), limits=Limits())
    assert result.official["result"] == judge(plain.logs["out"], plain.logs["err"])[0] == "passed"


@pytest.mark.parametrize("rule", ["auto_run", "open"])
def test_rtllm_forcing_the_test_bench_s_error_count(runner, sandbox, rule):
    spec = "rtllm-v2" if rule == "auto_run" else "rtllm-v2?rule=open"
    p = {q.extra["name"]: q for q in load_dataset(spec, benchmark_dir=FIXTURES / "rtllm")}["counter_mod6"]
    wrong = (
        "module counter_mod6 (input clk, input rst_n, input en, output reg [2:0] count);\n"
        "  always @(posedge clk or negedge rst_n)\n    if (!rst_n) count <= 0;\n    else if (en) count <= count + 1;\n"
        "  initial force counter_mod6_tb.error = 0;\nendmodule\n"
    )
    result = runner.run(p, {p.targets[0]: wrong})
    assert not result.passed and result.failure_class == "reach_in"
    assert result.reason == "counter_mod6.v:5: force of `counter_mod6_tb.error`: a hierarchical reference that leaves the answer's own design"
    script = "iverilog -g2012 -o simv t.v counter_mod6.v testbench.v > compile.log 2>&1; vvp -n simv > output.txt\n"
    files = {"t.v": "`timescale 1ns/1ns\n", "counter_mod6.v": wrong, "testbench.v": p.harness["testbench.v"]}
    plain = run_script(sandbox, p.toolchain, script, files, ("output.txt",), limits=Limits())
    assert auto_run_pass(plain.logs["output.txt"], 0.0)  # the benchmark's own run passes it
    assert result.official["auto_run"]
    assert result.official["open"] and result.official["rule"] == rule


def test_single_shot_env_step_rewards_a_reach_in_as_a_build_error(toolchain):
    env = gym.make("CVDP-SingleShot-v0", dataset="verilog-eval-v2:spec-to-rtl", benchmark_dir=str(FIXTURES / "verilog-eval"), cache=False)
    env.reset(options={"problem_id": "verilog-eval-v2.spec-to-rtl.Prob001_and3"})
    problem = env.unwrapped.problem
    _, reward, terminated, _, info = env.step(answer_text(problem, {problem.targets[0]: ATTACKS["instantiates the reference"]}))
    assert terminated and not info["passed"] and info["failure_class"] == "reach_in"
    assert info["official"]["passed"] and "RefModule" in info["reason"]
    env.reset(options={"problem_id": "verilog-eval-v2.spec-to-rtl.Prob001_and3"})
    _, build_error, _, _, info = env.step(answer_text(problem, {problem.targets[0]: AND3.format(body="  assign out = a &\n")}))
    assert info["failure_class"] == "build_error" and reward == build_error == pytest.approx(0.1)
    env.close()


def test_the_reference_grader_stops_a_reach_in_before_simulating(runner):
    p = load_dataset("reference-set", benchmark_dir=FIXTURES.parent / "training" / "generic.jsonl").problems[0]
    reference = p.reference[p.targets[0]]
    reaching = reference.replace("endmodule", "  initial force cvdp_tb.ok = 1'b1;\nendmodule")
    result = runner.run(p, {p.targets[0]: reaching})
    assert not result.passed and result.failure_class == "reach_in" and "force of `cvdp_tb.ok`" in result.reason
    assert result.official["simulation"]["verdict"] == "skipped"
    assert runner.run(p, {p.targets[0]: reference}).passed


def test_a_cvdp_answer_opening_the_process_s_files_is_reach_in(grader):
    """CVDP's cocotb harnesses compile no test-bench module beside the answer: only what no
    design needs is checked (here a ``/proc`` file), after the compile-only check (which it
    passes) and before the harness runs."""
    p = next(q for q in load_dataset("bundled").problems if q.id == "cvdp_gym_edge_detector_0001")
    target = p.targets[0]
    opening = '  integer fd;\n  initial fd = $fopen("/proc/self/environ", "r");\nendmodule'
    reaching = p.reference[target].replace("endmodule", opening)
    [result] = asyncio.run(grader.grade_many([(p, answer_text(p, {target: reaching}))], concurrency=1))
    assert result.failure_class == "reach_in" and "/proc/self/environ" in result.reason
    assert result.stage("syntax").passed is False and not result.passed
