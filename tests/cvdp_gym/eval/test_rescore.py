"""``cvdp-gym rescore``: rows written by the real ``eval`` and the real service's ``/verify``,
rescored under another reward, get the reward the grader gives that answer under it."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cvdp_gym.cli import app
from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.grading import Grader, GradeResult, make_reward
from cvdp_gym.grading.rewards import make_reward_parts
from tests.support import COMPREHENSION_REFERENCES, write_comprehension_dataset

pytestmark = pytest.mark.sandbox

DATA = load_dataset("bundled")
PROBLEMS = [DATA["cvdp_gym_edge_detector_0001"], DATA["cvdp_gym_gray_converter_0001"]]
WRONG = {c.problem_id: c.files for c in bundled_candidates() if c.name == "functional_bug"}
#: Per problem, sample 0 the reference and sample 1 a known-wrong design that compiles.
ANSWERS = {(p.id, s): answer_text(p, files) for p in PROBLEMS for s, files in enumerate((p.reference, WRONG[p.id]))}
FIFO = next(pid for pid, (category, _, _) in COMPREHENSION_REFERENCES.items() if category == "cid006")


def cli(*args: str) -> str:
    done = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    assert done.exit_code == 0, done.output
    return done.output


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("rescore") / "grades.sqlite"


@pytest.fixture(scope="module")
def graded(runner, cache) -> dict[tuple[str, int], GradeResult]:
    """Each answer graded here, in this process; its verdicts cached for the eval run and
    the service, so that each answer is simulated once."""
    here = Grader(runner, cache=GradeCache(cache))
    with ThreadPoolExecutor(len(ANSWERS)) as pool:
        grades = pool.map(lambda key: here.grade_response(DATA[key[0]], ANSWERS[key]), ANSWERS)
        return dict(zip(ANSWERS, grades, strict=True))


@pytest.fixture(scope="module")
def eval_run(graded, cache, tmp_path_factory) -> Path:
    """A real ``cvdp-gym eval --responses`` run folder, shaped reward."""
    tmp = tmp_path_factory.mktemp("rescore-eval")
    answers = write(tmp / "answers.jsonl", [{"id": pid, "sample": s, "response": t} for (pid, s), t in ANSWERS.items()])
    ids = [a for p in PROBLEMS for a in ("--id", p.id)]
    cli("eval", "--responses", str(answers), *ids, "--reward", "shaped", "--cache", str(cache), "--out", str(tmp / "run"))
    return tmp / "run"


@pytest.fixture(scope="module")
def verify_rows(graded, runner, cache) -> list[dict[str, Any]]:
    """Real ``/verify`` answers of the service app (its default reward, shaped), one more for
    the wrong gray converter with ``reward: binary``; in ``ANSWERS`` order."""
    fastapi_testclient = pytest.importorskip("fastapi.testclient")
    from cvdp_gym.service.app import ServiceConfig, create_app

    grader = Grader(runner, cache=GradeCache(cache))
    requests = [(pid, text, None) for (pid, _), text in ANSWERS.items()] + [(PROBLEMS[1].id, ANSWERS[(PROBLEMS[1].id, 1)], "binary")]
    rows = []
    with fastapi_testclient.TestClient(create_app(ServiceConfig(grader, DATA))) as client:
        for pid, text, reward in requests:
            meta = {"problem_id": pid} | ({"reward": reward} if reward else {})
            response = {"id": "resp", "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}]}
            answer = client.post("/verify", json={"responses_create_params": {"input": []}, "response": response, "verifier_metadata": meta})
            assert answer.status_code == 200, answer.text
            rows.append(answer.json())
    return rows


@pytest.mark.parametrize(("reward", "interface_credit"), [("binary", 0.0), ("partial", 0.0), ("shaped", 0.25)])
def test_eval_rows_get_the_graders_reward_under_another_setting(eval_run, graded, tmp_path, reward, interface_credit):
    stored = {(r["id"], r["sample"]): r for r in read(eval_run / "results.jsonl")}
    assert stored.keys() == graded.keys() and all(r["reward"] == pytest.approx(make_reward("shaped")(graded[k])) for k, r in stored.items())
    out = tmp_path / "rescored.jsonl"
    printed = cli("rescore", str(eval_run), "--reward", reward, "--interface-credit", str(interface_credit), "--out", str(out))
    expected = make_reward(reward, interface_credit=interface_credit)
    rows = read(out)
    assert len(rows) == 4
    for row in rows:
        key = (row["id"], row["sample"])
        assert row["reward"] == pytest.approx(expected(graded[key])), key
        assert row["passed"] == graded[key].passed == stored[key]["passed"] == (key[1] == 0)
        assert {k: v for k, v in row.items() if k != "reward"} == {k: v for k, v in stored[key].items() if k != "reward"}
    assert "left as it was" not in printed and "50.0%" in printed
    mean_after = sum(r["reward"] for r in rows) / 4
    assert f"{mean_after:.4f}" in printed and f"{sum(r['reward'] for r in stored.values()) / 4:.4f}" in printed


def test_partial_credit_differs_from_binary_on_a_wrong_design(graded):
    """The known-wrong designs compile and fail some tests: the settings really disagree."""
    wrong = [graded[(p.id, 1)] for p in PROBLEMS]
    assert all(g.syntax_ok and not g.passed for g in wrong)
    assert {make_reward("binary")(g) for g in wrong} == {0.0} and all(make_reward("partial")(g) > 0.4 - 1e-9 for g in wrong)


@pytest.mark.parametrize("reward", ["binary", "partial"])
def test_verify_answers_get_the_graders_reward_and_parts(verify_rows, graded, tmp_path, reward):
    out = tmp_path / "rescored.jsonl"
    printed = cli("rescore", str(write(tmp_path / "verify.jsonl", verify_rows)), "--reward", reward, "--out", str(out))
    rows = read(out)
    keys = list(ANSWERS)
    for row, key in zip(rows[:4], keys, strict=True):
        assert row["reward_components"] == pytest.approx(make_reward_parts(reward)(graded[key])), key
        assert row["reward"] == pytest.approx(make_reward(reward)(graded[key])) == pytest.approx(sum(row["reward_components"].values()))
        assert row["passed"] == graded[key].passed and row["verdict"] == graded[key].verdict
    binary_stored = rows[4]  # stored under binary: a failed answer's format and syntax stages are unknown
    if reward == "binary":
        assert binary_stored["reward"] == 0.0 and "left as it was" not in printed
    else:
        assert binary_stored == verify_rows[4]
        assert "left as it was (1 row): the partial reward reads the format stage and the syntax stage, which this /verify answer does not store" in printed


def test_verify_answers_do_not_store_the_interface_check(verify_rows, tmp_path):
    out = tmp_path / "rescored.jsonl"
    printed = cli("rescore", str(write(tmp_path / "verify.jsonl", verify_rows)), "--reward", "shaped", "--interface-credit", "0.2", "--out", str(out))
    assert read(out) == verify_rows
    assert "left as it was (4 rows): the shaped, interface credit 0.2 reward reads the interface check, which" in printed
    assert "left as it was (1 row): the shaped, interface credit 0.2 reward reads the format stage and the syntax stage and the interface check" in printed


def test_rows_without_what_is_needed_are_left_as_they_were_with_their_reason(eval_run, verify_rows, tmp_path):
    old_eval = {k: v for k, v in read(eval_run / "results.jsonl")[0].items() if k != "grade"}
    old_verify = {k: v for k, v in verify_rows[0].items() if k != "tests"}
    source = write(tmp_path / "mixed.jsonl", [old_eval, old_verify, {"note": "x"}])
    with source.open("a") as handle:
        handle.write('{"torn": \n[1]\n')
    out = tmp_path / "rescored.jsonl"
    printed = cli("rescore", str(source), "--reward", "binary", "--out", str(out))
    assert read(out) == [old_eval, old_verify, {"note": "x"}]
    assert "left as it was (1 row): an eval results row without its stored verdict ('grade')" in printed
    assert "left as it was (1 row): a /verify answer without tests" in printed
    assert "left as it was (1 row): neither an eval results row nor a /verify answer" in printed
    assert "mixed.jsonl:4: malformed JSON" in printed and "mixed.jsonl:5: not a JSON object" in printed
    missing = CliRunner().invoke(app, ["rescore", str(tmp_path / "nothing"), "--reward", "binary", "--out", str(out)])
    assert missing.exit_code == 2 and "no such file" in missing.output


def test_comprehension_rows_are_rescored_from_their_credit(runner, tmp_path):
    pytest.importorskip("nltk")
    data = write_comprehension_dataset(tmp_path / "comprehension.jsonl")
    reference = COMPREHENSION_REFERENCES[FIFO][2]
    texts = [json.dumps({"response": reference}), json.dumps({"response": " ".join(reference.split()[:7])})]
    answers = write(tmp_path / "answers.jsonl", [{"id": FIFO, "sample": s, "response": t} for s, t in enumerate(texts)])
    cli("eval", str(data), "--responses", str(answers), "--id", FIFO, "--reward", "binary", "--out", str(tmp_path / "run"))
    problem = load_dataset(str(data))[FIFO]
    here = [Grader(runner).grade_response(problem, text) for text in texts]
    assert here[0].passed and not here[1].passed and 0 < here[1].credit < 1
    cli("rescore", str(tmp_path / "run"), "--reward", "partial", "--out", str(tmp_path / "partial.jsonl"))
    assert [r["reward"] for r in read(tmp_path / "partial.jsonl")] == pytest.approx([make_reward("partial")(g) for g in here])
    assert [r["reward"] for r in read(tmp_path / "partial.jsonl")] == pytest.approx([g.credit for g in here])
