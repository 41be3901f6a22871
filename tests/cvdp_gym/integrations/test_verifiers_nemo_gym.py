"""verifiers' own NeMo-Gym taskset (``verifiers.v1.tasksets.nemo_gym``, 0.4.0, unpatched)
drives ``cvdp-gym serve`` on 127.0.0.1: its seed (the row, an agentic row's workspace
session kept by cookie), its direct tool (``execute_bash``, a route of the server) and its
``/verify`` reward, over the rows ``cvdp-gym export nemo-gym`` writes, played by verifiers' ``null`` harness against a scripted model that
answers with openai's own chunk types. The rewards and verdicts equal those of the
in-process gymnasium environments given the same answers."""

from __future__ import annotations

import asyncio
import difflib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verifiers.v1.tasksets.nemo_gym")
pytest.importorskip("fastapi")

import gymnasium as gym
import httpx
import verifiers.v1 as vf
from openai.types.chat.chat_completion_chunk import (
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChoiceDeltaToolCallFunction,
)
from typer.testing import CliRunner
from verifiers.v1.env import RunSlot

from cvdp_gym.agents.scripted import heredoc_command
from cvdp_gym.cli import app as cli_app
from cvdp_gym.data import load_dataset
from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.grading import Grader
from cvdp_gym.integrations.verifiers import ensure_uv_on_path
from cvdp_gym.service.app import ServiceConfig, create_app
from cvdp_gym.service.nemo import nemo_gym_row
from cvdp_gym.service.sessions import SESSION_COOKIE, AgentSessions
from tests.support import BUNDLED, ServedApp, serve_streaming_chat

pytestmark = pytest.mark.sandbox

DATA = load_dataset("bundled")
SINGLE, SINGLE_TARGET = "cvdp_gym_traffic_light_0001", "rtl/traffic_light.sv"
AGENTIC, AGENTIC_TARGET = "cvdp_gym_agentic_pwm_gen_0001", "rtl/pwm_gen.sv"
TARGETS = {SINGLE: SINGLE_TARGET, AGENTIC: AGENTIC_TARGET}
#: Each problem's scripted models: the model's name says which answer it gives (``patch``:
#: no tool call, the reference as a unified diff in its final answer).
PLAYS = {SINGLE: ("correct", "wrong"), AGENTIC: ("correct", "wrong", "patch")}
DONE = "Done: the design is in rtl/pwm_gen.sv."


def design(problem_id: str, model: str) -> str:
    """The reference, or the bundled candidate that compiles and fails the tests."""
    folder = "solution" if model == "correct" else "candidates/functional_bug"
    return (BUNDLED / problem_id / folder / TARGETS[problem_id]).read_text()


def single_shot_answer(model: str) -> str:
    return f"```systemverilog\n{design(SINGLE, model)}```"


def agentic_command(model: str) -> str:
    return heredoc_command(AGENTIC_TARGET, design(AGENTIC, model))


def reference_patch() -> str:
    """The reference as a unified diff of the agentic problem's starting file."""
    start = DATA[AGENTIC].context[AGENTIC_TARGET].splitlines(keepends=True)
    diff = difflib.unified_diff(start, design(AGENTIC, "correct").splitlines(keepends=True), f"a/{AGENTIC_TARGET}", f"b/{AGENTIC_TARGET}")
    return f"The design is revised:\n\n```diff\n{''.join(diff)}```\n"


def final_answer(model: str) -> str:
    return reference_patch() if model == "patch" else DONE


