"""``RTL-Testbench-v0`` and ``RTL-Assertion-v0`` through Gymnasium's own ``make``, the refinement
episode and an adapter, on a made-up counter: real Icarus and Yosys runs in the real sandbox.

A thorough bench or property set earns the top reward, one that misses bugs earns less, one
that fails the reference earns nothing; what the model sees never holds the seeded bugs.
"""

from __future__ import annotations

import gymnasium
import pytest

import cvdp_gym  # noqa: F401  (registers the environments)
from cvdp_gym.data import Dataset
from tests.cvdp_gym.tasks.verification_problems import (
    COUNTER,
    FALSE_ALARM_BENCH,
    THOROUGH_BENCH,
    WEAK_BENCH,
    counter_problem,
    fenced,
)

pytestmark = pytest.mark.sandbox

BENCH_ID, PROPERTIES_ID = "made-up.counter.testbench", "made-up.counter.assertion"
GOOD_PROPERTIES = """assert property (@(posedge clk) rst |=> q == 4'd0);
assert property (@(posedge clk) disable iff (rst) en |=> q == $past(q) + 4'd1);
assert property (@(posedge clk) disable iff (rst) !en |=> q == $past(q));
assert property (@(posedge clk) wrap == (en && q == 4'd15));
"""
PROPERTY_SETS = {
    "good": GOOD_PROPERTIES,
    "weak": "assert property (@(posedge clk) rst |=> q == 4'd0);\n",
    "wrong": "assert property (@(posedge clk) rst |=> q == 4'd1);\n",
    "vacuous": "assert property (@(posedge clk) (q == 4'd3 && q == 4'd4) |-> wrap);\n",
    "unsupported": "assert property (@(posedge clk) en |-> ##[1:3] q != 0);\n",
}


def play(env, problem_id: str, answer: str) -> tuple[float, dict]:
    env.reset(options={"problem_id": problem_id})
    _, reward, terminated, _, info = env.step(answer)
    assert terminated
    return reward, info


@pytest.fixture(scope="module")
def benches(toolchain) -> dict[str, tuple[float, dict]]:
    env = gymnasium.make("RTL-Testbench-v0", dataset=Dataset([counter_problem()]), cache=False, harness_seed=3)
    prompt, info = env.reset(seed=0)
    graded = {"prompt": (0.0, {"text": prompt, **info})}
    for name, bench in (("thorough", THOROUGH_BENCH), ("weak", WEAK_BENCH), ("false alarm", FALSE_ALARM_BENCH)):
        graded[name] = play(env, BENCH_ID, fenced(bench))
    env.close()
    return graded


@pytest.fixture(scope="module")
def properties(toolchain) -> dict[str, tuple[float, dict]]:
    env = gymnasium.make("RTL-Assertion-v0", dataset=Dataset([counter_problem()]), cache=False, harness_seed=3)
    graded = {name: play(env, PROPERTIES_ID, fenced(text, "systemverilog")) for name, text in PROPERTY_SETS.items()}
    env.close()
    return graded


def test_the_bench_prompt_has_the_specification_and_the_header_not_the_design(benches):
    _, shown = benches["prompt"]
    assert shown["problem"]["id"] == BENCH_ID and shown["problem"]["targets"] == ["tb.sv"]
    assert "wraps from 15 to 0" in shown["text"] and "module counter(input clk" in shown["text"]
    assert "q <= q + 4'd1" not in shown["text"] and "_cvdp_mutant" not in shown["text"]


def test_bench_rewards_follow_the_bugs_caught(benches):
    thorough, weak, alarm = benches["thorough"], benches["weak"], benches["false alarm"]
    assert thorough[0] == 1.0 and thorough[1]["passed"] and thorough[1]["official"]["kill_rate"] == 1.0
    assert 0.0 < weak[0] < thorough[0] and weak[0] == weak[1]["official"]["kill_rate"]
    assert alarm[0] == 0.0 and "false alarm" in alarm[1]["reason"]
    assert thorough[1]["tests"]["total"] == 8 and {m["kind"] for m in thorough[1]["official"]["mutants"]}
    assert "text" not in thorough[1]["official"]["mutants"][0]  # the bugs' kinds are reported, never their code


