"""The compiled image's word: with the text reading of the gate switched off, a system task
Icarus compiled from the answer's own lines still makes it ``reach_in`` (the gate's second
reading, for where slang and Icarus could parse one text differently)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cvdp_gym.benchmarks.rtllm import flow as rtllm_flow
from cvdp_gym.benchmarks.verilog_eval_v1 import flow as v1_flow
from cvdp_gym.benchmarks.verilog_eval_v2 import flow as v2_flow
from cvdp_gym.data import load_dataset
from cvdp_gym.gate import Scan
from cvdp_gym.gate.compiled_calls import compiled_findings
from cvdp_gym.sandbox import Limits

pytestmark = pytest.mark.sandbox

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
ENDING = "  initial #1 $finish_and_return(0);\n"


@pytest.fixture
def text_gate_off(monkeypatch):
    for module in (v2_flow, v1_flow, rtllm_flow):
        monkeypatch.setattr(module, "check", lambda *args, **kwargs: Scan())


def _problems():
    ve2 = load_dataset("verilog-eval-v2", benchmark_dir=FIXTURES / "verilog-eval")["verilog-eval-v2.spec-to-rtl.Prob001_and3"]
    ve1 = load_dataset("verilog-eval-v1", benchmark_dir=FIXTURES / "verilog-eval-v1")["verilog-eval-v1.human.and3"]
    rtllm = load_dataset("rtllm-v2", benchmark_dir=FIXTURES / "rtllm")["rtllm-v2.adder_4bit"]
    return {
        "ve2": (v2_flow.VerilogEvalV2Flow(), ve2, "module TopModule (input a, input b, input c, output out);\n  assign out = a | b;\n" + ENDING + "endmodule\n"),
        "ve1": (v1_flow.VerilogEvalV1Flow(), ve1, "  assign out = a | b;\n" + ENDING + "endmodule\n"),
        "rtllm": (rtllm_flow.RtllmFlow(), rtllm, "module adder_4bit(input [3:0] a, input [3:0] b, input cin, output [3:0] sum, output cout);\n"
                  "  assign {cout, sum} = a - b;\n" + ENDING + "endmodule\n"),
    }


@pytest.mark.parametrize("name", ["ve2", "ve1", "rtllm"])
def test_a_call_icarus_compiled_is_named_when_the_text_reading_is_off(sandbox, text_gate_off, name):
    flow, problem, answer = _problems()[name]
    result = flow.run(sandbox, problem, {problem.targets[0]: answer}, limits=Limits(wall_s=60))
    notes = "\n".join(n for s in result.services for n in s.notes)
    assert result.failure_class == "reach_in" and "(Icarus compiled it)" in notes, (result.failure_class, result.reason)
    assert "$finish_and_return" in notes
    reference = flow.run(sandbox, problem, dict(problem.reference), limits=Limits(wall_s=60))
    assert reference.passed, reference.reason  # the test bench's own calls are its own


def test_only_the_answer_s_lines_count():
    calls = (
        '    %vpi_call/w 3 30 "$finish" {0 0 0};\n    %vpi_call/w 4 2 "$display", "x" {0 0 0};\n'
        'L_0x1 .sfunc 4 3 "$fopenr", "v32";\n    %vpi_func 4 9 "$system" 32 {0 0 0};\n'
        ':file_names 5;\n    "N/A";\n    "<interactive>";\n    "-";\n    "test.sv";\n    "answer.sv";\n'
    )
    assert [(f.path, f.line) for f in compiled_findings(calls, ["answer.sv"])] == [("answer.sv", 3), ("answer.sv", 9)]
    assert [f.line for f in compiled_findings(calls, ["answer.sv"], first_lines={"answer.sv": 5})] == [5]
    assert compiled_findings(calls, ["other.sv"]) == [] and compiled_findings("", ["answer.sv"]) == []
