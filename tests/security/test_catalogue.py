"""The red-team catalogue: every attack of the threat model against every flow, each earning nothing.

``docs/security.md`` lists each row. The flows: VerilogEval v2 and v1, RTLLM (its made-up
copies under ``tests/fixtures/benchmarks``), the reference-equivalence grader (a made-up
training item) and a CVDP cocotb harness (a bundled problem). Every answer is a wrong design
plus the attack, graded by the real ``Grader`` on the real simulators; each must get
``passed`` False and no more reward than the wrong design alone, whatever the benchmark's
own reading says, and an attack the static check names (``reach_in``) no more than a build
error (0.1 under ``shaped``: the answer was extractable, nothing more). Rows that name a
test bench are left out of the cocotb flow, which compiles none beside the answer. The deeper tests of each attack live beside the code: ``tests/cvdp_gym/harness/
test_reach_in_flows.py`` (every reach-in on VerilogEval v2), ``tests/security/test_red_team.py``
(CVDP's results files and summaries), ``test_host_unchanged.py`` (the host).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.data.problems import Problem
from cvdp_gym.equivalence.ports import read_design
from cvdp_gym.grading import Grader
from cvdp_gym.grading.feedback import feedback_text
from cvdp_gym.grading.rewards import FORMAT_REWARD, shaped
from cvdp_gym.harness import HarnessRunner
from cvdp_gym.harness.runner import RunOptions
from cvdp_gym.sandbox.base import Limits
from tests.security.attack_matrix import ALU
from tests.security.attack_matrix import WRONG as MATRIX_WRONG

pytestmark = pytest.mark.sandbox

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
#: Each flow's wrong answer (it builds, and fails): the attacks ride on it (the attack
#: matrix's, which has more flows).
WRONG = {flow: MATRIX_WRONG[flow] for flow in ("ve2", "ve1", "rtllm", "reference")}
#: What each flow's attacks name: its pass words, its test bench's root, the module it
#: compares against, a verdict signal and the instance beside the answer's.
NAMES = {
    "ve2": {"pass": "Mismatches: 0 in 20 samples", "tb": "tb", "ref": "RefModule", "signal": "tb_match", "instance": "good1"},
    "ve1": {"pass": "Mismatches: 0 in 20 samples", "tb": "tb", "ref": "RefModule", "signal": "tb_match", "instance": "good1"},
    "rtllm": {"pass": "===========Your Design Passed===========", "tb": "adder_4bit_tb", "ref": "adder_4bit_tb",
              "signal": "error", "instance": "uut"},
    "reference": {"pass": "PASS", "tb": "tb", "ref": "alu_ref", "signal": "mismatches", "instance": "golden"},
    "cvdp": {"pass": "TESTS=9 PASS=9 FAIL=0 SKIP=0"},
}
#: Each attack, added to a flow's wrong answer (before its last ``endmodule``).
ROWS: dict[str, str] = {
    "prints the benchmark's pass line": '  initial begin #1 $display("{pass}"); end',
    "floods the output with pass lines": '  always #1 $display("{pass}");',
    "writes the flow's logs": (
        '  integer fd;\n  initial begin fd = $fopen("sim.log", "w"); $fdisplay(fd, "{pass}"); $fclose(fd);'
        ' fd = $fopen("output.txt", "w"); $fdisplay(fd, "{pass}"); $fclose(fd); end'
    ),
    "ends the simulation early": "  initial $finish;",
    "loops forever": "  initial forever begin end",
    "instantiates the test bench's or the reference's module": "  {ref} stolen ();",
    "forces a test-bench signal": "  initial force {tb}.{signal} = 0;",
    "names the test bench upward": "  wire stolen = {instance}.{signal};",
    "tells the test bench apart by its names": '  initial begin #1 if ($sformatf("%m") == "{tb}.top_module1") $display("{pass}"); end',
    "reads its own process's memory": '  integer fd;\n  initial fd = $fopen("/proc/self/mem", "r");',
}
#: Rows that name a test bench: a cocotb harness has none beside the answer (its own rows are
#: in test_red_team.py: results files, summaries, early ends).
NAMES_A_TEST_BENCH = {
    "instantiates the test bench's or the reference's module", "forces a test-bench signal",
    "names the test bench upward", "tells the test bench apart by its names",
}
#: The rows a static check names (``reach_in``): they earn no more than a build error. (Telling
#: the test bench apart by ``%m`` is no reach: its names are random, so the design only fails.)
REACH_IN = (NAMES_A_TEST_BENCH - {"tells the test bench apart by its names"}) | {"ends the simulation early", "reads its own process's memory"}
FLOWS = ("ve2", "ve1", "rtllm", "reference", "cvdp")
CASES = [(f, r) for f in FLOWS for r in ROWS if not (f == "cvdp" and r in NAMES_A_TEST_BENCH)]


@pytest.fixture(scope="module")
def grader(sandbox):
    return Grader(HarnessRunner(sandbox), cache=None)


@pytest.fixture(scope="module")
def impatient(sandbox):
    """The grader for the endless loops: a 3 s wall-time limit per run (they end there)."""
    return Grader(HarnessRunner(sandbox, RunOptions(limits=Limits(wall_s=3))), cache=None)


@pytest.fixture(scope="module")
def flows() -> dict[str, tuple[Problem, dict[str, str]]]:
    """Each flow's problem and its wrong answer."""
    ve2 = {p.extra["name"]: p for p in load_dataset("verilog-eval-v2", benchmark_dir=FIXTURES / "verilog-eval") if p.task == "spec-to-rtl"}
    ve1 = load_dataset("verilog-eval-v1", benchmark_dir=FIXTURES / "verilog-eval-v1")["verilog-eval-v1.human.and3"]
    rtllm = load_dataset("rtllm-v2", benchmark_dir=FIXTURES / "rtllm")["rtllm-v2.adder_4bit"]
    # The comparison RTLLM v2.0's comparator test benches use: `!=` in an `if`, which an X slips through.
    bench = rtllm.harness["testbench.v"].replace(
        "error = ({cout, sum} !== expected) ? error + 1 : error;", "if ({cout, sum} != expected) error = error + 1;"
    )
    assert bench != rtllm.harness["testbench.v"]
    rtllm = dataclasses.replace(rtllm, harness={**rtllm.harness, "testbench.v": bench})
    reference = Problem(
        id="reference-set.alu", categories=(), agentic=False, prompt="Write alu.", context={}, targets=("alu.sv",),
        harness={}, reference={"alu.sv": ALU}, benchmark="reference-set", grader="reference", toolchain="cvdp-sim",
        extra={"name": "alu", "top": "alu", "set": "made-up", "checked_reference": True, "equivalence": {}},
    )
    cvdp = load_dataset("bundled")["cvdp_gym_gray_converter_0001"]
    bug = next(c for c in bundled_candidates() if c.problem_id == cvdp.id and c.name == "functional_bug")
    found = {"ve2": ve2["Prob001_and3"], "ve1": ve1, "rtllm": rtllm, "reference": reference}
    return {**{f: (p, {p.targets[0]: WRONG[f]}) for f, p in found.items()}, "cvdp": (cvdp, dict(bug.files))}


