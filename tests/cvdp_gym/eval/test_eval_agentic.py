"""``cvdp-gym eval --agentic``: scripted agents behind a real local HTTP server, real sandboxes, real grading.

The server plays an agent chosen by the request's model name (correct, wrong, malformed,
endless) on the problem named by the prompt, in native function calling (the request
offers ``tools``) or in the text format the system message describes. Before answering a
turn it checks what the evaluator sent back for the last one (tool messages with the right
``tool_call_id`` and the expected output, or the formatted results in a user message) and
answers 400 to anything else, so a protocol slip fails the episode.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cvdp_gym.data.bundle import BUNDLED_DIR
from cvdp_gym.data.patch import apply_multi_patch
from cvdp_gym.envs.agentic import AgenticEnv
from cvdp_gym.envs.base import make_grader
from cvdp_gym.parsers import ToolCall, format_tool_call
from cvdp_gym.report import SECTIONS
from tests.cvdp_gym.envs.test_agentic import PROBLEMS, render, scripted_actions
from tests.support import check_links, render_in_chromium, serve_chat

pytestmark = pytest.mark.sandbox

CLI = [sys.executable, "-m", "cvdp_gym.cli", "eval", "bundled", "--agentic"]
CRC8, PWM, RR = sorted(PROBLEMS)
BY_PROMPT = {p.prompt: p for p in PROBLEMS.values()}
RESULT_MARKERS = {"qwen": "<tool_response>", "qwen3_coder": "<tool_response>", "harmony": "<|start|>functions.execute_bash"}
Call = dict[str, Any]


def text_format(system: str) -> str:
    """Which text format the evaluator's tool instructions teach (from their example call)."""
    example = {"harmony": "to=functions.execute_bash", "qwen3_coder": "<function=execute_bash>", "qwen": '<tool_call>\n{"name"'}
    return next(fmt for fmt, marker in example.items() if marker in system)


# ---------------------------------------------------------------- the scripted agents


def bash(command: str, *expect: str) -> Call:
    return {"tool": "execute_bash", "command": command, "expect": list(expect)}


FINISH: Call = {"tool": "finish", "command": None, "arguments": {"message": "done"}, "expect": []}
MALFORMED: dict[str, list[Call]] = {  # one turn of two malformed calls, and what the model must be told
    "native": [
        {"native": ("execute_bash", '{"command": "ls'), "expect": ["not valid JSON"]},
        {"native": ("rm_everything", "{}"), "expect": ["unknown tool 'rm_everything'"]},
    ],
    "qwen": [
        {"text": '<tool_call>\n{"name": "execute_bash", "arguments": {"command": "ls"\n</tool_call>', "expect": ["invalid JSON"]},
        {"text": format_tool_call(ToolCall("rm_everything", {}), "qwen"), "expect": ["unknown tool 'rm_everything'"]},
    ],
}


def write_file(problem_id: str, path: str, text: str) -> Call:
    return bash(f"cat > {path} <<'EOF'\n{text if text.endswith(chr(10)) else text + chr(10)}EOF", "[exit code: 0]")


def script(agent: str, problem_id: str, mode: str) -> list[list[Call]]:
    """The agent's turns (each a list of calls) on ``problem_id`` in ``mode``."""
    target = PROBLEMS[problem_id].targets[0]
    if agent == "correct":
        return [[a] for a in scripted_actions(problem_id)]
    if agent == "wrong":  # the known-wrong candidate that fails the harness's tests
        bug = (BUNDLED_DIR / problem_id / "candidates" / "functional_bug" / target).read_text()
        return [[write_file(problem_id, target, bug)], [FINISH]]
    if agent == "malformed":  # two bad calls, then it reads the errors and solves the problem
        solution = (BUNDLED_DIR / problem_id / "solution" / target).read_text()
        return [MALFORMED[mode], [write_file(problem_id, target, solution)], [FINISH]]
    if agent == "endless":
        return [[bash("ls", "docs")] for _ in range(100)]
    raise KeyError(agent)


def native_turn(calls: list[Call], turn: int) -> dict[str, Any]:
    tool_calls = []
    for number, call in enumerate(calls):
        name, arguments = call.get("native") or (call["tool"], json.dumps(call.get("arguments") if call["command"] is None else {"command": call["command"]}))
        tool_calls.append({"id": f"call_{turn}_{number}", "type": "function", "function": {"name": name, "arguments": arguments}})
    return {"role": "assistant", "content": "Next step.", "tool_calls": tool_calls}


