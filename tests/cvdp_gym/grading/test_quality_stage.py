"""The quality stage through the environment: a passing answer measured against its reference.

A made-up training-set problem (a 16-bit adder whose reference is one ``+``), graded by
equivalence with the reference in the real sandbox, then measured by the real ASIC flow on
the test liberty (Yosys + ABC, OpenSTA from the quality tools folder): the reference itself
scores 0.5, a correct ripple-carry adder built from full-adder cells scores less (a longer
path), a wrong design passes nothing and gets no quality part. The measurements are cached:
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
REFERENCE = """module add16(input [15:0] a, input [15:0] b, input ci, output [15:0] s, output co);
  assign {co, s} = a + b + ci;
endmodule
"""
RIPPLE = """module add16(input [15:0] a, input [15:0] b, input ci, output [15:0] s, output co);
  wire [16:0] c;
  assign c[0] = ci;
  genvar i;
  generate for (i = 0; i < 16; i = i + 1) begin : bit_
    assign s[i] = a[i] ^ b[i] ^ c[i];
    assign c[i + 1] = (a[i] & b[i]) | (c[i] & (a[i] ^ b[i]));
  end endgenerate
  assign co = c[16];
endmodule
"""
WRONG = REFERENCE.replace("a + b + ci", "a - b + ci")


def answer(code: str) -> str:
    return f"```verilog\n{code}```"


@pytest.fixture(scope="module")
def adder_env(tmp_path_factory, toolchain):
    if not quality_tools.ready():
        missing("the quality tools (OpenSTA, nextpnr) are not installed: run cvdp-gym toolchain install")
    folder = tmp_path_factory.mktemp("quality-env")
    rows = folder / "adders.jsonl"
    rows.write_text(json.dumps({"id": "add16", "spec": "A 16-bit adder with carry in and carry out.", "reference": REFERENCE}) + "\n")
    env = gym.make(
        "CVDP-SingleShot-v0", dataset=f"reference-set?path={rows}", reward="quality",
        quality={"flow": "asic", "liberty": LIBERTY}, cache=GradeCache(folder / "grades.sqlite"),
    )
    yield env
    env.close()


def play(env, code: str) -> tuple[float, dict]:
    env.reset(options={"problem_id": "reference-set.add16"})
    _, reward, _, _, info = env.step(answer(code))
    return reward, info


@pytest.fixture(scope="module")
def played(adder_env):
    return {name: play(adder_env, code) for name, code in (("reference", REFERENCE), ("ripple", RIPPLE), ("wrong", WRONG))}


def test_the_reference_scores_one_half_of_the_quality_part(played):
    reward, info = played["reference"]
    quality = info["quality"]
    assert info["passed"] and quality["flow"] == "asic" and quality["score"] == 0.5
    assert quality["ratios"]["area"] == 1.0 and quality["candidate"] == quality["reference"]
    metrics = quality["candidate"]["metrics"]
    assert metrics["area_um2"] > 0 and metrics["cells"] > 0 and metrics["delay_ns"] > 0
    assert reward == pytest.approx(MAX_SHAPED + QUALITY_REWARD * 0.5)


def test_a_correct_but_slower_design_earns_less_than_the_reference(played):
    reference_reward, _ = played["reference"]
    reward, info = played["ripple"]
    quality = info["quality"]
    assert info["passed"]  # equivalent to the reference: the tests pass
    assert quality["candidate"]["metrics"]["delay_ns"] > quality["reference"]["metrics"]["delay_ns"]
    assert quality["ratios"]["delay"] > 1.0 and quality["score"] < 0.5
    assert reward < reference_reward


def test_a_wrong_design_gets_no_quality(played):
    reward, info = played["wrong"]
    assert not info["passed"] and info["quality"] == {}
    assert reward < MAX_SHAPED


def test_a_design_measured_once_is_measured_from_the_cache(adder_env, played):
    stage = adder_env.unwrapped.quality
    key_count = len(stage.cache)
    _, info = play(adder_env, RIPPLE)
    assert len(stage.cache) == key_count
    assert info["quality"]["score"] == played["ripple"][1]["quality"]["score"]
