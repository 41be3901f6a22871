"""``cvdp-gym eval`` on comprehension problems: answers files and an endpoint (a real local server
playing both the model and the judge), pass@k and the official credit, ``not_judged`` left out
or counted as zero, resume without asking the judge again, and the official report's table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest
from nltk.translate.bleu_score import sentence_bleu

from tests.support import (
    COMPREHENSION_REFERENCES,
    chat_completion,
    serve_chat,
    write_comprehension_dataset,
)

CLI = [sys.executable, "-m", "cvdp_gym.cli", "eval"]
FIFO, UART, SHIFTER, ARBITER = COMPREHENSION_REFERENCES
REF = {pid: ref for pid, (_, _, ref) in COMPREHENSION_REFERENCES.items()}


def bleu(answer: str, reference: str) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sentence_bleu([reference.split()], answer.split(), weights=[0.5, 0.5])


def run_eval(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, env={**environ, **(env or {})})
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def rows(out: Path) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["id"], r["sample"]): r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def report(out: Path) -> dict[str, Any]:
    return json.loads((out / "report.json").read_text())


def table_entry(rep: dict[str, Any], k: int, category: str, difficulty: str) -> dict[str, Any]:
    return next(e for e in rep["official_report"]["tables"][str(k)] if (e["category"], e["difficulty"]) == (category, difficulty))


def write_answers(path: Path) -> dict[tuple[str, int], str]:
    answers = {
        (FIFO, 0): json.dumps({"response": REF[FIFO]}),
        (FIFO, 1): json.dumps({"response": " ".join(REF[FIFO].split()[:7])}),
        (UART, 0): "The testbench sends bytes.",  # prose: not the JSON answer
        (UART, 1): json.dumps({"response": "Note: the testbench sends, " + REF[UART]}),  # the chat route's repair breaks it
        (SHIFTER, 0): json.dumps({"response": "It wraps."}),
        (ARBITER, 0): json.dumps({"response": "Round robin."}),
    }
    path.write_text("".join(json.dumps({"id": pid, "sample": s, "response": a}) + "\n" for (pid, s), a in answers.items()))
    return answers


def test_eval_answers_file_scores_comprehension_without_a_judge(tmp_path):
    data = write_comprehension_dataset(tmp_path / "comprehension.jsonl")
    answers = write_answers(tmp_path / "answers.jsonl")
    out = tmp_path / "run"
    done = run_eval(str(data), "--responses", str(tmp_path / "answers.jsonl"), "--out", str(out))
    assert "official CVDP report" in done.stdout and "not judged" in done.stdout
    got = rows(out)
    assert got[(FIFO, 0)]["verdict"] == "passed" and got[(FIFO, 0)]["credit"] == 1.0 and got[(FIFO, 0)]["scoring"] == "bleu"
    short = " ".join(REF[FIFO].split()[:7])
    assert got[(FIFO, 1)]["credit"] == pytest.approx(bleu(short, REF[FIFO]), abs=1e-9) == got[(FIFO, 1)]["scores"]["bleu"]
    assert got[(UART, 0)]["verdict"] == "format_error" and got[(UART, 1)]["verdict"] == "format_error"
    assert got[(SHIFTER, 0)]["verdict"] == got[(ARBITER, 0)]["verdict"] == "not_judged"
    rep = report(out)
    assert rep["meta"]["parse_route"].startswith("chat") and rep["meta"]["judge"] == "none"
    assert rep["overall"]["problems"] == 2 and "not_judged" not in rep["overall"]["failure_classes"]
    assert rep["overall"]["pass@1"] == pytest.approx(0.25)  # FIFO 1 of 2, UART 0 of 2
    fifo = table_entry(rep, 1, "cid006", "easy")
    assert fifo["official"] == pytest.approx((1.0 + bleu(short, REF[FIFO])) / 2, abs=1e-9)
    assert {e["category"] for e in rep["official_report"]["tables"]["1"]} == {"cid006", "cid008", "all"}
    assert "## The official CVDP report's table" in (out / "report.md").read_text()

    # The import route reads the repaired-away answer; --not-judged-as-zero counts judge problems as 0.
    again = tmp_path / "again"
    run_eval(str(data), "--responses", str(tmp_path / "answers.jsonl"), "--out", str(again), "--parse-route", "import", "--not-judged-as-zero")
    got = rows(again)
    assert got[(UART, 1)]["verdict"] == "passed" and got[(UART, 1)]["credit"] == pytest.approx(bleu(json.loads(answers[(UART, 1)])["response"], REF[UART]), abs=1e-9)
    rep = report(again)
    assert rep["overall"]["problems"] == 4 and rep["overall"]["failure_classes"]["not_judged"] == 2
    assert table_entry(rep, 1, "cid009", "easy")["official"] == 0.0 and table_entry(rep, 1, "all", "total")["problems"] == 4


class ModelAndJudge:
    """One server: requests for model ``m`` get canned answers; those for ``judge`` are judged."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.model_requests: list[dict[str, Any]] = []
        self.judge_requests: list[dict[str, Any]] = []
        self.judge_failures = 1  # the first judge request gets a 429

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        user = body["messages"][1]["content"]
        if body["model"] == "judge":
            with self.lock:
                self.judge_requests.append(body)
                if self.judge_failures:
                    self.judge_failures -= 1
                    return 429, {"error": "slow down"}
            candidate = user.split("The candidate answer:")[1]
            if "garbled" in candidate:
                return 200, chat_completion("I cannot decide.")
            score = 0.95 if "wrap" in candidate or "round-robin" in candidate else 0.1
            return 200, chat_completion(f'Thinking... {{"score": {score}, "reasoning": "scripted"}}')
        with self.lock:
            self.model_requests.append(body)
        pid = next(p for p in COMPREHENSION_REFERENCES if p in user)
        texts = {
            FIFO: [json.dumps({"response": REF[FIFO]}), "I don't know"],
            UART: [json.dumps({"response": REF[UART]})] * 2,
            SHIFTER: ['{"response": "The bits wrap around."}', '{"response": "garbled"}'],
            ARBITER: ['{"response": "Grants go round-robin."}', '{"response": "No idea."}'],
        }[pid]
        return 200, chat_completion(*texts[: body["n"]])