def scripted_reply(body: dict[str, Any]) -> ChoiceDelta:
    """The model's next message: without tools, the fenced design; with the row's tools,
    one ``execute_bash`` call writing the design, then (a tool result seen) a summary."""
    model = body["model"]
    bash = next((t["function"]["name"] for t in body.get("tools") or [] if t["function"]["name"].endswith("execute_bash")), None)
    if bash is None:
        return ChoiceDelta(role="assistant", content=single_shot_answer(model))
    if model == "patch" or any(m["role"] == "tool" for m in body["messages"]):
        return ChoiceDelta(role="assistant", content=final_answer(model))
    call = ChoiceDeltaToolCall(index=0, id="call_0", type="function",
                               function=ChoiceDeltaToolCallFunction(name=bash, arguments=json.dumps({"command": agentic_command(model)})))
    return ChoiceDelta(role="assistant", tool_calls=[call])


@pytest.fixture(scope="module")
def model_url() -> Iterator[tuple[list[dict[str, Any]], str]]:
    """A streaming chat-completions endpoint (verifiers' harness streams) that records requests."""
    with serve_streaming_chat(lambda body: scripted_reply(body).model_dump(exclude_none=True)) as served:
        yield served


def nemo_gym_episodes(resources_url: str, rows: Path, model_url: str, monkeypatch) -> dict[tuple[str, str], vf.Episode]:
    """Every row played by every scripted model, concurrently, through verifiers' own
    ``nemo_gym`` taskset and its env (``NeMoGymEnv.run_slot``), keyed (problem, model)."""
    ensure_uv_on_path()
    monkeypatch.setenv("CVDP_LOCAL_KEY", "local")
    config = vf.resolve_env_config({
        "taskset": {"id": "nemo_gym", "dataset": str(rows), "task": {"resources_url": resources_url}},
        "agent": {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}},
    })
    env = vf.load_environment(config)
    tasks = list(env.taskset)

    async def play() -> list[vf.Episode]:
        async with env.serving():
            client = vf.EvalClientConfig(base_url=model_url, api_key_var="CVDP_LOCAL_KEY")
            return await asyncio.gather(*(
                env.run_slot(RunSlot(task), vf.ModelContext(client=client, model=model, sampling=vf.SamplingConfig()))
                for task in tasks for model in PLAYS[problem_of(task)]
            ))

    episodes = asyncio.run(play())
    keys = [(problem_of(task), model) for task in tasks for model in PLAYS[problem_of(task)]]
    return dict(zip(keys, episodes, strict=True))


def problem_of(task: Any) -> str:
    return task.data.row["verifier_metadata"]["problem_id"]


def in_process(problem_id: str, model: str) -> tuple[float, dict[str, Any]]:
    """The reward and last ``info`` of the gymnasium environment given the same answer."""
    if problem_id == SINGLE:
        env = gym.make("CVDP-SingleShot-v0", dataset="bundled", cache=False)
        env.reset(options={"problem_id": problem_id})
        _, reward, _, _, info = env.step(single_shot_answer(model))
    else:
        env = gym.make("CVDP-Agentic-v0", dataset="bundled", cache=False)
        env.reset(options={"problem_id": problem_id})
        if model != "patch":
            call = {"id": "call_0", "type": "function", "function": {"name": "execute_bash", "arguments": json.dumps({"command": agentic_command(model)})}}
            env.step({"content": None, "tool_calls": [call]})
        _, reward, _, _, info = env.step({"content": final_answer(model), "tool_calls": []})
    env.close()
    return float(reward), info


