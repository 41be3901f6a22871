"""OpenEnv (openenv-core 0.3.0) adapter: the real app under uvicorn on 127.0.0.1, played with
OpenEnv's own WebSocket client (async and ``.sync()``) and over its plain HTTP routes; the
rewards are the ones the environment gives in process, from the real simulator."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

pytest.importorskip("openenv.core")

import gymnasium
import httpx

from cvdp_gym.data import load_dataset
from cvdp_gym.integrations.openenv import CVDPAction, CVDPEnvClient, CVDPObservation, make_app
from tests.support import BUNDLED, ServedApp

pytestmark = pytest.mark.sandbox

SINGLE, TARGET = "cvdp_gym_traffic_light_0001", "rtl/traffic_light.sv"  # the cheapest bundled harness


def fenced(code: str) -> str:
    return f"Here is the design.\n```systemverilog\n{code}\n```"


REFERENCE = fenced(load_dataset("bundled")[SINGLE].reference[TARGET])
WRONG = fenced((BUNDLED / SINGLE / "candidates" / "functional_bug" / TARGET).read_text())


@pytest.fixture(scope="module")
def in_process(toolchain) -> dict[str, tuple[float, dict]]:
    """Reward and info of each answer from ``gymnasium.make`` + ``step`` here."""
    env = gymnasium.make("CVDP-SingleShot-v0", ids=[SINGLE], cache=False)
    graded = {}
    for name, answer in (("reference", REFERENCE), ("functional_bug", WRONG)):
        env.reset(options={"problem_id": SINGLE})
        _, reward, _, _, info = env.step(answer)
        graded[name] = (reward, info)
    env.close()
    return graded


@pytest.fixture(scope="module")
def single(toolchain) -> Iterator[ServedApp]:
    served = ServedApp(make_app("CVDP-SingleShot-v0", ids=[SINGLE], cache=False))
    yield served
    served.stop()


@pytest.fixture(scope="module")
def refine(toolchain) -> Iterator[ServedApp]:
    served = ServedApp(make_app("CVDP-Refine-v0", ids=[SINGLE], cache=False, max_attempts=3))
    yield served
    served.stop()


def check(observation: CVDPObservation, reward: float | None, expected: tuple[float, dict]) -> None:
    want_reward, want_info = expected
    assert reward == want_reward and observation.reward == want_reward
    for key in ("passed", "failure_class", "reason", "tests", "stages"):
        assert observation.info[key] == want_info[key], key
    assert observation.done and observation.metadata == observation.info


def test_websocket_client_gets_the_in_process_rewards(single, in_process) -> None:
    async def play() -> None:
        async with CVDPEnvClient(single.url) as client:
            first = await client.reset(problem_id=SINGLE, episode_id="ep-1")
            assert first.observation.messages[0]["role"] == "system" and "traffic_light" in first.observation.text
            assert not first.done and first.observation.info["problem"]["id"] == SINGLE
            result = await client.step(CVDPAction(text=REFERENCE))
            check(result.observation, result.reward, in_process["reference"])
            assert result.observation.info["passed"] is True
            state = await client.state()
            assert (state.episode_id, state.problem_id, state.step_count, state.done) == ("ep-1", SINGLE, 1, True)

    asyncio.run(play())
    with CVDPEnvClient(single.url).sync() as client:  # OpenEnv's synchronous wrapper
        client.reset(problem_id=SINGLE)
        result = client.step(CVDPAction(text=WRONG))
    check(result.observation, result.reward, in_process["functional_bug"])
    assert result.observation.info["failure_class"] == "test_failure"


def test_http_routes_reset_and_grade_in_one_step(single, in_process) -> None:
    with httpx.Client(base_url=single.url, timeout=120) as http:
        reset = http.post("/reset", json={"problem_id": SINGLE}).json()
        assert reset["done"] is False and reset["observation"]["info"]["problem"]["id"] == SINGLE
        for name, answer in (("reference", REFERENCE), ("functional_bug", WRONG)):
            body = http.post("/step", json={"action": {"text": answer, "problem_id": SINGLE}}).json()
            observation = CVDPObservation.model_validate({**body["observation"], "reward": body["reward"], "done": body["done"]})
            observation.metadata = observation.info
            check(observation, body["reward"], in_process[name])
        assert set(http.get("/schema").json()["action"]["properties"]) >= {"text", "problem_id"}


def test_refine_over_websocket_feeds_back_then_passes(refine) -> None:
    with CVDPEnvClient(refine.url).sync() as client:
        client.reset(problem_id=SINGLE)
        wrong = client.step(CVDPAction(text=WRONG))
        assert not wrong.done and wrong.reward == 0.0
        assert wrong.observation.info["failure_class"] == "test_failure" and wrong.observation.text
        assert wrong.observation.messages == [{"role": "user", "content": wrong.observation.text}]
        right = client.step(CVDPAction(text=REFERENCE))
        assert right.done and right.reward == 1.4 and right.observation.info["end_reason"] == "passed"
        assert client.state().step_count == 2