def test_eval_endpoint_with_a_judge_scores_and_resumes_without_asking_again(tmp_path):
    data = write_comprehension_dataset(tmp_path / "comprehension.jsonl")
    server = ModelAndJudge()
    out = tmp_path / "run"
    with serve_chat(server.reply) as base_url:
        args = [str(data), "--base-url", base_url, "--model", "m", "-n", "2", "--judge-base-url", base_url,
                "--judge-model", "judge", "--retry-wait", "0.01", "--out", str(out)]
        run_eval(*args, env={"CVDP_JUDGE_API_KEY": "jk"})
        got = rows(out)
        assert (got[(SHIFTER, 0)]["verdict"], got[(SHIFTER, 0)]["credit"]) == ("passed", 0.95)
        assert got[(SHIFTER, 1)]["verdict"] == "judge_error" and got[(SHIFTER, 1)]["credit"] == 0.0
        assert (got[(ARBITER, 0)]["credit"], got[(ARBITER, 1)]["verdict"]) == (0.95, "low_score")
        assert got[(FIFO, 1)]["verdict"] == "format_error" and got[(UART, 0)]["credit"] == 1.0
        judged = len(server.judge_requests)
        assert judged == 4 + 1  # four answers judged, one 429 retried
        assert all("temperature" not in b for b in server.judge_requests)
        model_prompt = server.model_requests[0]["messages"]
        assert 'Provide your response using the format: { "response": "<your answer here>" }' in model_prompt[1]["content"]
        rep = report(out)
        shifter = table_entry(rep, 2, "cid009", "easy")
        assert shifter["official"] == pytest.approx((0.95 + 0.0) / 2)  # mean credit, whatever k
        assert table_entry(rep, 2, "cid008", "medium")["official"] == 1.0

        # Resume: the judge_error sample is graded again (the judge asked once more about it);
        # the lost line of a judged sample is re-graded from the judge's cache, not asked again.
        lines = [ln for ln in (out / "results.jsonl").read_text().splitlines() if not (json.loads(ln)["id"] == ARBITER and json.loads(ln)["sample"] == 0)]
        (out / "results.jsonl").write_text("\n".join(lines) + "\n")
        before_model = len(server.model_requests)
        run_eval(*args, "--resume", env={"CVDP_JUDGE_API_KEY": "jk"})
        assert len(server.model_requests) == before_model  # answers come from responses.jsonl
        assert len(server.judge_requests) == judged + 1  # only the garbled one
        got = rows(out)
        assert got[(ARBITER, 0)]["credit"] == 0.95 and len(got) == 8
