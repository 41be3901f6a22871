"""The LLM judge of cid009/cid010 answers, against a real local chat server that plays the judge.

The scripted judge reads the candidate answer it is shown and replies with the text that
answer names (``REPLY:<key>``), so each test chooses the judge's reply through the answer.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cvdp_gym.data.problems import problem_from_record
from cvdp_gym.grading import Grader, JudgeSettings, LLMJudge
from cvdp_gym.grading.judge import DEFAULT_JUDGE_MODEL, judge_messages, parse_judge_reply
from tests.support import chat_completion, serve_chat

REPLIES = {
    "good": '{"score": 0.85, "reasoning": "matches the reference"}',
    "fenced": 'Here is my verdict:\n```json\n{"score": 0.4, "reasoning": "half of it"}\n```',
    "preamble": 'Let me compare them. The answer misses one case.\n{"score": 0.7, "reasoning": "close"}\nDone.',
    "high": '{"score": 1.7, "reasoning": "over the top"}',
    "low": '{"score": -0.5, "reasoning": "below zero"}',
    "words": "I would give it a solid eight out of ten.",
    "string_score": '{"score": "0.9", "reasoning": "a string"}',
    "edge": '{"score": 0.6999, "reasoning": "just under"}',
}
_MARK = re.compile(r"REPLY:(\w+)")


class ScriptedJudge:
    """Replies chosen by the answer; ``fail[key]`` statuses are answered before the reply."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: list[dict[str, Any]] = []
        self.fail: dict[str, list[int]] = {}
        self.in_flight = self.most_in_flight = 0
        self.delay = 0.0

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        key = _MARK.search(body["messages"][1]["content"]).group(1)
        with self.lock:
            self.bodies.append(body)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            status = self.fail[key].pop(0) if self.fail.get(key) else 200
        time.sleep(self.delay)
        with self.lock:
            self.in_flight -= 1
        if status != 200:
            return status, {"error": {"message": f"scripted {status}"}}
        return 200, chat_completion(REPLIES[key])

    def count(self, key: str) -> int:
        return sum(f"REPLY:{key}" in b["messages"][1]["content"] for b in self.bodies)


@pytest.fixture
def judge_server() -> Iterator[tuple[ScriptedJudge, str]]:
    server = ScriptedJudge()
    with serve_chat(server.reply) as base_url:
        yield server, base_url


def settings(base_url: str, **kw: Any) -> JudgeSettings:
    return JudgeSettings(base_url=base_url, retries=3, retry_wait_s=0.01, **kw)


def qa_problem(category: str = "cid009"):
    return problem_from_record({
        "id": "cvdp_copilot_shifter_0031", "categories": [category, "easy"],
        "input": {"prompt": "Why test shift_bits = DATA_WIDTH?", "context": {"rtl/shifter.sv": "module shifter; endmodule"}},
        "output": {"response": "The bits must wrap around to the input.", "context": {}}, "harness": {},
    })


def test_reply_parsing_follows_the_official_rules():
    assert parse_judge_reply(REPLIES["good"]) == (0.85, "matches the reference")
    assert parse_judge_reply(REPLIES["fenced"])[0] == 0.4  # the ```json block's inside
    assert parse_judge_reply(REPLIES["preamble"])[0] == 0.7  # the regex fallback
    assert parse_judge_reply(REPLIES["high"])[0] == 1.0 and parse_judge_reply(REPLIES["low"])[0] == 0.0  # clamped
    assert parse_judge_reply('{"score": NaN}')[0] == 1.0  # min(1.0, nan) is 1.0, as in the official clamp
    assert parse_judge_reply('{"score": true}')[0] == 1.0  # a bool is an int to isinstance
    assert parse_judge_reply('{"score": 0.5}')[1] == "No reasoning provided"
    for reply in (REPLIES["words"], REPLIES["string_score"], "", None, '["score"]', '{"score": 0.5, "reasoning": 3}',
                  '{"score": 0.5, "reasoning": {"a": 1}}', '{"score": 0.5, "reasoning": null}'):
        assert parse_judge_reply(reply)[0] is None, reply
    # the first fenced block is parsed (not a later one), and a bad one falls back to the regex over the whole reply
    assert parse_judge_reply('```\n{"score": 0.3}\n``` then {"score": 0.9}')[0] == 0.3
    assert parse_judge_reply('```python\nprint(1)\n```\n{"score": 0.6, "reasoning": "r"}')[0] == 0.6
    assert math.isclose(parse_judge_reply('{"reasoning": "first", "score": 0.25}')[0], 0.25)


