"""RTLLM's X guard judges every moment: an output X or Z where the reference's copy is known fails.

Real runs of the RTLLM flow in the real sandbox, on the made-up copies under
``tests/fixtures/benchmarks`` (``rtllm/`` as v2.0, ``rtllm-v1.1/``). Each answer here passes
the test bench by its own reading once its comparison is the ``!=`` in an ``if`` that RTLLM
v2.0's comparator test benches use (X taken as equal); the guard (``xguard.py``) fails the
ones that leave an output X where the reference's is known, and none of the references.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cvdp_gym.benchmarks.rtllm import xguard
from cvdp_gym.benchmarks.rtllm.flow import RtllmFlow
from cvdp_gym.data import load_dataset
from cvdp_gym.data.problems import Problem
from cvdp_gym.harness.results import TEST_FAILURE
from cvdp_gym.sandbox.base import Limits

pytestmark = pytest.mark.sandbox

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
FLOW = RtllmFlow()
LIMITS = Limits(wall_s=60)
#: Each fixture test bench's exact comparison, and the ``!=`` in an ``if`` an X slips through.
BLIND = {
    "adder_4bit": ("error = ({cout, sum} !== expected) ? error + 1 : error;", "if ({cout, sum} != expected) error = error + 1;"),
    "counter_mod6": ("if (count !== model) error = error + 1;", "if (count != model) error = error + 1;"),
}
ADDER = "module adder_4bit(input [3:0] a, input [3:0] b, input cin, output [3:0] sum, output cout);\n"
COUNTER = "module counter_mod6 (input clk, input rst_n, input en, output [2:0] count);\n"
#: A correct mod-6 counter (asynchronous reset, as the reference), its value in ``value``.
COUNTING = (
    "  reg [2:0] value;\n"
    "  always @(posedge clk or negedge rst_n)\n"
    "    if (!rst_n) value <= 3'd0;\n"
    "    else if (en) value <= (value == 3'd5) ? 3'd0 : value + 3'd1;\n"
)
#: Answers that pass the blind test benches by their own reading, each leaving an output X.
CHEATS = {
    # Known for the first 2 time units, X afterwards.
    "known for 2 time units, then X": (
        "adder_4bit",
        ADDER + "  reg late = 1'b0;\n  initial #2 late = 1'b1;\n"
        "  assign {cout, sum} = late ? 5'bx : a + b + cin;\nendmodule\n",
    ),
    # Right on even clock cycles, X on odd ones.
    "X on odd cycles": (
        "counter_mod6",
        COUNTER + COUNTING + "  reg odd = 1'b0;\n  always @(posedge clk) odd <= ~odd;\n"
        "  assign count = odd ? 3'bx : value;\nendmodule\n",
    ),
    # One bit X throughout, the others right: the output always has known bits.
    "X in one bit": ("adder_4bit", ADDER + "  assign {cout, sum} = (a + b + cin) ^ 5'b0000x;\nendmodule\n"),
    # Every output X: the trick the first guard caught.
    # X until well into the run, then right: the first settling is no excuse past a clock edge or two.
    "X for the first 30 clock edges, then right": (
        "counter_mod6",
        COUNTER + COUNTING + "  integer edges = 0;\n  always @(posedge clk) edges <= edges + 1;\n"
        "  assign count = edges < 30 ? 3'bx : value;\nendmodule\n",
    ),
    "every output X": ("adder_4bit", ADDER + "  assign sum = 4'bx;\n  assign cout = 1'bx;\nendmodule\n"),
    # Right, then X from the 15th clock edge on (after the answer has settled).
    "X after a while": (
        "counter_mod6",
        COUNTER + COUNTING + "  integer edges = 0;\n  always @(posedge clk) edges <= edges + 1;\n"
        "  assign count = edges > 15 ? 3'bx : value;\nendmodule\n",
    ),
}
#: Honest answers the guard lets pass: a synchronous reset (X until the first clock edge, where
#: the reference's asynchronous one is known from the start), and a different structure.
HONEST = {
    "synchronous reset": (
        "counter_mod6",
        "module counter_mod6 (input clk, input rst_n, input en, output reg [2:0] count);\n"
        "  always @(posedge clk)\n    if (!rst_n) count <= 3'd0;\n"
        "    else if (en) count <= (count == 3'd5) ? 3'd0 : count + 3'd1;\nendmodule\n",
    ),
    "behavioural adder": ("adder_4bit", ADDER + "  assign {cout, sum} = a + b + cin;\nendmodule\n"),
}


@pytest.fixture(scope="module")
def problems() -> dict[str, Problem]:
    """The fixture problems by design name, their test benches made blind to X."""
    found = {p.extra["name"]: p for p in load_dataset("rtllm-v2", benchmark_dir=FIXTURES / "rtllm")}
    blind = {}
    for name, (exact, loose) in BLIND.items():
        problem = found[name]
        bench = problem.harness["testbench.v"]
        assert exact in bench
        blind[name] = dataclasses.replace(problem, harness={**problem.harness, "testbench.v": bench.replace(exact, loose)})
    return blind


@pytest.mark.parametrize("version", ["rtllm-v2", "rtllm-v1.1"])
def test_every_fixture_reference_passes_with_the_guard_judging_it(sandbox, version):
    folder = FIXTURES / ("rtllm" if version == "rtllm-v2" else "rtllm-v1.1")
    problems = list(load_dataset(version, benchmark_dir=folder))
    assert problems
    for problem in problems:
        target = problem.targets[0]
        guard = xguard.plan(problem.harness["testbench.v"], problem.reference[target], problem.extra["module"], problem.reference[target])
        assert guard is not None and guard.copy is not None, problem.id  # judged against the reference's copy
        result = FLOW.run(sandbox, problem, {target: problem.reference[target]}, limits=LIMITS)
        assert result.passed and result.reason == "the test bench reported a pass", (problem.id, result.reason)
        assert "xguard" not in result.services[0].log_tail


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_an_answer_leaving_an_output_x_where_the_reference_is_known_fails(sandbox, problems, cheat):
    name, answer = CHEATS[cheat]
    problem = problems[name]
    result = FLOW.run(sandbox, problem, {problem.targets[0]: answer}, limits=LIMITS)
    assert result.official["auto_run"] and result.official["open"], result.official  # the test bench is fooled
    assert not result.passed and result.failure_class == TEST_FAILURE, (result.failure_class, result.reason)
    assert "where the reference's copy, fed the same inputs, was known" in result.reason, result.reason
    assert "xguard" not in result.services[0].log_tail  # the guard's lines reach neither reading


@pytest.mark.parametrize("honest", sorted(HONEST))
def test_an_honest_answer_passes(sandbox, problems, honest):
    name, answer = HONEST[honest]
    problem = problems[name]
    result = FLOW.run(sandbox, problem, {problem.targets[0]: answer}, limits=LIMITS)
    assert result.passed, result.reason


def test_a_reference_that_does_not_build_beside_the_answer_leaves_the_fallback_guard(sandbox, problems):
    """The reference's copy cannot be built (here: a syntax error): the guard falls back to the
    answer's own ports and the weaker rule, which still fails every output X and passes a right answer."""
    problem = problems["adder_4bit"]
    target = problem.targets[0]
    broken = dataclasses.replace(problem, reference={target: ADDER + "  assign sum = ;\nendmodule\n"})
    x_everywhere = FLOW.run(sandbox, broken, {target: CHEATS["every output X"][1]}, limits=LIMITS)
    assert not x_everywhere.passed and "never had a known bit" in x_everywhere.reason, x_everywhere.reason
    right = FLOW.run(sandbox, broken, {target: HONEST["behavioural adder"][1]}, limits=LIMITS)
    assert right.passed, right.reason


def test_the_guard_drops_the_reference_copy_s_own_lines():
    marker = "@@cvdp-xguard-0123@@"
    text = f"a\n{marker}sum\n{marker}{xguard.COPY_LINE}printed by the copy\nb\n"
    assert xguard.split(text, marker) == ("a\nb\n", ["sum"])