def test_property_rewards_follow_the_bugs_caught(properties):
    good, weak = properties["good"], properties["weak"]
    assert good[0] == 1.0 and good[1]["passed"]
    assert {p["reference"] for p in good[1]["official"]["properties"]} <= {"proved", "bounded"}
    assert 0.0 < weak[0] < good[0]
    assert properties["wrong"][0] == 0.0 and "fails on the reference design" in properties["wrong"][1]["reason"]
    assert properties["vacuous"][0] == 0.0 and "vacuous" in properties["vacuous"][1]["reason"]
    unsupported = properties["unsupported"][1]
    assert properties["unsupported"][0] == 0.0 and "delay ranges" in unsupported["reason"]


def test_a_refinement_episode_feeds_back_a_false_alarm_then_pays_the_kills(toolchain):
    env = gymnasium.make(
        "RTL-Refine-v0", dataset=Dataset([counter_problem()]), task="testbench", reward="kills", cache=False,
        harness_seed=3, max_attempts=2,
    )
    env.reset(options={"problem_id": BENCH_ID})
    feedback, reward, terminated, _, info = env.step(fenced(FALSE_ALARM_BENCH))
    assert not terminated and reward == 0.0 and "false alarm" in feedback
    assert COUNTER.splitlines()[3].strip() not in feedback  # the design's code is not in the feedback
    _, reward, terminated, _, info = env.step(fenced(THOROUGH_BENCH))
    env.close()
    assert terminated and reward == 1.0 and info["passed"]


def test_an_adapter_takes_the_verification_environment_like_the_others(toolchain):
    pytest.importorskip("openenv.core")
    from cvdp_gym.integrations.openenv import CVDPAction, environment_factory

    make = environment_factory("RTL-Testbench-v0", dataset=Dataset([counter_problem()]), cache=False, harness_seed=3)
    env = make()
    assert [p.id for p in env.env.unwrapped.problems] == [BENCH_ID]  # posed once, not again
    env.reset(problem_id=BENCH_ID)
    observation = env.step(CVDPAction(text=fenced(THOROUGH_BENCH)))
    env.close()
    assert observation.reward == 1.0 and observation.info["official"]["kill_rate"] == 1.0


def test_an_agentic_episode_writes_its_bench_in_the_workspace(toolchain):
    import json

    env = gymnasium.make(
        "RTL-Agentic-v0", dataset=Dataset([counter_problem()]), task="testbench", reward="kills", cache=False, harness_seed=3,
    )
    _, info = env.reset(options={"problem_id": BENCH_ID})
    problem = env.unwrapped.problem
    assert problem.agentic and problem.targets == ("verif/tb.sv",)
    assert set(problem.context) == {"docs/specification.md"}  # the specification, never the design
    call = {"name": "execute_bash", "arguments": {"command": f"mkdir -p verif && cat > verif/tb.sv <<'EOF'\n{THOROUGH_BENCH}EOF"}}
    env.step("<tool_call>\n" + json.dumps(call) + "\n</tool_call>")
    _, reward, terminated, _, info = env.step("Done.")
    env.close()
    assert terminated and reward == 1.0 and info["graded_files"] == ["verif/tb.sv"]


def test_a_cocotb_bench_is_graded_like_a_verilog_one(toolchain):
    from tests.cvdp_gym.tasks.test_cocotb_bench import THOROUGH, WEAK

    env = gymnasium.make(
        "RTL-Testbench-v0", task="testbench-cocotb", dataset=Dataset([counter_problem()]), cache=False, harness_seed=3,
    )
    problem_id = "made-up.counter.testbench-cocotb"
    prompt, info = env.reset(options={"problem_id": problem_id})
    assert info["problem"]["targets"] == ["test_tb.py"] and "@cocotb.test()" in prompt
    thorough = play(env, problem_id, fenced(THOROUGH, "python"))
    weak = play(env, problem_id, fenced(WEAK, "python"))
    peeking = play(env, problem_id, fenced(THOROUGH.replace("dut.q.value", "dut.q_internal.value", 1), "python"))
    env.close()
    assert thorough[0] == 1.0 and thorough[1]["official"]["task"] == "testbench-cocotb"
    assert weak[0] < thorough[0] and weak[1]["official"]["reference"]["passed"]
    assert peeking[0] == 0.0 and peeking[1]["failure_class"] == "reach_in"
