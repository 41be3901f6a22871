"""A check cut short is never a pass (issue 35, item 4), in each benchmark flow, on the made-up
copies, with real simulator runs in the real sandbox.

Each answer here is right, and its test bench prints its pass before the run is cut: the
design hangs in a ``final`` block once the test bench has finished (cut by the flow's own
time limit, shortened here, or by the sandbox's), or floods its output there until the
file-size limit kills the simulator. The benchmarks' own scripts may read such a log as a
pass (``official`` says what they say); the verdict never does. The reference grader's
cases are in ``test_reference_coverage.py``, the CVDP harness's in ``test_runner.py``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cvdp_gym.benchmarks.rtllm import flow as rtllm
from cvdp_gym.benchmarks.verilog_eval_v2 import flow as verilog_eval
from cvdp_gym.data import load_dataset
from cvdp_gym.harness import HarnessRunner
from cvdp_gym.harness.results import HarnessResult
from cvdp_gym.sandbox.base import Limits

pytestmark = pytest.mark.sandbox

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
HANG = "  integer spin;\n  final begin spin = 0; while (1) spin = spin + 1; end\n"
FLOOD = '  integer line;\n  final for (line = 0; line < 100000000; line = line + 1) $display("flood flood flood flood");\n'
AND3 = "module TopModule (input a, input b, input c, output out);\n  assign out = a & b & c;\n{extra}endmodule\n"
AND3_V1 = "\n\tassign out = a & b & c;\n{extra}endmodule\n"
ADDER = (
    "module adder_4bit (input [3:0] a, input [3:0] b, input cin, output [3:0] sum, output cout);\n"
    "  assign {{cout, sum}} = a + b + cin;\n{extra}endmodule\n"
)
#: (flow, how the run is cut) -> the answer's text, its limits.
RUNS = {
    (flow, cut): (answer.format(extra=HANG if cut != "flood" else FLOOD), limits)
    for flow, answer in (("ve2", AND3), ("ve1", AND3_V1), ("rtllm", ADDER))
    for cut, limits in (
        ("sandbox", Limits(wall_s=4)), ("flood", Limits(wall_s=30, file_size_mb=1)), ("own limit", Limits(wall_s=30)),
    )
    if not (flow == "ve1" and cut == "own limit")  # VerilogEval v1's only limit is the run's (the sandbox's)
}


@pytest.fixture(scope="module")
def cut(sandbox) -> dict[tuple[str, str], HarnessResult]:
    """Every run of ``RUNS``, the flows' own limits shortened to 2 s (the real ones are 30 s and 15 s)."""
    problems = {
        "ve2": next(p for p in load_dataset("verilog-eval-v2:spec-to-rtl", benchmark_dir=FIXTURES / "verilog-eval")
                    if p.extra["name"] == "Prob001_and3"),
        "ve1": next(p for p in load_dataset("verilog-eval-v1:human", benchmark_dir=FIXTURES / "verilog-eval-v1")
                    if p.extra["name"] == "and3"),
        "rtllm": next(p for p in load_dataset("rtllm-v2", benchmark_dir=FIXTURES / "rtllm") if p.extra["name"] == "adder_4bit"),
    }
    runner = HarnessRunner(sandbox)

    def run(key: tuple[str, str]) -> HarnessResult:
        text, limits = RUNS[key]
        problem = problems[key[0]]
        return runner.run(problem, {problem.targets[0]: text}, limits=limits)

    own = [key for key in RUNS if key[1] == "own limit"]
    rest = [key for key in RUNS if key not in own]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(rest, pool.map(run, rest), strict=True))
        with pytest.MonkeyPatch.context() as patch:  # module constants: only while these run
            patch.setattr(verilog_eval, "SIM_TIMEOUT_S", 2)
            patch.setattr(rtllm, "OPEN_LIMIT_S", 2.0)
            results.update(zip(own, pool.map(run, own), strict=True))
    return results


@pytest.mark.parametrize("key", sorted(RUNS))
def test_a_run_cut_short_is_never_a_pass(cut, key):
    result = cut[key]
    assert not result.passed, (key, result.reason)
    expected = "resource_limit" if key[1] == "flood" else "timeout"
    assert result.failure_class == expected, (key, result.failure_class, result.reason)


def test_the_benchmarks_own_reading_is_kept_where_it_passes_a_cut_run(cut):
    # RTLLM's auto_run reads "Pass" printed before the file-size limit killed the simulation.
    flooded = cut[("rtllm", "flood")]
    assert flooded.official["compiled"] and flooded.official["auto_run"]
    assert "killed by signal 25" in flooded.reason  # SIGXFSZ
    assert cut[("ve2", "own limit")].official["class"] == "T"  # its Makefile's `timeout` says TIMEOUT
    assert "sandbox" not in cut[("ve2", "own limit")].reason and "sandbox" in cut[("ve2", "sandbox")].reason
    assert cut[("rtllm", "own limit")].reason == "the simulation did not end within the limit"
    assert cut[("ve1", "sandbox")].official["result"] == "timed out"
