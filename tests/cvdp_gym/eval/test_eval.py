"""``cvdp-gym eval``: pass@k estimators, and real graded runs from a file and from an HTTP server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import combinations, product
from pathlib import Path
from typing import Any

import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.envs.prompts import answer_text, single_shot_messages
from cvdp_gym.eval import (
    ResponsesFileError,
    aggregate,
    default_ks,
    pass_at_k,
    pass_at_k_official,
    read_responses,
)

CLI = [sys.executable, "-m", "cvdp_gym.cli", "eval"]
PROBLEMS = load_dataset("bundled")
FAST = {p.id: p for p in PROBLEMS if "verilator" not in p.harness.get("src/.env", "")}
GRAY, PRIO, UART = FAST["cvdp_gym_gray_converter_0001"], FAST["cvdp_gym_priority_encoder_0001"], FAST["cvdp_gym_uart_tx_0001"]
EDGE, ALU = FAST["cvdp_gym_edge_detector_0001"], FAST["cvdp_gym_alu_flags_0001"]
NO_CODE = "I would use a small state machine here."


def correct(problem) -> str:
    """The reference as an answer: a fenced block, or the official JSON shape for several files."""
    answer = answer_text(problem, problem.reference)
    return "Here it is:\n" + answer if len(problem.targets) == 1 else answer


def syntax_error(problem) -> str:
    return "```systemverilog\nmodule broken (input logic a;\n  assign = ;\nendmodule\n```"


def run_eval(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, env=env)


def rows_of(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["id"], r["sample"]): r for r in map(json.loads, path.read_text().splitlines())}


# ---------------------------------------------------------------- estimators


def brute_unbiased(n: int, c: int, k: int) -> Fraction:
    """The share of k-subsets of the n samples that hold a passing one."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(combinations(range(n), k))
    return Fraction(sum(any(samples[i] for i in s) for s in subsets), len(subsets))


def brute_official(n: int, c: int, k: int) -> Fraction:
    """The official estimator is the same draw with replacement: k ordered draws, any passing."""
    draws = list(product(range(n), repeat=k))
    return Fraction(sum(any(i < c for i in d) for d in draws), len(draws))


