"""``cvdp-gym parity``: answers as the official runner's input, its verdicts, machine failures, the table.

Everything but the last test runs without the official runner: the output it reads is
built here in the format the official runner writes (``raw_result.json``: one entry per
id with one test per compose service, ``errors == 0`` for a pass; a log per service), with
the messages Docker and Compose print for the machine failures (seen on this machine:
``dockerd --bridge=none``, no registry). The last test runs a real clone of
NVlabs/cvdp_benchmark when ``CVDP_OFFICIAL_REPO`` names one, and says why it skips otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cvdp_gym.benchmarks.cvdp.official import machine_failure, read_verdicts
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
from cvdp_gym.parity.official import FAILED, MACHINE, MISSING, PASSED, OfficialVerdict
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


def write_run(work: Path, entries: dict[str, tuple[int, list[tuple[int, str | None, str | None]]]]) -> None:
    """A work folder as the official runner leaves it: raw_result.json and one log per service."""
    raw = {}
    for pid, (errors, tests) in entries.items():
        rows = []
        for number, (result, log_text, error_msg) in enumerate(tests):
            log = None
            if log_text is not None:
                log = work / pid / "reports" / f"1_s{number}.txt"
                log.parent.mkdir(parents=True, exist_ok=True)
                log.write_text(log_text)
            rows.append({"result": result, "log": str(log) if log else None, "error_msg": error_msg, "execution": 1.5, "pid": 1})
        raw[pid] = {"category": "cid003", "difficulty": "easy", "tests": rows, "errors": errors}
    work.mkdir(parents=True, exist_ok=True)
    (work / "raw_result.json").write_text(json.dumps(raw))


BRIDGE = "#5 [direct 2/2] RUN pip install pytest\n#5 ERROR: executor failed running [/bin/sh -c pip install pytest]: network bridge not found\nfailed to solve: executor failed running [/bin/sh -c pip install pytest]: network bridge not found\n"
LICNETWORK = "Running harness with project name: p_1_1\nnetwork licnetwork declared as external, but could not be found\n"
PULL = ' direct Pulling \n direct Error Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 10.0.0.53:53: no such host\n'
PYTEST_PASS = "============================== 1 passed in 1.24s ===============================\n"
PYTEST_FAIL = "FAILED ../../src/test_runner.py::test_runner - SystemExit: 1\n============================== 1 failed in 0.93s ===============================\n"


def test_verdicts_and_machine_failures_from_the_official_output(tmp_path):
    work = tmp_path / "copilot"
    write_run(work, {
        "cvdp_copilot_a00000_0001": (0, [(0, PYTEST_PASS, None)]),
        "cvdp_copilot_a00001_0001": (1, [(0, PYTEST_PASS, None), (1, PYTEST_FAIL, None)]),
        "cvdp_copilot_a00002_0001": (1, [(1, BRIDGE, None)]),
        "cvdp_copilot_a00003_0001": (1, [(1, LICNETWORK, None)]),
        "cvdp_copilot_a00004_0001": (1, [(1, PULL, None)]),
        "cvdp_copilot_a00005_0001": (1, [(1, None, "th_prepare: 'input'")]),
    })
    ids = [f"cvdp_copilot_a0000{i}_0001" for i in range(7)]
    verdicts = read_verdicts(work, ids)
    outcomes = [verdicts[i].outcome for i in ids]
    assert outcomes == [PASSED, FAILED, MACHINE, MACHINE, MACHINE, MACHINE, MISSING]
    assert "bridge" in verdicts[ids[2]].reason and "licnetwork" in verdicts[ids[3]].reason
    assert "pulled" in verdicts[ids[4]].reason and "th_prepare" in verdicts[ids[5]].reason
    assert verdicts[ids[1]].reason == "1 of 2 service(s) failed" and "SystemExit" in verdicts[ids[1]].log_tail
    assert verdicts[ids[0]].seconds == 1.5 and len(verdicts[ids[1]].logs) == 2
    # No raw_result.json and a console that shows why: every id is a machine failure.
    nothing = read_verdicts(tmp_path / "absent", ids[:1], "docker: unknown command: docker compose\n")
    assert nothing[ids[0]].outcome == MACHINE and "compose" in nothing[ids[0]].reason
    assert machine_failure(PYTEST_FAIL) is None
    # BuildKit fetching a Dockerfile's ADD URL (pip's bootstrap) with no network: not a pull.
    fetch = '#4 ERROR: Get "https://bootstrap.pypa.io/get-pip.py": dial tcp: lookup bootstrap.pypa.io on 10.0.0.53:53: no such host\n'
    assert machine_failure(fetch) == "a Dockerfile step fetches https://bootstrap.pypa.io/get-pip.py, and no network is reachable"


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
