"""Feedback from the reference-equivalence grader (``CVDP-Refine-v0``): where the answer first
behaves differently, never the reference's code; graded for real in the sandbox.

What the feedback must say is read from the grader's own result (``official``), which the
flow's tests check against models of the designs; here the question is what the model is
shown, and what it is not.
"""

from __future__ import annotations

import pytest

from cvdp_gym.data.problems import Dataset, Problem
from cvdp_gym.envs.refine import RefineEnv
from cvdp_gym.grading import Grader
from cvdp_gym.grading.feedback import feedback_text
from tests.cvdp_gym.equivalence.test_reference_flow import (
    DETECTOR,
    MATCHER,
    MATCHER_RARE,
    WRONG_TRANSITION,
)

pytestmark = pytest.mark.sandbox



def problem(name: str, reference: str, top: str, **equivalence) -> Problem:
    target = f"{top}.sv"
    return Problem(
        id=f"reference-set.{name}", categories=(), agentic=False,
        prompt=f"Write the Verilog module {top}; answer with the complete module in a ```verilog block.",
        context={}, targets=(target,), harness={}, reference={target: reference}, benchmark="reference-set",
        grader="reference", system_message="You are a Verilog RTL designer.",
        extra={"name": name, "top": top, "equivalence": equivalence},
    )


P_DETECTOR = problem("detector", DETECTOR, "detector")
P_MATCHER = problem("matcher", MATCHER, "matcher")


@pytest.fixture(scope="module")
def grader(runner):
    return Grader(runner, cache=None)


@pytest.fixture(scope="module")
def transition(grader):
    return grader.grade_files(P_DETECTOR, {"detector.sv": WRONG_TRANSITION})


def reference_lines(source: str) -> list[str]:
    """The reference's own lines worth recognising (longer than a keyword)."""
    return [line.strip() for line in source.splitlines() if len(line.strip()) > 10]


def assert_no_reference_code(text: str, source: str) -> None:
    for line in reference_lines(source):
        assert line not in text, line
    for word in ("localparam", "ONEZERO", "always", "assign", "case ("):
        assert word not in text


def test_a_mismatch_shows_the_first_cycle_its_inputs_and_expected_vs_got(transition):
    assert transition.failure_class == "test_failure"
    first = transition.official["simulation"]["first"]
    text = feedback_text(transition, P_DETECTOR, "interface")
    assert "does not behave as specified" in text
    assert f"the first is cycle {first['cycle']}" in text
    assert f"  cycle {first['cycle']}: reset={first['inputs']['reset']} bit_in={first['inputs']['bit_in']}" in text
    for row in first["history"][-5:]:  # the cycles that led there
        assert f"  cycle {row['cycle']}: " in text
    for name, value in first["expected"].items():
        assert f"  {name}: expected {value}, got {first['got'][name]}" in text
    assert "Mismatching cycles per output" not in text  # counts come with `tests`
    assert_no_reference_code(text, DETECTOR)


def test_feedback_levels(transition):
    counts = transition.official["simulation"]["mismatches"]
    tests = feedback_text(transition, P_DETECTOR, "tests")
    assert f"Mismatching cycles per output: found: {counts['found']}" in tests
    compile_only = feedback_text(transition, P_DETECTOR, "compile")
    assert "cycle" not in compile_only and "does not behave as specified" in compile_only


def test_feedback_is_bounded(transition):
    text = feedback_text(transition, P_DETECTOR, "tests", max_chars=200)
    assert len(text) <= 200 and text.endswith("[... truncated]")


def test_a_counterexample_only_the_formal_stage_found_shows_its_inputs(grader):
    result = grader.grade_files(P_MATCHER, {"matcher.sv": MATCHER_RARE})
    assert result.failure_class == "test_failure"
    assert result.official["simulation"]["verdict"] == "match"
    text = feedback_text(result, P_MATCHER)
    assert "A formal check found inputs for which the outputs differ" in text
    assert "  step 1: a=16'h1234 b=16'h4321" in text
    assert "  eq: expected 1'b0, got 1'b1" in text
    assert_no_reference_code(text, MATCHER)


def test_interface_and_build_errors(grader):
    ports = grader.grade_files(P_DETECTOR, {"detector.sv": DETECTOR.replace("input bit_in", "input [1:0] bit_in")})
    text = feedback_text(ports, P_DETECTOR)
    assert ports.failure_class == "interface_error"
    assert "do not match the specified interface" in text
    assert "- detector: port bit_in is 2 bit(s) wide, expected 1" in text
    broken = grader.grade_files(P_DETECTOR, {"detector.sv": DETECTOR.replace("endmodule", "wire w = ;\nendmodule")})
    text = feedback_text(broken, P_DETECTOR)
    assert broken.failure_class == "build_error" and "detector.sv:" in text
    assert_no_reference_code(text, DETECTOR)


def test_a_refine_episode_shows_the_mismatch_then_passes(grader):
    env = RefineEnv(Dataset([P_DETECTOR], source="made-up"), grader=grader, max_attempts=3)
    env.reset()
    feedback, reward, done, _, info = env.step(f"```verilog\n{WRONG_TRANSITION}```")
    assert not done and reward == 0.0 and info["failure_class"] == "test_failure"
    assert "the first is cycle" in feedback and "found: expected" in feedback
    assert_no_reference_code(feedback, DETECTOR)
    feedback, reward, done, _, info = env.step(f"```verilog\n{DETECTOR}```")
    assert done and info["passed"] and feedback == ""
    env.close()