@pytest.mark.parametrize("n", range(1, 7))
def test_estimators_match_brute_force(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(float(brute_unbiased(n, c, k)), abs=1e-12)
            if k <= 4:
                assert pass_at_k_official(n, c, k) == pytest.approx(float(brute_official(n, c, k)), abs=1e-12)


def test_estimator_edges():
    assert pass_at_k(5, 0, 3) == 0.0 and pass_at_k_official(5, 0, 3) == 0.0
    assert pass_at_k(5, 5, 3) == 1.0 and pass_at_k_official(5, 5, 3) == 1.0
    assert pass_at_k(4, 1, 1) == pass_at_k_official(4, 1, 1) == 0.25  # equal at k = 1
    assert pass_at_k(4, 1, 2) == 0.5 and pass_at_k_official(4, 1, 2) == pytest.approx(0.4375)
    for bad in ((3, 1, 4), (3, 1, 0), (3, 4, 1)):
        with pytest.raises(ValueError):
            pass_at_k(*bad)


def test_aggregate_leaves_out_problems_with_fewer_samples():
    by_k = {p.k: p for p in aggregate([(4, 2), (3, 1), (2, 1)], [1, 3, 5])}
    assert by_k[1].unbiased == pytest.approx((1 / 2 + 1 / 3 + 1 / 2) / 3) and by_k[1].excluded == 0
    assert (by_k[3].problems, by_k[3].excluded) == (2, 1)
    assert by_k[3].unbiased == pytest.approx(1.0)
    assert by_k[3].official == pytest.approx((7 / 8 + 19 / 27) / 2)
    assert by_k[5].unbiased is None and by_k[5].excluded == 3
    assert default_ks(1) == [1] and default_ks(4) == [1, 2, 4] and default_ks(10) == [1, 2, 5, 10]


# ---------------------------------------------------------------- responses file


def test_responses_file_numbering_and_errors(tmp_path):
    path = tmp_path / "r.jsonl"
    lines = [{"id": "a", "response": "x"}, {"id": "b", "response": "y", "sample": 4}, {"id": "a", "response": "z"}]
    path.write_text("\n".join(map(json.dumps, lines)) + "\n\n")
    assert [(r.id, r.sample, r.line) for r in read_responses(path)] == [("a", 0, 1), ("b", 4, 2), ("a", 1, 3)]
    for bad, message in (
        ('{"id": "a"}', "needs a string 'response'"),
        ("{oops", "malformed JSON"),
        ('{"id": "a", "response": "x", "sample": -1}', "non-negative integer"),
        ('{"id": "a", "response": "x", "sample": 0}', "already given on line 1"),
    ):
        path.write_text(json.dumps(lines[0]) + "\n" + bad + "\n")
        with pytest.raises(ResponsesFileError, match=f"r.jsonl:2: .*{message}"):
            read_responses(path)


def test_cli_rejects_bad_input_clearly(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": GRAY.id, "response": "x"}) + "\n{oops\n")
    out = run_eval("--responses", str(bad), "--out", str(tmp_path / "o"))
    assert out.returncode == 2 and "bad.jsonl:2: malformed JSON" in out.stdout, out.stdout + out.stderr
    both = run_eval("--responses", str(bad), "--base-url", "http://127.0.0.1:9", "--model", "m")
    assert both.returncode == 2 and "give one of --responses FILE, --references or --base-url" in both.stdout


# Samples per problem (in file order): passes c of n.
FILE_ANSWERS = [
    (GRAY, [correct, lambda p: NO_CODE, syntax_error, correct]),  # n=4, c=2
    (PRIO, [correct, lambda p: NO_CODE, syntax_error]),  # n=3, c=1
]


def write_file_answers(path: Path) -> None:
    lines = [{"id": p.id, "response": make(p)} for p, makers in FILE_ANSWERS for make in makers]
    # Explicit sample numbers, out of order, for the two-file problem; and an unknown id.
    lines += [{"id": UART.id, "response": NO_CODE, "sample": 1}, {"id": UART.id, "response": correct(UART), "sample": 0}]
    lines.append({"id": "no_such_problem", "response": "x"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.sandbox
def test_eval_responses_file_scores_and_resumes(toolchain, tmp_path):
    answers, out = tmp_path / "answers.jsonl", tmp_path / "run"
    write_file_answers(answers)
    ids = [a for p in (GRAY, PRIO, UART) for a in ("--id", p.id)]
    args = ["--responses", str(answers), *ids, "-k", "1", "-k", "2", "-k", "3", "-k", "4", "-k", "9", "--out", str(out)]
    first = run_eval(*args)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "no_such_problem" in first.stdout and "pass@k official: mean over problems of 1 − (1 − c/n)^k" in first.stdout

    rows = rows_of(out / "results.jsonl")
    verdicts = {key: r["verdict"] for key, r in rows.items()}
    assert verdicts == {
        (GRAY.id, 0): "passed", (GRAY.id, 1): "format_error", (GRAY.id, 2): "build_error", (GRAY.id, 3): "passed",
        (PRIO.id, 0): "passed", (PRIO.id, 1): "format_error", (PRIO.id, 2): "build_error",
        (UART.id, 0): "passed", (UART.id, 1): "format_error",
    }
    gray0 = rows[(GRAY.id, 0)]
    assert gray0["response"] == correct(GRAY) and gray0["category"] == "cid003" and gray0["difficulty"] == "easy"
    assert gray0["tests_total"] > 0 and gray0["tests_passed"] == gray0["tests_total"] and gray0["reward"] == pytest.approx(1.4)
    assert rows[(GRAY.id, 2)]["format_ok"] and not rows[(GRAY.id, 2)]["syntax_ok"] and rows[(GRAY.id, 2)]["reward"] == pytest.approx(0.1)

    report = json.loads((out / "report.json").read_text())
    check_file_report(report)
    assert "pass@k not reported for k = 9" in " ".join(report["meta"]["notes"])  # asked for, but no problem has 9 samples
    assert (out / "report.md").read_text().count("| overall |") == 2
    assert (out / "report.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")

    # Interrupted run: the last line lost, a torn line left. Resume grades only that sample.
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:-1]) + lines[-1][:40])
    second = run_eval(*args, "--resume")
    assert second.returncode == 0, second.stdout + second.stderr
    after = (out / "results.jsonl").read_text().splitlines(keepends=True)
    assert after[:-1] == lines[:-1]  # untouched, not graded again
    assert json.loads(after[-1])["id"] == json.loads(lines[-1])["id"]
    assert json.loads(after[-1])["sample"] == json.loads(lines[-1])["sample"]
    check_file_report(json.loads((out / "report.json").read_text()))


def check_file_report(report: dict[str, Any]) -> None:
    overall = report["overall"]
    counts = [(4, 2), (3, 1), (2, 1)]  # (n, c) of gray, prio, uart
    assert (overall["problems"], overall["samples"], overall["passed_samples"]) == (3, 9, 4)
    assert overall["pass@1"] == pytest.approx((2 / 4 + 1 / 3 + 1 / 2) / 3)
    by_k = {e["k"]: e for e in overall["pass@k"]}
    assert sorted(by_k) == report["ks"] == [1, 2, 3, 4]
    for k, entry in by_k.items():
        eligible = [(n, c) for n, c in counts if n >= k]
        assert (entry["problems"], entry["excluded_fewer_samples"]) == (len(eligible), 3 - len(eligible))
        assert entry["unbiased"] == pytest.approx(float(sum(brute_unbiased(n, c, k) for n, c in eligible) / len(eligible)))
        assert entry["official_biased"] == pytest.approx(sum(1 - (1 - c / n) ** k for n, c in eligible) / len(eligible))
    assert by_k[2]["unbiased"] == pytest.approx(5 / 6) and by_k[2]["official_biased"] == pytest.approx((3 / 4 + 5 / 9 + 3 / 4) / 3)
    assert overall["format_ok_rate"] == pytest.approx(6 / 9) and overall["syntax_ok_rate"] == pytest.approx(4 / 9)
    assert overall["mean_reward"] == pytest.approx((4 * 1.4 + 2 * 0.1) / 9)
    assert overall["failure_classes"] == {"format_error": 3, "build_error": 2}
    cid003, easy, hard = report["by_category"]["cid003"], report["by_difficulty"]["easy"], report["by_difficulty"]["hard"]
    assert (cid003["problems"], cid003["samples"]) == (2, 6) and cid003["pass@1"] == pytest.approx(0.5)
    assert report["by_category"]["cid016"]["pass@1"] == pytest.approx(1 / 3)
    assert list(report["by_difficulty"]) == ["easy", "hard"] and easy["samples"] == 7 and hard["pass@1"] == 0.5


# ---------------------------------------------------------------- OpenAI-compatible endpoint


class FakeServer:
    """A real HTTP server with canned chat completions per problem, recording every request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()
        self.alu_fails = True
        self.by_messages = {json.dumps(single_shot_messages(p)): p for p in (GRAY, PRIO, EDGE, ALU)}

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        problem = self.by_messages[json.dumps(body["messages"])]
        with self.lock:
            call = self.calls[problem.id] = self.calls.get(problem.id, 0) + 1
        if problem is GRAY:
            return 200, completion([correct(GRAY), NO_CODE])
        if problem is PRIO:  # ignores n, like some hosted APIs
            return 200, completion([NO_CODE])
        if problem is EDGE:
            return (500, {"error": "overloaded"}) if call == 1 else (200, completion([syntax_error(EDGE), correct(EDGE)]))
        return (503, {"error": "down"}) if self.alu_fails else (200, completion([NO_CODE] * body["n"]))


def completion(texts: list[str]) -> dict[str, Any]:
    choices = [{"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"} for i, t in enumerate(texts)]
    return {"id": "cmpl", "object": "chat.completion", "choices": choices}


@pytest.fixture
def server() -> Iterator[tuple[FakeServer, str]]:
    fake = FakeServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with fake.lock:
                fake.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            status, payload = fake.answer(body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield fake, f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def sent(fake: FakeServer, problem) -> list[dict[str, Any]]:
    return [r["body"] for r in fake.requests if r["body"]["messages"] == single_shot_messages(problem)]


@pytest.mark.sandbox
def test_eval_endpoint_fetches_retries_scores_and_resumes(toolchain, tmp_path, server):
    fake, base_url = server
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["OPENAI_API_KEY"] = "sk-test"
    ids = [a for p in (GRAY, PRIO, EDGE, ALU) for a in ("--id", p.id)]
    args = [
        "--base-url", base_url, "--model", "test-model", "-n", "2", "--temperature", "0.7",
        "--max-tokens", "1234", "--retries", "2", "--retry-wait", "0.01", *ids, "--out", str(out),
    ]
    first = run_eval(*args, env=env)
    assert first.returncode == 0, first.stdout + first.stderr

    for r in fake.requests:
        assert r["path"] == "/v1/chat/completions" and r["auth"] == "Bearer sk-test"
        assert (r["body"]["model"], r["body"]["temperature"], r["body"]["max_tokens"]) == ("test-model", 0.7, 1234)
    assert [b["n"] for b in sent(fake, GRAY)] == [2]
    assert [b["n"] for b in sent(fake, PRIO)] == [2, 1]  # one choice came back: ask for the other
    assert [b["n"] for b in sent(fake, EDGE)] == [2, 2]  # a 500, then the retry
    assert [b["n"] for b in sent(fake, ALU)] == [2, 2, 2]  # 503 every time: 1 try + 2 retries

    rows = rows_of(out / "results.jsonl")
    assert {key: r["verdict"] for key, r in rows.items()} == {
        (GRAY.id, 0): "passed", (GRAY.id, 1): "format_error",
        (PRIO.id, 0): "format_error", (PRIO.id, 1): "format_error",
        (EDGE.id, 0): "build_error", (EDGE.id, 1): "passed",
        (ALU.id, 0): "request_error", (ALU.id, 1): "request_error",
    }
    assert rows[(GRAY.id, 0)]["response"] == correct(GRAY) and rows[(EDGE.id, 1)]["response"] == correct(EDGE)
    assert "HTTP 503" in rows[(ALU.id, 0)]["reason"] and rows[(ALU.id, 0)]["reward"] == 0.0
    report = json.loads((out / "report.json").read_text())
    overall = report["overall"]
    assert (overall["problems"], overall["samples"], overall["passed_samples"]) == (4, 8, 2)
    assert overall["pass@1"] == pytest.approx(0.25) and report["ks"] == [1, 2]
    assert overall["pass@k"][1]["unbiased"] == pytest.approx(0.5)  # gray and edge: 1 of 2 each
    assert overall["failure_classes"] == {"format_error": 3, "request_error": 2, "build_error": 1}

    # Resume: a lost line is graded again from the saved response; only the failed requests are sent.
    lines = [ln for ln in (out / "results.jsonl").read_text().splitlines() if json.loads(ln)["id"] != PRIO.id or json.loads(ln)["sample"] != 1]
    (out / "results.jsonl").write_text("\n".join(lines) + "\n")
    fake.alu_fails, before = False, len(fake.requests)
    second = run_eval(*args, "--resume", env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert [r["body"]["messages"] for r in fake.requests[before:]] == [single_shot_messages(ALU)]
    rows = rows_of(out / "results.jsonl")
    assert len((out / "results.jsonl").read_text().splitlines()) == len(rows) == 8
    assert rows[(PRIO.id, 1)]["verdict"] == "format_error" and rows[(ALU.id, 1)]["verdict"] == "format_error"
    assert json.loads((out / "report.json").read_text())["overall"]["failure_classes"] == {"format_error": 5, "build_error": 1}
