"""skyrl-gym 0.4.0 adapter: episodes through skyrl_gym's own registry, ``make`` and step
loop (as SkyRL's generator drives them) on bundled problems, graded by the real simulator."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

pytest.importorskip("skyrl_gym")

import skyrl_gym

import cvdp_gym  # noqa: F401  (registers the Gymnasium environments)
from cvdp_gym.integrations._shared import shared_grader
from cvdp_gym.integrations.skyrl import ENV_CLASSES, dataset_rows, register, write_dataset
from tests.support import BUNDLED

pytestmark = pytest.mark.sandbox

PROBLEM, TARGET = "cvdp_gym_traffic_light_0001", "rtl/traffic_light.sv"  # the cheapest bundled harness


def answer(folder: str) -> str:
    return f"```systemverilog\n{(BUNDLED / PROBLEM / folder / TARGET).read_text()}```"


def recorded_failure(candidate: str) -> str:
    return json.loads((BUNDLED / PROBLEM / "candidates" / "expected.json").read_text())[candidate]["failure_class"]


def play(env_class: str, actions: list[str], **extras) -> list[dict]:
    """SkyRL's generator loop: make from a dataset row, init with its prompt, step to done."""
    (row,) = dataset_rows("bundled", env_class=env_class, ids=[PROBLEM])
    columns = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config={"cache": False}, extras={**columns, **extras})
    prompt, _ = env.init(row["prompt"])
    assert prompt == row["prompt"] and prompt[-1]["role"] == "user"
    outputs = []
    for action in actions:
        outputs.append(env.step(action))
        if outputs[-1]["done"]:
            break
    assert env.get_metrics()["turns"] == len(outputs)
    env.close()
    return outputs


def in_process(action: str) -> tuple[float, dict]:
    env = gym.make("CVDP-SingleShot-v0", ids=[PROBLEM], grader=shared_grader(cache=False))
    env.reset(options={"problem_id": PROBLEM})
    _, reward, _, _, info = env.step(action)
    env.close()
    return reward, info


def test_register_adds_the_three_env_classes_once():
    register()
    register()
    assert set(ENV_CLASSES) <= set(skyrl_gym.registry)


def test_single_shot_rewards_equal_the_in_process_grade():
    reference, wrong = answer("solution"), answer("candidates/functional_bug")
    good, bad = play("cvdp_gym", [reference]), play("cvdp_gym", [wrong])
    for (output,), action in ((good, reference), (bad, wrong)):
        reward, info = in_process(action)
        assert output["done"] and output["observations"] == []
        assert output["reward"] == reward
        assert output["metadata"]["passed"] == info["passed"]
        assert output["metadata"]["tests"] == info["tests"]
    assert good[0]["metadata"]["passed"] and good[0]["reward"] == pytest.approx(1.4)
    assert bad[0]["metadata"]["failure_class"] == recorded_failure("functional_bug")


def test_refine_feeds_back_then_grades_the_second_answer():
    first, second = play(
        "cvdp_gym_refine", [answer("candidates/functional_bug"), answer("solution")], max_turns=3
    )
    assert not first["done"] and first["reward"] == 0.0
    assert first["metadata"]["failure_class"] == recorded_failure("functional_bug")
    (feedback,) = first["observations"]
    assert feedback["role"] == "user" and feedback["content"]
    reward, _ = in_process(answer("solution"))
    assert second["done"] and second["reward"] == reward
    assert second["metadata"]["end_reason"] == "passed"


def test_write_dataset_writes_skyrl_prompt_rows(tmp_path):
    path = write_dataset(tmp_path / "train.jsonl", "bundled", ids=[PROBLEM])
    (row,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert row["env_class"] == "cvdp_gym" and row["problem_id"] == PROBLEM and row["data_source"] == "bundled"
    assert [m["role"] for m in row["prompt"]][-1] == "user"
