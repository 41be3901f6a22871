"""verifiers 0.4.0 adapter: real rollouts through verifiers' own env, harness programs
(prepared by uv from PyPI, run in the subprocess runtime), interception server and client,
against a scripted OpenAI-compatible server on 127.0.0.1; rewards from the real simulator."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verifiers.v1")

import verifiers.v1 as vf
from verifiers.v1.env import RunSlot

from cvdp_gym.data import load_dataset
from cvdp_gym.grading import make_reward
from cvdp_gym.integrations._shared import shared_grader
from cvdp_gym.integrations.verifiers import TASKSET_ID, load_environment
from tests.support import BUNDLED, serve_streaming_chat

BUNDLED_DATA = load_dataset("bundled")

pytestmark = pytest.mark.sandbox

SINGLE, SINGLE_TARGET = "cvdp_gym_traffic_light_0001", "rtl/traffic_light.sv"
AGENTIC, AGENTIC_TARGET = "cvdp_gym_agentic_pwm_gen_0001", "rtl/pwm_gen.sv"


def design(problem_id: str, target: str, agent: str) -> str:
    folder = "solution" if agent == "correct" else "candidates/functional_bug"
    return (BUNDLED / problem_id / folder / target).read_text()


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted agent's next message: single turn, one fenced design; agentic, one
    ``bash`` call that writes the design, then a summary without tool calls."""
    agent = body["model"]
    if not body.get("tools"):
        return {"content": f"```systemverilog\n{design(SINGLE, SINGLE_TARGET, agent)}```"}
    if any(m["role"] == "tool" for m in body["messages"]):
        return {"content": "Done."}
    command = f"cat > {AGENTIC_TARGET} <<'EOF'\n{design(AGENTIC, AGENTIC_TARGET, agent)}EOF"
    call = {"index": 0, "id": "call_0", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}
    return {"tool_calls": [call]}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[tuple[list[dict[str, Any]], str]]:
    """A streaming chat-completions server (verifiers' client streams) that records requests."""
    with serve_streaming_chat(reply) as served:
        yield served


def rollouts(env: vf.Env, base_url: str, agents: list[str], monkeypatch) -> list[vf.Episode]:
    """One episode per scripted agent on the env's one task, concurrently."""
    monkeypatch.setenv("CVDP_LOCAL_KEY", "local")
    (task,) = list(env.taskset)

    async def play() -> list[vf.Episode]:
        async with env.serving():
            runs = []
            for agent in agents:
                client = vf.EvalClientConfig(base_url=base_url, api_key_var="CVDP_LOCAL_KEY")
                ctx = vf.ModelContext(client=client, model=agent, sampling=vf.SamplingConfig())
                runs.append(env.run_slot(RunSlot(task), ctx))
            return await asyncio.gather(*runs)

    return asyncio.run(play())


def vf_eval(base_url: str, model: str, out: Path) -> dict[str, Any]:
    """One episode through verifiers' own evaluation command (``vf-eval``, the taskset found
    by its id); its one trace record."""
    done = subprocess.run(
        [str(Path(sys.executable).with_name("vf-eval")), TASKSET_ID, "-m", model, "--client.base-url", base_url,
         "--client.api-key-var", "CVDP_LOCAL_KEY", "--env.taskset.ids", SINGLE, "--env.agent.harness.id", "null",
         "--env.agent.runtime.type", "subprocess", "--no-push", "-o", str(out)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "CVDP_LOCAL_KEY": "local"},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (traces,) = out.glob("*/traces.jsonl")
    (record,) = [json.loads(line) for line in traces.read_text().splitlines()]
    return record


def test_single_turn_rollouts_are_scored_by_the_staged_grader(endpoint, monkeypatch, tmp_path):
    requests, base_url = endpoint
    # The reference through vf-eval gets the reward the grader gives it in process.
    record = vf_eval(base_url, "correct", tmp_path / "vf")
    assert record["ok"] and not record["errors"], record["errors"]
    (trace,) = record["traces"]
    grade = shared_grader().grade_response(BUNDLED_DATA[SINGLE], f"```systemverilog\n{design(SINGLE, SINGLE_TARGET, 'correct')}```")
    assert trace["rewards"]["cvdp_reward"]["score"] == pytest.approx(make_reward("shaped")(grade)) == pytest.approx(1.4)  # format + syntax + pass
    assert trace["metrics"]["passed"] == 1.0 and trace["metrics"]["tests_total"] > 0
    # A wrong answer, in process: its recorded failure.
    env = load_environment("bundled", ids=[SINGLE])
    (wrong,) = rollouts(env, base_url, ["wrong"], monkeypatch)
    assert wrong.ok, wrong.errors
    (bad,) = wrong.traces
    assert [m.role for m in bad.messages] == ["system", "user", "assistant"] and bad.task.data.problem_id == SINGLE
    assert list(bad.rewards) == ["cvdp_reward"] and bad.reward == pytest.approx(0.4)  # compiles, fails the tests
    assert bad.metrics["passed"] == 0.0 and bad.metrics["tests_passed"] < bad.metrics["tests_total"]
    sent = [r for r in requests if r["model"] in ("correct", "wrong") and not r.get("tools")]
    assert sent and all(r["messages"][0]["role"] == "system" for r in sent)


def test_agentic_rollout_edits_the_workspace_with_bash_and_is_graded(endpoint, monkeypatch):
    requests, base_url = endpoint
    env = load_environment("bundled", agentic=True, ids=[AGENTIC], reward="binary")
    correct, wrong = rollouts(env, base_url, ["correct", "wrong"], monkeypatch)
    for episode in (correct, wrong):
        assert episode.ok, episode.errors
        (trace,) = episode.traces
        roles = [m.role for m in trace.messages]
        assert roles[-3:] == ["assistant", "tool", "assistant"] and trace.messages[-2].content == ""
    assert correct.traces[0].reward == 1.0
    assert wrong.traces[0].reward == 0.0
    assert wrong.traces[0].metrics["syntax_ok"] == 1.0 and wrong.traces[0].metrics["tests_total"] > 0
    tools = {t["function"]["name"] for r in requests if r.get("tools") for t in r["tools"]}
    assert "bash" in tools
