"""``cvdp-gym eval --agent``: a real agent plays bundled problems against a scripted model.

The run is the real command (its options, plan, evaluator, results file, transcripts, the
markdown and HTML reports), the agent the real codex binary in the sandbox, the model a
scripted server on 127.0.0.1 that writes the reference for one problem and a known-wrong
design for the other.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cvdp_gym.agents.install import ensure_installed
from cvdp_gym.agents.registry import AGENTS
from cvdp_gym.agents.scripted import ScriptedModel, json_strings, writing_steps
from cvdp_gym.cli import app
from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.errors import AgentInstallError
from cvdp_gym.report import write_html_report

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

CRC8, PWM = "cvdp_gym_agentic_crc8_0001", "cvdp_gym_agentic_pwm_gen_0001"
DATA = load_dataset("bundled")


@pytest.fixture(scope="module")
def codex(sandbox):
    try:
        ensure_installed(AGENTS["codex"](), sandbox, quiet=True)
    except AgentInstallError as exc:
        pytest.skip(f"codex cannot be installed here: {str(exc)[:300]}")


def scripts() -> dict[str, list[str]]:
    """Per problem (keyed by its prompt's first line): the reference for CRC-8, a bug for PWM."""
    wrong = next(c.files for c in bundled_candidates() if c.problem_id == PWM and c.name == "functional_bug")
    return {
        DATA[CRC8].prompt.splitlines()[0]: writing_steps(DATA[CRC8].reference),
        DATA[PWM].prompt.splitlines()[0]: writing_steps(wrong),
    }


def test_eval_with_an_agent_writes_results_transcripts_and_reports(codex, tmp_path):
    out = tmp_path / "run"
    with ScriptedModel(scripts()) as model:
        args = ["eval", "bundled", "--agent", "codex", "--base-url", model.url, "--model", "scripted-model",
                "--id", CRC8, "--id", PWM, "--out", str(out), "--concurrency", "2", "--agent-time", "300"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        asked = len(model.requests)
        # --resume plays nothing again: every episode is finished.
        again = CliRunner().invoke(app, [*args, "--resume"])
        assert again.exit_code == 0, again.output
        assert len(model.requests) == asked
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert set(rows) == {CRC8, PWM}
    assert rows[CRC8]["passed"] and rows[CRC8]["reward"] == pytest.approx(1.4)
    assert not rows[PWM]["passed"] and rows[PWM]["verdict"] == "test_failure"
    assert rows[CRC8]["tool_mode"] == "agent:codex" and rows[CRC8]["end_reason"] == "agent_exited"
    for pid, row in rows.items():
        transcript = json.loads((out / row["transcript"]).read_text())
        assert transcript["agent"]["name"] == "codex" and transcript["agent"]["requests"] == len(transcript["exchanges"])
        assert row["agent_requests"] == transcript["agent"]["requests"] and row["prompt_tokens"] == transcript["agent"]["prompt_tokens"] > 0
        assert transcript["turns"] == len(transcript["steps"]) >= 2 and transcript["tool_calls"] >= 1
        assert transcript["steps"][0]["tool_calls"][0]["name"] == "exec_command"
        assert transcript["final_diff"].startswith("--- a/rtl/") and transcript["graded_files"]
        assert transcript["verdict"] == row["verdict"] and transcript["grade"]["passed"] == row["passed"]
        assert any(DATA[pid].prompt.splitlines()[0] in text for text in json_strings(transcript["exchanges"][0]["request"]))
    report = json.loads((out / "report.json").read_text())
    assert report["meta"]["source"].endswith("(agent codex)")
    html = write_html_report([out], tmp_path / "html")
    pages = list((tmp_path / "html").rglob("*.html"))
    assert html.exists() and any("exec_command" in p.read_text() for p in pages)


def test_eval_agent_refuses_options_that_do_not_go_with_it(tmp_path):
    runner = CliRunner()
    cases = [
        (["--agent", "codex", "--responses", str(tmp_path / "r.jsonl")], "cannot grade a --responses file"),
        (["--agent-dir", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"], "--agent-dir goes with --agent"),
        (["--agent", "codex", "--agent-dir", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"], "installs itself"),
        (["--agent", "codex", "--agent-time", "0", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"], "--agent-time must be positive"),
    ]
    for extra, message in cases:
        result = runner.invoke(app, ["eval", "bundled", *extra, "--out", str(tmp_path / "o")])
        assert result.exit_code == 2 and message in result.output, (extra, result.output)


def test_an_endpoint_that_answers_nothing_is_a_request_error_played_again_on_resume(tmp_path):
    import socket

    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ask = "python3 -c \"import os,urllib.request; urllib.request.urlopen(os.environ['OPENAI_BASE_URL'] + '/models', timeout=10)\""
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "eval", "bundled", "--agent", ask, "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m",
        "--id", CRC8, "--out", str(out), "--agent-time", "60",
    ])
    assert result.exit_code == 0, result.output
    (row,) = map(json.loads, (out / "results.jsonl").read_text().splitlines())
    assert row["verdict"] == "request_error" and "answered none of the agent's 1 request(s)" in row["reason"]
    # The same command against an endpoint that answers: the resumed run plays it again.
    with ScriptedModel([]) as model:
        again = CliRunner().invoke(app, [
            "eval", "bundled", "--agent", ask, "--base-url", model.url, "--model", "m",
            "--id", CRC8, "--out", str(out), "--agent-time", "60", "--resume",
        ])
    assert again.exit_code == 0, again.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert rows[-1]["verdict"] != "request_error" and rows[-1]["agent_requests"] == 1
