"""``cvdp-gym eval --base-url`` on the benchmarks beside CVDP, against a scripted model.

A real chat-completions server on 127.0.0.1 answers each request by finding the problem
whose prompt the request carries (the benchmark's own messages, as its scripts build them)
and replying with that problem's scripted answer: the reference, a wrong design, or a wrong
design that prints the benchmark's pass words itself. The real ``cvdp-gym eval`` grades
them with each benchmark's flow; the rows and report.json must carry each benchmark's own
verdicts and figures, computed here from the answers' known outcomes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.data.problems import Problem
from cvdp_gym.envs.prompts import answer_text, single_shot_messages
from tests.support import chat_completion, serve_chat

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
CLI = [sys.executable, "-m", "cvdp_gym.cli"]


def wrong(problem: Problem, *, forge: str = "") -> str:
    """A design with the problem's interface that drives every output to 0, printing ``forge``."""
    target = problem.targets[0]
    reference = problem.reference[target]
    header = reference[: reference.index(");") + 2]
    body = "\n".join(f"  assign {name} = '0;" for name in _outputs(header))
    printing = f'\n  initial $display("{forge}");' if forge else ""
    return answer_text(problem, {target: f"{header}\n{body}{printing}\nendmodule\n"})


def _outputs(header: str) -> list[str]:
    import re

    return re.findall(r"output\s+(?:logic|reg|wire)?\s*(?:\[[^\]]*\])?\s*(\w+)", header)


