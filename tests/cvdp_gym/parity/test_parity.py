"""``cvdp-gym parity``: answers as the official runner's input, the agreement table.

Everything but the last test runs without the official runner (how its output is read as
verdicts and machine failures: ``tests/cvdp_gym/benchmarks/test_cvdp.py``). The last test runs a
real clone of NVlabs/cvdp_benchmark when ``CVDP_OFFICIAL_REPO`` names one, and says why it skips
otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from cvdp_gym.cli import app
from cvdp_gym.data import load_dataset
from cvdp_gym.data.patch import apply_patch
from cvdp_gym.data.problems import problem_from_record
from cvdp_gym.harness.results import HarnessResult
from cvdp_gym.parity import (
    AGREE,
    DISAGREE,
    LEFT_OUT,
    ParityRow,
    agreement,
    bundled_answers,
    official_datasets,
)
from cvdp_gym.parity.answers import Answer, official_id, replacement_patch
from cvdp_gym.parity.official import FAILED, MACHINE, PASSED, OfficialVerdict
from tests.cvdp_gym.harness import randomised_problem as made_up


@pytest.mark.parametrize(
    ("before", "after"),
    [("a\nb\n", "a\nc\nd\n"), ("", "module m;\nendmodule\n"), ("x\n", "no newline at the end"), ("keep\n", "")],
)
def test_replacement_patch_turns_the_context_file_into_the_answer(before, after, tmp_path):
    """GNU patch gives exactly the answer; our tolerant applier (which the dataset loader
    uses) agrees up to the final newline, the one thing the official applier keeps too."""
    patch = replacement_patch(before, after)
    assert patch.startswith("--- a/file\n+++ b/file\n@@ -")
    assert apply_patch(before, patch).rstrip("\n") == after.rstrip("\n")
    if shutil.which("patch") is None:
        pytest.skip("GNU patch is not installed")
    target = tmp_path / "file"
    target.write_text(before)
    subprocess.run(["patch", "-s", str(target)], input=patch, text=True, check=True)
    assert target.read_text() == after


def test_answers_become_golden_records_with_ids_the_official_runner_reads(tmp_path):
    problems = load_dataset("bundled").problems
    answers = bundled_answers(problems)
    heavy = problem_from_record({
        "id": "cvdp_agentic_heavy_x_0001", "categories": ["cid004", "hard"], "prompt": "p",
        "context": {"repo": "r", "commit": "abc"}, "patch": {"rtl/a.sv": ""}, "harness": {},
    })
    answers.append(Answer(len(answers), heavy, "heavy", {"rtl/a.sv": "x"}))
    written = official_datasets(answers, tmp_path)
    assert [p.name for p in written.files] == ["copilot.jsonl", "agentic.jsonl"]
    assert [a.name for a, _ in written.left_out] == ["heavy"]
    for path in written.files:
        for line in path.read_text().splitlines():
            record = json.loads(line)
            answer = written.ids[record["id"]]
            parts = record["id"].split("_")
            assert parts[1] == ("agentic" if answer.problem.agentic else "copilot") and parts[-1].isdigit()
            problem = problem_from_record(record)  # the official shape, read back
            assert problem.harness == answer.problem.harness
            assert problem.reference == {**answer.files} or problem.reference == answer.files
    references = [a for a in answers if a.name == "reference"]
    assert len(references) == len(problems)
    assert all(official_id(a) in written.ids for a in answers if a.name != "heavy")


def test_agreement_table_counts_and_leaves_out_machine_failures():
    problem = made_up.problem()
    answer = Answer(0, problem, "a", {made_up.TARGET: made_up.CORRECT})
    passed = HarnessResult(problem.id, True, None, "", seed=3)
    failed = HarnessResult(problem.id, False, "test_failure", "1 of 1 cocotb tests failed", seed=4)
    unsupported = HarnessResult(problem.id, False, "unsupported", "needs commercial EDA")
    rows = [
        ParityRow(answer, passed, OfficialVerdict("x", PASSED)),
        ParityRow(answer, failed, OfficialVerdict("x", FAILED)),
        ParityRow(answer, passed, OfficialVerdict("x", FAILED, "1 of 1 service(s) failed")),
        ParityRow(answer, failed, OfficialVerdict("x", MACHINE, "external network licnetwork does not exist")),
        ParityRow(answer, unsupported, OfficialVerdict("x", FAILED)),
    ]
    assert [r.status for r in rows] == [AGREE, AGREE, DISAGREE, LEFT_OUT, LEFT_OUT]
    assert agreement(rows)["all"] == {"answers": 5, AGREE: 2, DISAGREE: 1, LEFT_OUT: 2}
    assert "licnetwork" in rows[3].why_left_out and rows[4].why_left_out.startswith("ours:")
    assert rows[2].randomised and rows[2].to_json()["ours_seed"] == 3


OFFICIAL = os.environ.get("CVDP_OFFICIAL_REPO")


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.skipif(not OFFICIAL, reason="CVDP_OFFICIAL_REPO is not set: no clone of NVlabs/cvdp_benchmark to run (docs/parity.md says how)")
def test_the_real_official_runner_agrees_on_bundled_answers(toolchain, docker_client, tmp_path):
    if shutil.which("docker") is None:
        pytest.skip("no docker command line: the official runner calls docker compose")
    problems = {p.id: p for p in load_dataset("bundled").problems}
    chosen = [a for a in bundled_answers(problems.values()) if a.problem.id in ("cvdp_gym_gray_converter_0001", "cvdp_gym_agentic_crc8_0001")]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": a.problem.id, "name": a.name, "files": a.files}) + "\n" for a in chosen))
    out = tmp_path / "parity.json"
    done = CliRunner().invoke(app, [
        "parity", str(answers), "--official-repo", OFFICIAL, "--work", str(tmp_path / "work"), "--json", str(out), "--seed", "0",
    ])
    assert done.exit_code == 0, done.output
    summary = json.loads(out.read_text())
    assert summary["agreement"]["all"] == {"answers": len(chosen), AGREE: len(chosen), DISAGREE: 0, LEFT_OUT: 0}
    assert {r["official"] for r in summary["rows"]} == {PASSED, FAILED}
