"""VerilogEval v2, v1 and ChipBench: a pass needs a test bench that checked at least one sample.

Real runs of each flow in the real sandbox on the made-up copies under
``tests/fixtures/benchmarks``. A simulation that ends before the test bench's first sample
prints ``Mismatches: 0 in 0 samples``, which the benchmark's own script reads as a pass
(``official``, kept exactly as the script reads it) and the verdict does not; nor is a log
without the test bench's count line a pass. An answer cannot end the simulation itself (the
answer gate refuses every ending task: ``docs/security.md``), so each test bench here is
changed to end at time 0 (``initial $finish;`` in its ``tb``), as a broken stimulus would.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.data.problems import Problem
from cvdp_gym.harness.results import TEST_FAILURE

pytestmark = pytest.mark.sandbox

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
ROOT = "module tb();"
COUNT = '$display("Mismatches: %1d in %1d samples", stats1.errors, stats1.clocks);'


def _problems() -> dict[str, Problem]:
    ve2 = load_dataset("verilog-eval-v2", benchmark_dir=FIXTURES / "verilog-eval")["verilog-eval-v2.spec-to-rtl.Prob001_and3"]
    ve1 = load_dataset("verilog-eval-v1", benchmark_dir=FIXTURES / "verilog-eval-v1")["verilog-eval-v1.human.and3"]
    chipbench = load_dataset("chipbench", benchmark_dir=FIXTURES / "chipbench")["chipbench.self_contain.Prob001_and3"]
    return {"verilog-eval-v2": ve2, "verilog-eval-v1": ve1, "chipbench": chipbench}


PROBLEMS = _problems()


def _with_test_bench(problem: Problem, old: str, new: str) -> Problem:
    """``problem`` with its test bench's ``old`` text replaced by ``new``."""
    name = next(path for path in problem.harness if path.endswith("_test.sv"))
    bench = problem.harness[name]
    assert old in bench, problem.id
    return dataclasses.replace(problem, harness={**problem.harness, name: bench.replace(old, new, 1)})


def _official_pass(result) -> bool:
    return bool(result.official["passed"])


@pytest.mark.parametrize("flow", sorted(PROBLEMS))
def test_the_reference_passes_on_the_samples_its_test_bench_checked(runner, flow):
    problem = PROBLEMS[flow]
    result = runner.run(problem, dict(problem.reference))
    assert result.passed and _official_pass(result), result.reason
    assert result.tests.total > 1 and result.tests.passed == result.tests.total  # the samples it checked


@pytest.mark.parametrize("flow", sorted(PROBLEMS))
def test_a_simulation_that_checked_no_sample_is_never_a_pass(runner, flow):
    problem = _with_test_bench(PROBLEMS[flow], ROOT, ROOT + "\n\tinitial $finish;")
    result = runner.run(problem, dict(problem.reference))
    assert _official_pass(result), result.official  # the benchmark's own script passes it
    assert "Mismatches: 0 in 0 samples" in result.services[0].log_tail
    assert not result.passed and result.failure_class == TEST_FAILURE, (result.failure_class, result.reason)
    assert "the test bench checked 0 samples" in result.reason, result.reason
    assert result.tests.passed == 0


@pytest.mark.parametrize("flow", sorted(PROBLEMS))
def test_a_log_without_the_test_bench_s_count_is_never_a_pass(runner, flow):
    problem = _with_test_bench(PROBLEMS[flow], COUNT, '$display("done");')
    result = runner.run(problem, dict(problem.reference))
    assert not _official_pass(result) and not result.passed, result.official
    assert "the test bench printed no `Mismatches: N in M samples` line" in result.reason, result.reason