def run_eval(
    spec: str, copy: Path, answers: dict[str, str], tmp_path: Path, *extra: str,
) -> tuple[dict[str, Any], dict[str, Any], list[dict]]:
    """Serve ``answers`` (problem id -> reply) and run the real CLI on ``spec``; rows by id, the
    report, and the requests the server saw."""
    problems = load_dataset(spec, benchmark_dir=copy).problems
    by_prompt = {json.dumps(single_shot_messages(p)): p.id for p in problems}
    seen: list[dict] = []

    def reply(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        seen.append(body)
        pid = by_prompt.get(json.dumps(body["messages"]))
        return (200, chat_completion(answers[pid])) if pid in answers else (404, {"error": "unknown prompt"})

    out = tmp_path / spec.replace(":", "_")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()} | {"OPENAI_API_KEY": "sk-test", "COLUMNS": "250"}
    with serve_chat(reply) as base_url:
        ids = [a for pid in answers for a in ("--id", pid)]
        done = subprocess.run(
            [*CLI, "eval", spec, "--benchmark-dir", str(copy), "--base-url", base_url, "--model", "m", "-n", "1",
             "--out", str(out), "--jobs", "2", *ids, *extra],
            capture_output=True, text=True, timeout=300, env=env,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    return rows, json.loads((out / "report.json").read_text()), seen


@pytest.mark.sandbox
def test_verilog_eval_v2_over_an_endpoint(toolchain, tmp_path):
    copy = FIXTURES / "verilog-eval"
    good, bad, forged, *_ = load_dataset("verilog-eval-v2:spec-to-rtl", benchmark_dir=copy).problems
    answers = {
        good.id: answer_text(good, good.reference),
        bad.id: wrong(bad),
        forged.id: wrong(forged, forge="Mismatches: 0 in 20 samples"),
    }
    rows, report, seen = run_eval(
        "verilog-eval-v2:spec-to-rtl", copy, answers, tmp_path, "--temperature", "0.85", "--top-p", "0.95", "--max-tokens", "1024",
    )
    # The published settings reach the endpoint; the model was asked in VerilogEval's own words:
    # its system message, then Question/[BEGIN]/Answer.
    assert {(b["temperature"], b["top_p"], b["max_tokens"]) for b in seen} == {(0.85, 0.95, 1024)}
    assert all(body["messages"][0]["content"].startswith("\nYou are a Verilog RTL designer") for body in seen)
    assert all(body["messages"][1]["content"].endswith("\nAnswer:\n") for body in seen)
    assert [rows[p]["passed"] for p in answers] == [True, False, False]
    assert [rows[p]["official"]["passed"] for p in answers] == [True, False, True]  # forged: by the whole log only
    assert rows[bad.id]["official"]["class"] in ("R", "r") and rows[bad.id]["tests_total"] > rows[bad.id]["tests_passed"]
    section = report["benchmark_reports"]["verilog-eval-v2:spec-to-rtl"]
    rate = next(f for f in section["figures"] if f["name"].startswith("pass_rate"))["cells"]
    # sv-iv-analyze: each problem int(100 * npass / n) with n = 1: official 100, 0, 100; ours 100, 0, 0.
    assert rate["official"]["value"] == pytest.approx(200 / 3) and rate["ours"]["value"] == pytest.approx(100 / 3)
    assert [f["id"] for f in section["forged"]] == [forged.id]
    assert report["overall"]["pass@1"] == pytest.approx(1 / 3)


@pytest.mark.sandbox
def test_verilog_eval_v1_and_rtllm_over_an_endpoint(toolchain, tmp_path):
    v1 = load_dataset("verilog-eval-v1:human", benchmark_dir=FIXTURES / "verilog-eval-v1").problems
    rows, report, seen = run_eval(
        "verilog-eval-v1:human", FIXTURES / "verilog-eval-v1", {v1[0].id: answer_text(v1[0], v1[0].reference)}, tmp_path,
    )
    assert rows[v1[0].id]["passed"] and rows[v1[0].id]["official"]["result"] == "passed"
    assert seen[0]["messages"][1]["content"].rstrip().endswith(v1[0].extra["header"].rstrip())  # the header last
    assert "verilog-eval-v1:human" in report["benchmark_reports"]

    rtllm = load_dataset("rtllm-v2", benchmark_dir=FIXTURES / "rtllm").problems
    first, second = rtllm[0], rtllm[1]
    answers = {first.id: answer_text(first, first.reference), second.id: wrong(second, forge="===========Your Design Passed===========")}
    rows, report, seen = run_eval("rtllm-v2", FIXTURES / "rtllm", answers, tmp_path)
    # RTLLM's prompt is its description alone: one user message, no system message.
    assert sorted(b["messages"][0]["content"] for b in seen) == sorted([first.prompt, second.prompt])
    assert all(len(b["messages"]) == 1 and b["messages"][0]["role"] == "user" for b in seen)
    assert rows[first.id]["passed"] and rows[first.id]["official"]["auto_run"]
    assert not rows[second.id]["passed"] and rows[second.id]["official"]["auto_run"]  # it printed the banner itself
    assert [f["id"] for f in report["benchmark_reports"]["rtllm-v2"]["forged"]] == [second.id]


@pytest.mark.sandbox
def test_a_verilog_eval_v1_samples_file_is_graded_as_it_is(toolchain, tmp_path):
    """VerilogEval v1's own samples format, ``{"task_id", "completion"}`` lines, names problems by
    their task ids; the completions are graded as they are (here: the canonical ones, and one cut short)."""
    copy = FIXTURES / "verilog-eval-v1"
    first, second = load_dataset("verilog-eval-v1:human", benchmark_dir=copy).problems[:2]
    samples = tmp_path / "samples.jsonl"
    lines = [
        {"task_id": first.extra["name"], "completion": first.reference[first.targets[0]]},
        {"task_id": second.extra["name"], "completion": "\n"},  # no body: endmodule missing
    ]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "run"
    done = subprocess.run(
        [*CLI, "eval", "verilog-eval-v1:human", "--benchmark-dir", str(copy), "--responses", str(samples), "--out", str(out)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "250"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert rows[first.id]["passed"] and rows[first.id]["official"]["result"] == "passed"
    assert not rows[second.id]["passed"] and rows[second.id]["official"]["result"].startswith("failed: syntax error")
