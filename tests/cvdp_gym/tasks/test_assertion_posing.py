"""The assertion task's posing: the specification and the design's header, never its body.

Pure (no sandbox): the prompt of a bundled CVDP problem and of the made-up counter, and the
agentic posing's files, for a design whose file is under ``rtl/`` (as a CVDP problem's is)
and for one at the top (as a VerilogEval problem's is).
"""

from __future__ import annotations

import dataclasses

import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.tasks.design import DesignUnderTest
from cvdp_gym.tasks.names import ASSERTION
from cvdp_gym.tasks.posing import task_problem
from tests.cvdp_gym.tasks.verification_problems import COUNTER, counter_problem


@pytest.mark.parametrize("target", ["rtl/counter.sv", "counter.sv"])
def test_the_agentic_posing_shows_no_design(target):
    problem = dataclasses.replace(counter_problem(), targets=(target,), reference={target: COUNTER})
    posed = task_problem(problem, ASSERTION, agentic=True)
    assert posed is not None
    assert list(posed.context) == ["docs/specification.md"], sorted(posed.context)
    assert all(COUNTER.strip() not in text for text in posed.context.values())
    assert "assign wrap" not in posed.prompt
    assert posed.targets == ("verif/properties.sv",)


def test_the_prompt_shows_the_specification_and_the_header_never_the_body():
    posed = task_problem(counter_problem(), ASSERTION)
    assert posed is not None
    assert "module counter(input clk, input rst, input en, output reg [3:0] q, output wrap);" in posed.prompt
    assert "up-counter" in posed.prompt  # the specification
    for line in ("assign wrap", "q <= q + 4'd1", "always @(posedge clk)", "endmodule"):
        assert line not in posed.prompt, line
    assert "may read only its ports" in posed.prompt


def test_no_bundled_assertion_prompt_holds_its_design_body():
    for posed in load_dataset("bundled#assertion"):
        design = DesignUnderTest.from_dict(posed.extra["design"])
        body = design.text.split(");", 1)[1].strip()  # everything after the header
        lines = [line.strip() for line in body.splitlines() if len(line.strip()) > 12 and not line.strip().startswith(("input", "output", "parameter", "//"))]
        assert lines and body not in posed.prompt, posed.id
        spec, shown = posed.prompt.split("## The design under test", 1)
        # a line the specification itself quotes is the specification's; no other line is shown
        assert not [line for line in lines if line in shown and line not in spec], posed.id


def test_the_env_pays_nothing_for_a_property_that_reads_the_designs_internals(toolchain):
    import gymnasium

    import cvdp_gym  # noqa: F401  (registers the environments)
    from cvdp_gym.data import Dataset
    from tests.cvdp_gym.tasks.test_assertions import PIPE, PIPE_RESTATING
    from tests.cvdp_gym.tasks.verification_problems import fenced

    problem = dataclasses.replace(counter_problem(), id="made-up.pipe", targets=("pipe.sv",), reference={"pipe.sv": PIPE})
    env = gymnasium.make("RTL-Assertion-v0", dataset=Dataset([problem]), cache=False, harness_seed=3)
    prompt, _ = env.reset(options={"problem_id": "made-up.pipe.assertion"})
    assert "out_r" not in prompt and "module pipe(input clk, input rst, input [3:0] d, output [3:0] q);" in prompt
    _, reward, terminated, _, info = env.step(fenced(PIPE_RESTATING, "systemverilog"))
    env.close()
    assert terminated and reward == 0.0 and info["failure_class"] == "reach_in", info["reason"]
    assert "`stage`" in info["reason"] and "inside the design" in info["reason"]
