"""``verdict="testbench+reference"``: a test-bench pass is kept only when the answer is
equivalent to the problem's reference; ``official`` and the default verdict are untouched.

On the made-up RTLLM copy: an adder wrong on one input of 512 passes its test bench (100
random vectors) and is caught by the reference; the reference itself passes both ways.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import gymnasium as gym
import pytest

import cvdp_gym  # noqa: F401  (registers the environments)
from cvdp_gym.data import Dataset, load_dataset
from cvdp_gym.errors import ConfigError
from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.grading import Grader, make_reward
from cvdp_gym.grading.backed import (
    BACKED,
    TESTBENCH,
    check_verdict,
    equivalence,
    reference_check,
    require_references,
)
from tests.support import RTLLM_COPY, WRONG_ADDER

pytestmark = pytest.mark.sandbox

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
RTLLM = load_dataset("rtllm-v2", benchmark_dir=RTLLM_COPY)
ADDER = RTLLM["rtllm-v2.adder_4bit"]


@pytest.fixture(scope="module")
def graded(runner, tmp_path_factory):
    """The wrong adder and the reference under both verdicts, through one cached grader."""
    cache = GradeCache(tmp_path_factory.mktemp("backed") / "grades.sqlite")
    grader = Grader(runner, cache=cache)
    wrong = {ADDER.targets[0]: WRONG_ADDER}
    return {
        (name, verdict): grader.grade_files(ADDER, files, verdict=verdict)
        for name, files in (("wrong", wrong), ("reference", ADDER.reference))
        for verdict in (TESTBENCH, BACKED)
    } | {"again": grader.grade_files(ADDER, wrong, verdict=BACKED)}


def test_a_wrong_design_its_test_bench_passes_is_not_rewarded_when_backed(graded):
    bench, backed = graded[("wrong", TESTBENCH)], graded[("wrong", BACKED)]
    assert bench.passed and not bench.reference_check  # the test bench alone rewards it
    assert not backed.passed and backed.failure_class == "not_equivalent" and not backed.excluded
    assert backed.reference_check["verdict"] == "different" and backed.reference_check["simulation"] == "mismatch"
    same = ("compiled", "auto_run", "open", "rule")  # the benchmark's own reading, unchanged
    assert [backed.official[k] for k in same] == [bench.official[k] for k in same] and backed.official["auto_run"]
    for kind in ("shaped", "partial"):  # no more than a design that compiles and fails
        assert make_reward(kind)(backed) == pytest.approx(0.4)
    assert make_reward("binary")(backed) == 0.0


def test_the_reference_passes_both_ways_and_the_cache_keeps_the_verdicts_apart(graded):
    assert graded[("reference", TESTBENCH)].passed
    reference = graded[("reference", BACKED)]
    assert reference.passed and reference.reference_check["verdict"] == "equivalent"
    again = graded["again"]  # the same answer under the backed verdict: its own cache entry
    assert again.cached and not again.passed and again.failure_class == "not_equivalent"
    assert not graded[("wrong", TESTBENCH)].cached


def test_an_answer_its_test_bench_fails_costs_no_reference_check(runner):
    broken = ADDER.reference[ADDER.targets[0]].replace("cin", "1'b0", 1)
    result = Grader(runner, cache=None, verdict=BACKED).grade_files(ADDER, {ADDER.targets[0]: broken})
    assert not result.passed and result.failure_class != "not_equivalent" and result.reference_check == {}


def test_a_problem_without_a_reference_is_labelled_never_passed(runner):
    bare = dataclasses.replace(ADDER, reference=None)
    result = Grader(runner, cache=None, verdict=BACKED).grade_files(bare, ADDER.reference)
    assert not result.passed and result.failure_class == "no_reference" and result.excluded
    assert result.reference_check["verdict"] == "no_reference"
    with pytest.raises(ConfigError, match="none of these 1 has one"):
        require_references([bare])
    with pytest.raises(ConfigError, match="has one"):
        gym.make("RTL-SingleShot-v0", dataset=Dataset([bare], source="made-up"), cache=False, verdict=BACKED)


def test_the_environment_takes_the_option_and_reports_the_check(toolchain):
    env = gym.make("RTL-SingleShot-v0", dataset="rtllm-v2", benchmark_dir=RTLLM_COPY, cache=False, verdict=BACKED)
    env.reset(seed=0, options={"problem_id": ADDER.id})
    _, reward, _, _, info = env.step(f"```verilog\n{WRONG_ADDER}```")
    assert (info["passed"], info["failure_class"], reward) == (False, "not_equivalent", pytest.approx(0.4))
    assert info["reference_check"]["verdict"] == "different" and info["official"]["auto_run"]
    env.close()


def test_each_benchmark_kind_gets_a_reference_twin(runner):
    """VerilogEval v1's answers follow its module header; a CVDP problem's sources are joined
    in the harness's order; a training set's problem is its own check."""
    v1 = load_dataset("verilog-eval-v1:human", benchmark_dir=FIXTURES / "verilog-eval-v1").problems[0]
    check = reference_check(v1)
    body = v1.reference[v1.targets[0]]
    assert check.answer({v1.targets[0]: body})[check.twin.targets[0]].startswith(v1.extra["header"])
    assert check.twin.extra["top"] == "top_module" and check.twin.grader == "reference"
    uart = load_dataset("bundled")["cvdp_gym_uart_tx_0001"]
    check = reference_check(uart)
    joined = check.twin.reference[check.twin.targets[0]]
    assert check.twin.extra["top"] == "uart_tx" and "module baud_gen" in joined and "module uart_tx" in joined
    assert runner.run(check.twin, check.answer(uart.reference)).passed
    training = load_dataset(f"reference-set?path={FIXTURES.parent / 'training' / 'generic.jsonl'}").problems[0]
    assert reference_check(training).same


def test_what_a_reference_verdict_proves():
    """The reference grader's pass proves equivalence (it passes only what a stage decided); a
    difference is a mismatch, a counterexample or other ports; anything else is undecided."""
    assert equivalence(True, None) == "equivalent"
    assert equivalence(False, "test_failure") == "different"
    assert equivalence(False, "interface_error") == "different"
    for failure in ("timeout", "unsupported", "build_error", "harness_error", "undecided"):
        assert equivalence(False, failure) == "undecided"
    with pytest.raises(ConfigError, match="unknown verdict"):
        check_verdict("reference-only")
