"""The quality stage through the environment: a passing answer measured against its reference.

A made-up training-set problem (an 8-bit counter), graded by equivalence with the reference
in the real sandbox, then measured by the real ASIC flow on the test liberty (Yosys + ABC,
OpenSTA from the quality tools folder): the reference itself scores 0.5, a correct design
that keeps the count twice scores less (more area and power), a wrong design passes nothing
and gets no quality part. The measurements are cached:
the second episode on the same answer runs no flow.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import cvdp_gym  # noqa: F401  (registers the environments)
from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.grading.rewards import MAX_SHAPED, QUALITY_REWARD
from cvdp_gym.toolchain import quality_tools
from tests.support import missing

pytestmark = [pytest.mark.sandbox]

LIBERTY = "tests/fixtures/quality/tiny.lib"
REFERENCE = """module cnt8(input clk, input rst, input en, output reg [7:0] q);
  always @(posedge clk)
    if (rst) q <= 8'd0;
    else if (en) q <= q + 8'd1;
endmodule
"""
#: The same count kept twice and merged: equivalent at every cycle, twice the registers.
DOUBLED = """module cnt8(input clk, input rst, input en, output [7:0] q);
  reg [7:0] a, b;
  always @(posedge clk)
    if (rst) begin a <= 8'd0; b <= 8'd0; end
    else if (en) begin a <= a + 8'd1; b <= b + 8'd1; end
  assign q = a | b;
endmodule
"""
WRONG = REFERENCE.replace("q + 8'd1", "q + 8'd2")


def answer(code: str) -> str:
    return f"```verilog\n{code}```"


@pytest.fixture(scope="module")
def counter_env(tmp_path_factory, toolchain):
    if not quality_tools.ready():
        missing("the quality tools (OpenSTA, nextpnr) are not installed: run cvdp-gym toolchain install")
    folder = tmp_path_factory.mktemp("quality-env")
    rows = folder / "adders.jsonl"
    rows.write_text(json.dumps({"id": "cnt8", "spec": "An 8-bit counter with synchronous reset and enable.", "reference": REFERENCE}) + "\n")
    env = gym.make(
        "CVDP-SingleShot-v0", dataset=f"reference-set?path={rows}", reward="quality",
        quality={"flow": "asic", "liberty": LIBERTY}, cache=GradeCache(folder / "grades.sqlite"),
    )
    yield env
    env.close()


def play(env, code: str) -> tuple[float, dict]:
    env.reset(options={"problem_id": "reference-set.cnt8"})
    _, reward, _, _, info = env.step(answer(code))
    return reward, info


@pytest.fixture(scope="module")
def played(counter_env):
    return {name: play(counter_env, code) for name, code in (("reference", REFERENCE), ("doubled", DOUBLED), ("wrong", WRONG))}


def test_the_reference_scores_one_half_of_the_quality_part(played):
    reward, info = played["reference"]
    quality = info["quality"]
    assert info["passed"] and quality["flow"] == "asic" and quality["score"] == 0.5
    assert quality["ratios"]["area"] == 1.0 and quality["candidate"] == quality["reference"]
    metrics = quality["candidate"]["metrics"]
    assert metrics["area_um2"] > 0 and metrics["cells"] > 0 and metrics["delay_ns"] > 0
    assert reward == pytest.approx(MAX_SHAPED + QUALITY_REWARD * 0.5)


def test_a_correct_but_larger_design_earns_less_than_the_reference(played):
    reference_reward, _ = played["reference"]
    reward, info = played["doubled"]
    quality = info["quality"]
    assert info["passed"]  # equivalent to the reference: the tests pass
    design, reference = quality["candidate"]["metrics"], quality["reference"]["metrics"]
    assert design["area_um2"] > 1.5 * reference["area_um2"] and design["cells"] > reference["cells"]
    assert quality["ratios"]["area"] > 1.5 and quality["score"] < 0.5
    assert reward < reference_reward


def test_a_wrong_design_gets_no_quality(played):
    reward, info = played["wrong"]
    assert not info["passed"] and info["quality"] == {}
    assert reward < MAX_SHAPED


def test_a_design_measured_once_is_measured_from_the_cache(counter_env, played):
    stage = counter_env.unwrapped.quality
    key_count = len(stage.cache)
    _, info = play(counter_env, DOUBLED)
    assert len(stage.cache) == key_count
    assert info["quality"]["score"] == played["doubled"][1]["quality"]["score"]