def text_turn(calls: list[Call], fmt: str) -> dict[str, Any]:
    parts = [call.get("text") or render(call, fmt) for call in calls]
    return {"role": "assistant", "content": "\n".join(parts)}


class ScriptedAgents:
    """Answers chat requests from the scripts; records every request and every protocol slip."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.slips: list[str] = []
        self.fail_once: set[tuple[str, int]] = set()  # (problem id, turn) answered 400 once

    def count(self, model: str | None = None) -> int:
        return sum(model in (None, r["model"]) for r in self.requests)

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body["messages"]
        problem = BY_PROMPT[messages[1]["content"]]
        mode = "native" if body.get("tools") else text_format(messages[0]["content"])
        turn = sum(m["role"] == "assistant" for m in messages)
        turns = script(body["model"], problem.id, mode)
        with self.lock:
            self.requests.append(body)
            if (problem.id, turn) in self.fail_once:
                self.fail_once.discard((problem.id, turn))
                return 400, {"error": {"message": "scripted failure"}}
        slip = self.check(messages, turns, turn, mode) if turn else None
        if slip:
            with self.lock:
                self.slips.append(f"{body['model']} {problem.id} turn {turn} ({mode}): {slip}")
            return 400, {"error": {"message": slip}}
        message = native_turn(turns[turn], turn) if mode == "native" else text_turn(turns[turn], mode)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return 200, {"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": finish}]}

    @staticmethod
    def check(messages: list[dict[str, Any]], turns: list[list[Call]], turn: int, mode: str) -> str | None:
        """Why the results of the last turn did not come back as they should, or None."""
        last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
        calls, after = turns[turn - 1], messages[last + 1 :]
        if mode == "native":
            sent = {c["id"] for c in messages[last].get("tool_calls", [])}
            answered = {m.get("tool_call_id"): m["content"] for m in after if m["role"] == "tool"}
            if len(after) != len(answered) or set(answered) != sent or len(sent) != len(calls):
                return f"tool messages {sorted(answered)} for calls {sorted(sent)}"
            outputs = [answered[f"call_{turn - 1}_{n}"] for n in range(len(calls))]
        else:
            if [m["role"] for m in after] != ["user"] or RESULT_MARKERS[mode] not in after[0]["content"]:
                return f"expected one user message of {mode} results, got {after!r:.300}"
            outputs = [after[0]["content"]] * len(calls)
        for call, output in zip(calls, outputs, strict=True):
            missing = [e for e in call["expect"] if e not in output]
            if missing:
                return f"{missing} not in the output {output[-800:]!r}"
        return None


@pytest.fixture(scope="module")
def agents() -> Iterator[tuple[ScriptedAgents, str]]:
    server = ScriptedAgents()
    with serve_chat(server.reply) as base_url:
        yield server, base_url


def run_eval(base_url: str, model: str, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One ``cvdp-gym eval bundled --agentic`` run (workspaces are graded uncached, as they must be)."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    command = [*CLI, "--base-url", base_url, "--model", model, "--out", str(out), "--retries", "0", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def results(out: Path) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["id"], r["sample"]): r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def report(out: Path) -> dict[str, Any]:
    return json.loads((out / "report.json").read_text())


# ---------------------------------------------------------------- tests


def test_native_correct_agent_scores_one_with_transcripts_and_resume(agents, tmp_path):
    server, base_url = agents
    out = tmp_path / "native"
    server.fail_once = {(PWM, 2)}  # the server fails pwm's third turn once: a request error
    first = run_eval(base_url, "correct", out, "--concurrency", "3", "--max-turns", "10", "--max-tokens", "777")
    assert not server.slips, server.slips
    assert "per episode" in first.stdout and "request_error" in first.stdout
    rows = results(out)
    assert {key: r["verdict"] for key, r in rows.items()} == {(CRC8, 0): "passed", (PWM, 0): "request_error", (RR, 0): "passed"}
    assert "scripted failure" in rows[(PWM, 0)]["reason"] and json.loads((out / rows[(PWM, 0)]["transcript"]).read_text())["error"]
    assert {(b["max_tokens"], b["n"], len(b["tools"])) for b in server.requests} == {(777, 1, 2)}

    # Resume plays only the failed episode again, from its start; a second resume plays nothing.
    before = server.count()
    run_eval(base_url, "correct", out, "--concurrency", "3", "--max-turns", "10", "--resume")
    assert server.count() - before == len(scripted_actions(PWM))
    finished = (out / "results.jsonl").read_text()
    before = server.count()
    again = run_eval(base_url, "correct", out, "--concurrency", "3", "--max-turns", "10", "--resume")
    assert server.count() == before and (out / "results.jsonl").read_text() == finished
    assert "pass@1" in again.stdout and not server.slips, server.slips

    overall = report(out)["overall"]
    assert overall["pass@1"] == 1.0 and (overall["problems"], overall["samples"]) == (3, 3)
    for problem_id, row in results(out).items():
        actions = scripted_actions(problem_id[0])
        assert (row["turns"], row["tool_calls"], row["malformed_calls"], row["commands_run"]) == (len(actions), len(actions), 0, len(actions) - 1)
        assert row["end_reason"] == "finish" and row["tool_mode"] == "native" and row["reward"] == pytest.approx(1.4)
        transcript = json.loads((out / row["transcript"]).read_text())
        check_native_transcript(transcript, problem_id[0], actions)
    episodes = report(out)["overall"]["episodes"]
    assert episodes["episodes"] == 3 and episodes["malformed_calls"] == 0 and episodes["end_reasons"] == {"finish": 3}
    assert episodes["mean_turns"] == pytest.approx(sum(len(scripted_actions(p)) for p in PROBLEMS) / 3)
    assert [e["id"] for e in report(out)["episodes"]] == [CRC8, PWM, RR] and all(e["episode_s"] > 0 for e in report(out)["episodes"])
    assert "## Agentic episodes" in (out / "report.md").read_text()

    # The HTML report eval wrote: a transcript page per episode, every link resolving, and
    # (where Chromium is installed) a screenshot kept in test-artifacts/ to look at.
    html = out / "html"
    pages = sorted((html / "run1" / "transcripts").glob("*.html"))
    assert len(pages) == 3 and all("final diff" in page.read_text().lower() for page in pages)
    assert check_links(html) >= 1 + 3 + 3  # index, a page per problem, a page per episode
    index = (html / "index.html").read_text()
    assert all(section in index for section in SECTIONS)
    if shutil.which("chromium"):
        assert render_in_chromium(html / "index.html", "report-agentic.png").stat().st_size > 10_000
        assert render_in_chromium(pages[0], "report-agentic-transcript.png").stat().st_size > 10_000


def check_native_transcript(transcript: dict[str, Any], problem_id: str, actions: list[dict]) -> None:
    """The whole conversation, each call with its output, the final diff and the grade."""
    problem = PROBLEMS[problem_id]
    target = problem.targets[0]
    messages = transcript["messages"]
    assert [m["role"] for m in messages] == ["system", "user", *(["assistant", "tool"] * (len(actions) - 1)), "assistant"]
    assert messages[0]["content"] == problem.system_message and messages[1]["content"] == problem.prompt
    assert [t["function"]["name"] for t in transcript["tools"]] == ["execute_bash", "finish"]
    for step, action in zip(transcript["steps"], actions, strict=True):
        assert step["tool_calls"][0]["function"]["name"] == action["tool"] and step["format"] == "native"
        for output in step["outputs"]:
            assert output["tool_call_id"] == f"call_{step['turn'] - 1}_0"
            assert all(e in output["content"] for e in action.get("expect", []))
    solution = (BUNDLED_DIR / problem_id / "solution" / target).read_text()
    assert apply_multi_patch(problem.context, transcript["final_diff"]) == {target: solution.rstrip("\n") + "\n"}
    assert transcript["passed"] and transcript["verdict"] == "passed" and transcript["grade"]["tests"]["failed"] == 0
    assert transcript["grade"]["tests"]["total"] > 0 and transcript["graded_files"] == [target]


@pytest.mark.parametrize("fmt", ["qwen", "qwen3_coder", "harmony"])
def test_text_mode_correct_agent_scores_one(agents, tmp_path, fmt):
    server, base_url = agents
    ids = [a for p in (PROBLEMS if fmt == "qwen3_coder" else [RR]) for a in ("--id", p)]
    out = tmp_path / fmt
    run_eval(base_url, "correct", out, "--tool-mode", fmt, "--concurrency", "3", *ids)
    assert not server.slips, server.slips
    assert report(out)["overall"]["pass@1"] == 1.0
    for (problem_id, _), row in results(out).items():
        transcript = json.loads((out / row["transcript"]).read_text())
        assert transcript["tools"] is None and "# Tools" in transcript["messages"][0]["content"]
        assert [m["role"] for m in transcript["messages"][2:]] == ["assistant", "user"] * (row["turns"] - 1) + ["assistant"]
        assert all(s["format"] == fmt for s in transcript["steps"]) and row["tool_calls"] == len(scripted_actions(problem_id))


@pytest.mark.parametrize("mode", ["native", "qwen"])
def test_wrong_agent_scores_zero(agents, tmp_path, mode):
    server, base_url = agents
    out = tmp_path / mode
    ids = [] if mode == "native" else ["--id", CRC8]  # every problem once; the text mode on one
    run_eval(base_url, "wrong", out, "--tool-mode", mode, "--concurrency", "3", *ids)
    assert not server.slips, server.slips
    assert report(out)["overall"]["pass@1"] == 0.0
    assert {r["verdict"] for r in results(out).values()} == {"test_failure"} and len(results(out)) == (3 if ids == [] else 1)
    for row in results(out).values():
        transcript = json.loads((out / row["transcript"]).read_text())
        assert transcript["grade"]["tests"]["failed"] > 0 and row["end_reason"] == "finish" and transcript["final_diff"]
    if mode == "qwen":
        # `debug --run` lays out the files the episode's grade took, and regrading them gives
        # the recorded failure again.
        debug = subprocess.run(
            [sys.executable, "-m", "cvdp_gym.cli", "debug", CRC8, "--run", str(out), "--out", str(tmp_path / "debug"), "--rerun"],
            capture_output=True, text=True, timeout=300,
        )
        assert debug.returncode == 0 and "verdict: test_failure\n" in debug.stdout, debug.stdout + debug.stderr
        recorded = json.loads((out / results(out)[(CRC8, 0)]["transcript"]).read_text())["answer_files"]
        assert {rel: (tmp_path / "debug" / "code" / rel).read_text() for rel in recorded} == recorded


@pytest.mark.parametrize("mode", ["native", "qwen"])
def test_malformed_calls_are_counted_and_the_agent_recovers(agents, tmp_path, mode):
    server, base_url = agents
    out = tmp_path / mode
    run_eval(base_url, "malformed", out, "--tool-mode", mode, "--id", CRC8)
    assert not server.slips, server.slips  # the errors reached the model (checked by the server)
    (row,) = results(out).values()
    assert row["verdict"] == "passed" and (row["turns"], row["tool_calls"], row["malformed_calls"], row["commands_run"]) == (3, 4, 2, 1)
    assert report(out)["overall"]["episodes"]["malformed_calls"] == 2


def test_endless_agent_is_cut_off_at_max_turns_and_graded(agents, tmp_path):
    server, base_url = agents
    out = tmp_path / "endless"
    before = server.count("endless")
    run_eval(base_url, "endless", out, "--id", RR, "--max-turns", "3")
    assert server.count("endless") - before == 3 and not server.slips
    (row,) = results(out).values()
    assert (row["end_reason"], row["turns"], row["commands_run"], row["verdict"]) == ("max_turns", 3, 3, "format_error")
    assert report(out)["overall"]["episodes"]["end_reasons"] == {"max_turns": 1}


def test_cli_rejects_bad_agentic_options(tmp_path):
    for args, message in (
        (["--responses", str(tmp_path / "r.jsonl")], "cannot grade a --responses file"),
        (["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--tool-mode", "xml"], "unknown tool mode 'xml'"),
    ):
        done = subprocess.run([*CLI, *args, "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and message in done.stdout, done.stdout + done.stderr


def test_env_takes_a_native_chat_message(toolchain):
    """The environment's message action: ids come back on the tool messages, malformed calls
    first; the content is not searched for text calls."""
    env = AgenticEnv(grader=make_grader(cache=False), ids=[RR])
    try:
        env.reset(options={"problem_id": RR})
        calls = [
            {"id": "a", "type": "function", "function": {"name": "execute_bash", "arguments": {"command": "ls verif"}}},
            {"id": "b", "type": "function", "function": {"arguments": "{}"}},
            {"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "[1]"}},
            {"id": "d", "type": "function", "function": {"name": "execute_bash", "arguments": '{"command": "pwd"}'}},
        ]
        _, _, terminated, _, info = env.step({"role": "assistant", "content": None, "tool_calls": calls})
        assert not terminated and info["format"] == "native" and (info["malformed_calls"], info["commands_run"]) == (2, 2)
        by_id = {m["tool_call_id"]: m["content"] for m in info["tool_messages"]}
        assert "no function name" in by_id["b"] and "must be a JSON object" in by_id["c"]
        assert "tb_rr_arbiter.sv" in by_id["a"] and "/code" in by_id["d"]
        text_call = format_tool_call(ToolCall("execute_bash", {"command": "ls"}), "qwen")
        _, _, terminated, _, info = env.step({"role": "assistant", "content": f"All done.\n{text_call}"})
        assert terminated and info["end_reason"] == "no_tool_call" and info["tool_messages"] == []
    finally:
        env.close()