@pytest.fixture(scope="module")
def baseline(grader, flows) -> dict[str, float]:
    """Each flow's wrong answer's own reward: what an attack riding on it may not raise."""
    return {flow: shaped(grader.grade_files(problem, files)) for flow, (problem, files) in flows.items()}


def _with(files: dict[str, str], addition: str) -> dict[str, str]:
    """``files`` with ``addition`` before the last ``endmodule`` of each design file."""
    out = {}
    for path, text in files.items():
        head, sep, tail = text.rpartition("endmodule")
        out[path] = f"{head}{addition}\n{sep}{tail}" if sep else text
    return out


@pytest.mark.parametrize(("flow", "row"), CASES, ids=[f"{f}:{r.replace(' ', '-')}" for f, r in CASES])
def test_an_attack_earns_nothing(grader, impatient, flows, baseline, flow, row):
    problem, wrong = flows[flow]
    files = _with(wrong, ROWS[row].format(**NAMES[flow]))
    result = (impatient if row == "loops forever" else grader).grade_files(problem, files)
    reward = shaped(result)
    assert not result.passed and reward <= baseline[flow], (result.failure_class, result.reason)
    if row in REACH_IN and flow != "cvdp":
        assert result.failure_class == "reach_in" and reward <= FORMAT_REWARD, (result.failure_class, result.reason)
        assert "reaches outside itself" in feedback_text(result, problem)  # what a refine episode is told


TOPS = {"ve2": "TopModule", "ve1": "top_module", "rtllm": "adder_4bit", "reference": "alu"}


@pytest.mark.parametrize("flow", ["ve2", "ve1", "rtllm", "reference"])
@pytest.mark.parametrize("value", ["'x", "'z"])
def test_driving_every_output_x_or_z_earns_nothing(grader, flows, flow, value):
    """The X trick: a test bench whose ``!=`` takes X as equal (RTLLM's, here) passes it by
    its own reading; the verdict here does not (``harness/xguard.py``)."""
    problem, wrong = flows[flow]
    target, text = next(iter(wrong.items()))
    # VerilogEval v1's answer completes the prompt's header; the others carry their own.
    header = "" if flow == "ve1" else text.split(";", 1)[0] + ";\n"
    ports = read_design((problem.prompt if flow == "ve1" else header) + "\nendmodule\n", TOPS[flow]).ports
    body = "".join(f"  assign {port.name} = {value};\n" for port in ports if port.direction == "output")
    result = grader.grade_files(problem, {target: header + body + "endmodule\n"})
    assert not result.passed and shaped(result) < 1.0, (result.failure_class, result.reason)
    if flow == "rtllm" and value == "'x":
        assert result.official["auto_run"], result.official  # the benchmark's own reading is fooled