def test_verifiers_nemo_gym_taskset_drives_the_server_to_the_in_process_verdicts(runner, model_url, tmp_path, monkeypatch):
    requests, url = model_url
    rows = tmp_path / "rows.jsonl"  # the rows `cvdp-gym export nemo-gym` writes
    exported = CliRunner().invoke(cli_app, ["export", "nemo-gym", "bundled", str(rows), "--id", SINGLE, "--id", AGENTIC])
    assert exported.exit_code == 0, exported.output
    written = {row["verifier_metadata"]["problem_id"]: row for row in map(json.loads, rows.read_text().splitlines())}
    assert written == {pid: nemo_gym_row(DATA[pid]) for pid in (SINGLE, AGENTIC)}
    app = create_app(ServiceConfig(Grader(runner, cache=GradeCache(tmp_path / "grades.sqlite")), DATA, workers=2))
    served = ServedApp(app)
    try:
        episodes = nemo_gym_episodes(served.url, rows, url, monkeypatch)
        assert len(app.state.agent_sessions) == 0  # each agentic rollout's verify ended its session
    finally:
        served.stop()

    for (problem_id, model), episode in episodes.items():
        assert episode.ok, episode.errors
        (trace,) = episode.traces
        verdict = trace.info["nemo_gym"]
        reward, info = in_process(problem_id, model)
        assert list(trace.rewards) == ["nemo_gym"] and trace.reward == pytest.approx(reward), (problem_id, model)
        assert (verdict["passed"], verdict["verdict"]) == (info["passed"], info["failure_class"] or "passed"), (problem_id, model)
        assert verdict["tests"]["total"] == info["tests"]["total"] > 0 and verdict["tests"]["passed"] == info["tests"]["passed"]
        assert trace.metrics["passed"] == float(info["passed"]) and trace.metrics["mask_sample"] == 0.0
        assert verdict["task_id"] == problem_id
    assert episodes[SINGLE, "correct"].traces[0].reward == episodes[AGENTIC, "correct"].traces[0].reward == pytest.approx(1.4)
    assert episodes[AGENTIC, "wrong"].traces[0].info["nemo_gym"]["verdict"] == "test_failure"
    assert episodes[AGENTIC, "patch"].traces[0].info["nemo_gym"]["passed"]  # the final answer's diff, applied
    # The agentic rollouts ran the server's tool: the model called it and read its output.
    agentic = episodes[AGENTIC, "correct"].traces[0]
    tool_results = [m.content for m in agentic.messages if m.role == "tool"]
    assert tool_results and "[exit code: 0]" in str(tool_results[0])
    assert SESSION_COOKIE in agentic.state.cookies
    offered = {t["function"]["name"] for r in requests if r.get("tools") for t in r["tools"]}
    assert any(name.endswith("execute_bash") for name in offered)


def test_an_agentic_seed_opens_a_workspace_session_that_its_cookie_reaches(runner, tmp_path):
    """The session's life without a model: seeded by the row, its tool run, closed."""
    app = create_app(ServiceConfig(Grader(runner, cache=GradeCache(tmp_path / "grades.sqlite")), DATA))
    served = ServedApp(app)
    try:
        with httpx.Client(base_url=served.url, timeout=60) as client:
            assert client.post("/seed_session", json=nemo_gym_row(DATA[SINGLE])).json() == {}
            assert SESSION_COOKIE not in client.cookies  # a single-shot row needs no workspace
            assert client.post("/execute_bash", json={"command": "ls"}).status_code == 404
            assert client.post("/seed_session", json=nemo_gym_row(DATA[AGENTIC])).json() == {}
            assert SESSION_COOKIE in client.cookies and len(app.state.agent_sessions) == 1
            listed = client.post("/execute_bash", json={"command": "ls rtl docs"})
            assert listed.status_code == 200 and "pwm_gen.sv" in listed.text and listed.text.endswith("[exit code: 0]")
            closed = client.post("/close_session", json={"resources_session_id": "r-1"})
            assert closed.json() == {"resources_session_id": "r-1"} and len(app.state.agent_sessions) == 0
            assert client.post("/execute_bash", json={"command": "ls"}).status_code == 404
    finally:
        served.stop()


def test_sessions_beyond_the_limit_close_the_least_recently_used(runner):
    """Abandoned rollouts (never verified, never closed) cannot pile up workspaces."""
    sessions = AgentSessions(Grader(runner), max_sessions=1)
    first = sessions.open(DATA[AGENTIC])
    workspace = sessions.get(first).workspace
    second = sessions.open(DATA[AGENTIC])
    assert sessions.get(first) is None and workspace.closed and sessions.get(second) is not None
    sessions.close_all()
    assert len(sessions) == 0