def test_judge_requests_scores_retries_and_the_official_request(judge_server, monkeypatch):
    server, base_url = judge_server
    monkeypatch.setenv("CVDP_JUDGE_API_KEY", "judge-key")
    server.fail = {"good": [429, 500]}  # a rate limit, then a server error, then the reply
    with LLMJudge(settings(base_url)) as judge:
        assert judge.score("Q?", "REF", "answer REPLY:good") == (0.85, "matches the reference", False)
        assert judge.score("Q?", "REF", "REPLY:preamble")[0] == 0.7
        assert judge.score("Q?", "REF", "REPLY:high")[0] == 1.0 and judge.score("Q?", "REF", "REPLY:low")[0] == 0.0
        score, why, _ = judge.score("Q?", "REF", "REPLY:words")
        assert score is None and "no JSON score" in why
        server.fail = {"good": [503] * 4}
        score, why, _ = judge.score("Q2?", "REF", "REPLY:good")  # 1 try + 3 retries, all 503
        assert score is None and "HTTP 503" in why
    assert server.count("good") == 3 + 4
    body = server.bodies[0]
    assert body["model"] == DEFAULT_JUDGE_MODEL and "temperature" not in body and "max_tokens" not in body
    assert body["messages"] == judge_messages("Q?", "REF", "answer REPLY:good")
    assert "Q?" in body["messages"][1]["content"] and "REF" in body["messages"][1]["content"]


def test_judge_key_falls_back_to_openai_api_key(monkeypatch):
    base_url = "http://127.0.0.1:9/v1"
    monkeypatch.delenv("CVDP_JUDGE_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert settings(base_url).chat_settings().api_key is None
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key")
    assert settings(base_url).chat_settings().api_key == "openai-key"
    monkeypatch.setenv("CVDP_JUDGE_API_KEY", "judge-key")
    assert settings(base_url).chat_settings().api_key == "judge-key"
    assert settings(base_url, api_key="given").chat_settings().api_key == "given"


def test_judgements_are_cached_by_content_and_a_resumed_judge_never_asks_again(judge_server, tmp_path):
    server, base_url = judge_server
    cache = tmp_path / "judge.sqlite"
    answers = [f"answer {i} REPLY:good" for i in range(5)] + ["REPLY:words"]
    with LLMJudge(settings(base_url), cache=cache) as judge:
        first = [judge.score("Q?", "REF", a) for a in answers]
    assert len(server.bodies) == 6 and not any(cached for _, _, cached in first)
    with LLMJudge(settings(base_url), cache=cache) as judge:  # a new run on the same cache
        again = [judge.score("Q?", "REF", a) for a in answers]
        other_model = LLMJudge(settings(base_url, model="other"), cache=cache)
        other_model.score("Q?", "REF", answers[0])
        other_model.close()
    assert [s for s, _, _ in again] == [s for s, _, _ in first]
    assert [c for _, _, c in again] == [True] * 5 + [False]  # a reply with no score is asked again
    assert len(server.bodies) == 6 + 1 + 1  # the unscored one, and the other model


def test_judge_requests_run_concurrently_from_threads(judge_server):
    server, base_url = judge_server
    server.delay = 0.05
    with LLMJudge(settings(base_url, concurrency=4)) as judge:
        threads = [threading.Thread(target=judge.score, args=("Q?", "REF", f"{i} REPLY:good")) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(server.bodies) == 16 and 1 < server.most_in_flight <= 4


def test_grader_scores_judge_problems_with_the_official_threshold(judge_server, tmp_path):
    server, base_url = judge_server
    problem = qa_problem("cid010")
    with LLMJudge(settings(base_url), cache=tmp_path / "c.sqlite") as judge:
        grader = Grader(judge=judge)
        passed = grader.grade_response(problem, json.dumps({"response": "wraps around REPLY:good"}))
        edge = grader.grade_response(problem, json.dumps({"response": "REPLY:edge"}))
        exact = grader.grade_response(problem, json.dumps({"response": "REPLY:preamble"}))
        broken = grader.grade_response(problem, json.dumps({"response": "REPLY:words"}))
        again = grader.grade_response(problem, json.dumps({"response": "wraps around REPLY:good"}))
    assert passed.passed and passed.credit == 0.85 and passed.scores == {"judge": 0.85} and passed.scoring == "judge"
    assert not edge.passed and edge.failure_class == "low_score" and edge.credit == 0.6999
    assert exact.passed and exact.credit == 0.7  # pass at >= 0.7
    assert broken.failure_class == "judge_error" and broken.credit == 0.0 and broken.official_credit == 0.0
    assert again.cached and again.passed
    # the judge sees the problem's prompt, its reference answer and the parsed answer text
    user = server.bodies[0]["messages"][1]["content"]
    assert problem.prompt in user and problem.reference_answer in user and "wraps around REPLY:good" in user


def test_a_judge_that_does_not_answer_in_time_passes_nothing(judge_server):
    """A request cut by its time limit is a ``judge_error`` with no credit, never a pass."""
    server, base_url = judge_server
    server.delay = 2.0
    slow = JudgeSettings(base_url=base_url, retries=0, retry_wait_s=0.01, timeout_s=0.3)
    with LLMJudge(slow) as judge:
        result = Grader(judge=judge).grade_response(qa_problem("cid010"), json.dumps({"response": "REPLY:good"}))
    assert not result.passed and result.failure_class == "judge_error" and result.credit == 0.0, result.reason
    assert "judge request failed" in result.reason
