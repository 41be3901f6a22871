"""``cvdp-gym report``: the HTML report of real and hand-made eval runs.

Hand-made runs are written with eval's own row and report builders (``result_row``,
``build_report``) from real ``GradeResult`` verdicts, so the consistency counts, failure
classes and stages are known by construction; one test reads a real ``cvdp-gym eval`` run
(answers without code: graded without a simulator). Every relative ``src`` and ``href`` of
every page must name a file that exists.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cvdp_gym.cli import app
from cvdp_gym.data import load_dataset
from cvdp_gym.eval.report import build_report
from cvdp_gym.eval.run import RESULTS, failed_grade, result_row
from cvdp_gym.grading import make_reward
from cvdp_gym.grading.result import GradeResult, Stage
from cvdp_gym.harness import results as harness_results
from cvdp_gym.report import SECTIONS, write_html_report
from cvdp_gym.report.stats import load_run, summarize
from tests.support import check_links, render_in_chromium

GRAY = next(p for p in load_dataset("bundled").problems if p.id == "cvdp_gym_gray_converter_0001")
REWARD = make_reward("shaped")
#: Outcome -> (failure class, stage results format, syntax, interface, tests).
OUTCOMES = {
    "pass": (None, (True, True, True, True)),
    "format": ("format_error", (False, None, None, None)),
    "syntax": ("build_error", (True, False, None, None)),
    "interface": ("interface_error", (True, True, False, None)),
    "tests": ("test_failure", (True, True, True, False)),
}


def grade_of(problem, outcome: str, seconds: float) -> GradeResult:
    if outcome == "request":
        return failed_grade(problem, "request_error", "connection refused")
    failure, results = OUTCOMES[outcome]
    stages = [Stage(name, ok, f"{name} <detail>") for name, ok in zip(("format", "syntax", "interface", "tests"), results, strict=True)]
    tests = harness_results.TestCounts(total=2, passed=2 if outcome == "pass" else 0, failed=0 if outcome == "pass" else 2)
    return GradeResult(problem.id, stages, failure, "" if outcome == "pass" else f"{outcome} failed <b>", tests=tests, wall_s=seconds, log_tail="log <tail>")


def write_run(out: Path, spec: dict[str, tuple[str, str, list[str]]], extra=lambda pid, sample: {}, ks=(1,)) -> Path:
    """A run folder: per problem (category, difficulty, outcome per sample)."""
    rows = []
    for number, (pid, (category, difficulty, outcomes)) in enumerate(spec.items()):
        problem = replace(GRAY, id=pid, categories=(category, difficulty))
        for sample, outcome in enumerate(outcomes):
            grade = grade_of(problem, outcome, seconds=1.0 + number + sample / 10)
            rows.append(result_row(problem, sample, f"answer <{pid}> {sample}", grade, REWARD, **extra(pid, sample)))
    out.mkdir(parents=True)
    (out / RESULTS).write_text("".join(json.dumps(r) + "\n" for r in rows))
    meta = {"source": "responses <answers>.jsonl", "dataset": "bundled", "reward": "shaped", "graded": len(rows), "wall_s": 1.0, "notes": []}
    (out / "report.json").write_text(json.dumps(build_report(rows, list(ks), meta)))
    return out


#: cid002: p0 always, p1 sometimes, p2 never; cid003: p3 sometimes, p4 never, p5 never.
SPEC = {
    "p0": ("cid002", "easy", ["pass", "pass", "pass"]),
    "p1": ("cid002", "medium", ["pass", "tests", "syntax"]),
    "p2": ("cid002", "hard", ["format", "format", "syntax"]),
    "p3": ("cid003", "easy", ["interface", "pass", "tests"]),
    "p4": ("cid003", "medium", ["request", "tests", "tests"]),
    "p5": ("cid003", "medium", ["tests", "tests", "format"]),
}


def cli(*args: str):
    return CliRunner().invoke(app, ["report", *args], env={"COLUMNS": "250"})


def test_counts_classes_and_stages_match_the_hand_made_rows(tmp_path):
    run = write_run(tmp_path / "run", SPEC)
    summary = summarize(load_run(run))
    cats = summary["by_category"]
    assert cats["cid002"]["consistency"] == {"never": 1, "sometimes": 1, "always": 1}
    assert cats["cid003"]["consistency"] == {"never": 2, "sometimes": 1, "always": 0}
    assert summary["overall"]["consistency"] == {"never": 3, "sometimes": 2, "always": 1}
    # cid002 failed samples: tests 1, syntax(build_error) 2, format 2 -> 5.
    assert cats["cid002"]["failure_classes"] == {"build_error": 2, "format_error": 2, "test_failure": 1}
    assert cats["cid002"]["failure_shares"] == pytest.approx({"build_error": 0.4, "format_error": 0.4, "test_failure": 0.2})
    # cid003 failed samples: interface 1, tests 5, request 1, format 1 -> 8.
    assert cats["cid003"]["failure_classes"] == {"test_failure": 5, "format_error": 1, "interface_error": 1, "request_error": 1}
    assert cats["cid003"]["failure_stages"] == {"format": 1, "interface": 1, "tests": 5, "not graded": 1}
    assert cats["cid002"]["failure_stages"] == {"format": 2, "syntax": 2, "tests": 1}
    # pass@1: the mean of per-problem shares; difficulty groups too.
    assert cats["cid002"]["pass@1"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert summary["by_difficulty"]["medium"]["problems"] == 3 and list(summary["by_difficulty"]) == ["easy", "medium", "hard"]
    assert summary["slowest"][0][0] == "p5"

    out = tmp_path / "html"
    done = cli(str(run), "--out", str(out))
    assert done.exit_code == 0, done.output
    index = (out / "index.html").read_text()
    for section in SECTIONS:
        assert section in index, section
    assert "<td>cid002</td><td>3</td><td>1</td><td>1</td><td>1</td>" in index  # consistency row
    # Failure classes, columns in the overall order: test_failure 6, format_error 3, build_error 2, interface_error 1, request_error 1.
    assert "<th>test_failure</th><th>format_error</th><th>build_error</th><th>interface_error</th><th>request_error</th>" in index
    assert "<td>cid002</td><td>9</td><td>5</td><td>1 (20.0%)</td><td>2 (40.0%)</td><td>2 (40.0%)</td><td>0</td><td>0</td>" in index
    assert "responses &lt;answers&gt;.jsonl" in index and "<answers>" not in index  # escaped
    problem = (out / "run1" / "problems" / "p1.html").read_text()
    assert "answer &lt;p1&gt; 1" in problem and "log &lt;tail&gt;" in problem and "<details>" in problem
    assert check_links(out) == 1 + len(SPEC)
    assert len(list((out / "images").glob("*.png"))) == 4


def test_transcript_pages_for_episodes(tmp_path):
    """Rows that name a transcript (as agentic and refine runs write them) get a page each."""
    spec = {"a0": ("cid004", "easy", ["pass", "tests"]), "a1": ("cid005", "hard", ["syntax"])}
    run = write_run(tmp_path / "run", spec, lambda pid, s: {"transcript": f"transcripts/{pid}.{s}.json", "turns": 2, "episode_s": 3.5})
    (run / "transcripts").mkdir()
    long_output = "\n".join(f"line {i} <x>" for i in range(200))
    for pid, (_, _, outcomes) in spec.items():
        for sample, outcome in enumerate(outcomes):
            record = {
                "id": pid, "sample": sample, "model": "m", "tool_mode": "native", "turns": 2, "end_reason": "finish",
                "verdict": "passed" if outcome == "pass" else "failed", "steps": [
                    {"turn": 1, "assistant": {"role": "assistant", "content": "let me look <now>"},
                     "tool_calls": [{"name": "execute_bash", "arguments": {"command": "ls rtl"}}],
                     "outputs": [{"role": "tool", "content": long_output}], "request_s": 0.5, "step_s": 0.7},
                    {"turn": 2, "assistant": {"role": "assistant", "content": "done"}, "tool_calls": [], "outputs": []},
                ],
                "final_diff": "--- a/rtl/x.sv\n+++ b/rtl/x.sv\n+module <x>;", "grade": {"stages": [{"name": "format", "passed": True}]},
            }
            if pid == "a1":
                continue  # a missing transcript file: no page, no link
            (run / "transcripts" / f"{pid}.{sample}.json").write_text(json.dumps(record))
    out = tmp_path / "html"
    write_html_report([run], out)
    pages = sorted((out / "run1" / "transcripts").glob("*.html"))
    assert [p.name for p in pages] == ["a0.0.html", "a0.1.html"]
    text = pages[0].read_text()
    assert "turn 1" in text and "let me look &lt;now&gt;" in text and "ls rtl" in text
    assert "<details><summary>tool output (" in text and "+module &lt;x&gt;;" in text
    assert 'href="../../index.html"' in text and 'href="../problems/a0.html"' in text
    assert 'href="../transcripts/a0.1.html"' in (out / "run1" / "problems" / "a0.html").read_text()
    index = (out / "index.html").read_text()
    assert 'href="run1/transcripts/a0.0.html"' in index and "episode wall time" in index
    check_links(out)


def test_bad_run_folders_are_one_line_exit_2(tmp_path):
    good = write_run(tmp_path / "good", SPEC)

    def one_error(done, expected: str) -> None:
        assert done.exit_code == 2 and isinstance(done.exception, SystemExit), done.output
        errors = [line for line in done.output.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and expected in errors[0] and "Traceback" not in done.output, done.output

    one_error(cli(str(tmp_path / "nowhere")), "nowhere: no such run folder")
    (tmp_path / "empty").mkdir()
    one_error(cli(str(good), str(tmp_path / "empty")), f"{tmp_path / 'empty' / RESULTS}: missing")
    old = tmp_path / "old"
    shutil.copytree(good, old)
    lines = (old / RESULTS).read_text().splitlines()
    lines[1] = json.dumps({k: v for k, v in json.loads(lines[1]).items() if k != "passed"})
    (old / RESULTS).write_text("\n".join(lines) + "\n")
    one_error(cli(str(old)), f"{old / RESULTS}:2: not a results row of this cvdp-gym version (missing or wrong: passed)")
    (old / RESULTS).write_text((good / RESULTS).read_text())
    (old / "report.json").write_text("{}")
    one_error(cli(str(old)), f"{old / 'report.json'}: not a report of this cvdp-gym version")
    # Truncated: a line cut in the middle of the file is an error; a torn last line a warning.
    text = (good / RESULTS).read_text()
    cut = tmp_path / "cut"
    shutil.copytree(good, cut)
    (cut / RESULTS).write_text(text[:100] + "\n" + text)
    one_error(cli(str(cut)), f"{cut / RESULTS}:1: malformed JSON")
    (cut / RESULTS).write_text(text[:-40])
    done = cli(str(cut), "--out", str(tmp_path / "html"))
    assert done.exit_code == 0, done.output
    assert "torn last line skipped" in (tmp_path / "html" / "index.html").read_text()


def test_a_real_eval_run_writes_its_html_report(tmp_path):
    """``cvdp-gym eval`` writes html/index.html; ``report`` puts two runs side by side."""
    problems = ["cvdp_gym_gray_converter_0001", "cvdp_gym_priority_encoder_0001", "cvdp_gym_uart_tx_0001"]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": p, "sample": s, "response": "no code"}) + "\n" for p in problems for s in range(3)))
    selected = [w for p in problems for w in ("--id", p)]
    done = subprocess.run(
        [sys.executable, "-m", "cvdp_gym.cli", "eval", "bundled", "--responses", str(answers), *selected, "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120, env={"COLUMNS": "300", **__import__("os").environ},
    )
    if done.returncode != 0 and "bubblewrap" in done.stdout:
        pytest.skip(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    index = tmp_path / "run" / "html" / "index.html"
    assert str(index) in done.stdout.replace("\n", "") and index.is_file()
    assert check_links(index.parent) == 1 + len(problems)
    if shutil.which("chromium"):  # the real single-shot run's report, kept to look at
        assert render_in_chromium(index, "report-single-shot.png").stat().st_size > 10_000
    hand = write_run(tmp_path / "hand", SPEC)
    both = cli(str(tmp_path / "run"), str(hand), "--out", str(tmp_path / "both"))
    assert both.exit_code == 0, both.output
    text = (tmp_path / "both" / "index.html").read_text()
    assert 'id="run-1"' in text and 'id="run-2"' in text and all(text.count(s) >= 2 for s in SECTIONS)
    assert "<td>overall</td><td>3</td><td>9</td><td>0.0%</td>" in text
    check_links(tmp_path / "both")


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_headless_chromium_renders_the_report(tmp_path):
    """The hand-made run's report opens in headless Chromium (no network) and renders; the
    screenshot is kept in test-artifacts/."""
    out = tmp_path / "html"
    write_html_report([write_run(tmp_path / "run", SPEC)], out)
    assert render_in_chromium(out / "index.html", "report-hand-made.png").stat().st_size > 10_000
