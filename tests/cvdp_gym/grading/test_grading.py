"""Staged grading, rewards and the cache, on the bundled problems with the real simulator."""

from __future__ import annotations

import asyncio
import multiprocessing
import time

import pytest

from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.execution.cache import GradeCache, content_key
from cvdp_gym.grading import Grader, make_reward
from cvdp_gym.grading.interface import check_interface
from cvdp_gym.grading.rewards import REWARDS, binary, make_reward_parts, partial, shaped

pytestmark = pytest.mark.sandbox

PROBLEMS = load_dataset("bundled")
# Icarus problems only: the Verilator one is covered by the harness tests.
FAST = [p for p in PROBLEMS if "verilator" not in p.harness.get("src/.env", "")]
GRADER_CLASS = {"wrong_port_name": "interface_error"}  # caught before simulating


@pytest.fixture(scope="module")
def grader(runner):
    return Grader(runner)


def fenced(files: dict[str, str]) -> str:
    return "\n".join(f"File `{path}`:\n```systemverilog\n{text}```\n" for path, text in files.items())


@pytest.mark.parametrize("problem", FAST, ids=[p.id for p in FAST])
def test_reference_answers_score_the_maximum(grader, problem):
    result = grader.grade_response(problem, "<think>plan</think>\n" + fenced(problem.reference))
    assert [s.passed for s in result.stages] == [True, True, True, True], result.reason
    assert shaped(result) == pytest.approx(1.4) and partial(result) == pytest.approx(1.4) and binary(result) == 1.0


CANDIDATES = [c for c in bundled_candidates() if c.problem_id in {p.id for p in FAST}]


@pytest.mark.parametrize("candidate", CANDIDATES, ids=[f"{c.problem_id}-{c.name}" for c in CANDIDATES])
def test_known_wrong_answers_get_their_stage_class_and_reward(grader, candidate):
    result = grader.grade_files(PROBLEMS[candidate.problem_id], candidate.files)
    expected = GRADER_CLASS.get(candidate.name, candidate.expected_class)
    assert result.failure_class == expected, result.reason
    reward = {"build_error": 0.1, "interface_error": 0.4, "test_failure": 0.4}[expected]
    assert shaped(result) == pytest.approx(reward)
    if expected == "build_error":
        assert result.stage("interface").passed is None and result.stage("tests").passed is None
    if expected == "test_failure":
        assert 0 <= partial(result) - 0.4 < 1.0 and result.tests.failed > 0


def test_no_code_is_a_format_error_without_simulating(grader):
    problem = FAST[0]
    time.monotonic()
    result = grader.grade_response(problem, "I think the answer is to use a counter.")
    assert result.failure_class == "format_error" and shaped(result) == 0.0
    assert result.stage("syntax").passed is None  # nothing compiled or simulated


def test_interface_check_reports_what_is_wrong():
    problem = PROBLEMS["cvdp_gym_edge_detector_0001"]
    good = check_interface(problem, problem.reference)
    assert good.ok and good.top
    renamed = {p: t.replace("rst_n", "reset") for p, t in problem.reference.items()}
    bad = check_interface(problem, renamed)
    assert not bad.ok and bad.missing_ports == ["rst_n"] and "dut.rst_n" in bad.detail


def test_reward_options():
    problem = FAST[0]
    grader = Grader(lint=True, interface=True)
    wrong = next(c for c in CANDIDATES if c.problem_id == problem.id and c.name == "functional_bug")
    result = grader.grade_files(problem, wrong.files)
    assert make_reward("shaped", interface_credit=0.2)(result) == pytest.approx(0.6)
    assert make_reward(lambda r: 7.0)(result) == 7.0
    # Every reward is the sum of its parts (NeMo-Gym's reward_components), exactly.
    credited = make_reward_parts("shaped", interface_credit=0.2)(result)
    assert credited == pytest.approx({"format": 0.1, "syntax": 0.3, "tests": 0.0, "interface": 0.2})
    assert make_reward_parts("binary")(result) == {"tests": 0.0} and make_reward_parts(lambda r: 7.0)(result) == {"reward": 7.0}
    partial_parts = make_reward_parts("partial")(result)
    assert 0 < partial_parts["tests"] < 1 and partial_parts["tests"] == pytest.approx(result.test_fraction)
    for kind, reward in REWARDS.items():
        assert reward(result) == make_reward(kind)(result) == sum(make_reward_parts(kind)(result).values())
    assert make_reward("partial", interface_credit=0.2)(result) == sum({**partial_parts, "interface": 0.2}.values())
    with pytest.raises(ValueError, match="unknown reward"):
        make_reward("nope")


def test_cache_hit_is_fast_and_identical(runner, tmp_path):
    grader = Grader(runner, cache=tmp_path / "grades.sqlite")
    problem = FAST[0]
    first = grader.grade_files(problem, problem.reference)
    start = time.perf_counter()
    second = grader.grade_files(problem, problem.reference)
    assert time.perf_counter() - start < 0.05
    assert second.cached and not first.cached
    assert second.to_dict() | {"cached": False, "wall_s": 0} == first.to_dict() | {"cached": False, "wall_s": 0}
    changed = {p: t + "\n// a comment\n" for p, t in problem.reference.items()}
    assert not grader.grade_files(problem, changed).cached


def _writer(path: str, worker: int) -> None:
    cache = GradeCache(path)
    for i in range(200):
        cache.put(content_key(worker, i), {"worker": worker, "i": i})


def test_cache_is_safe_with_several_writing_processes(tmp_path):
    path = str(tmp_path / "c.sqlite")
    GradeCache(path)
    procs = [multiprocessing.get_context("spawn").Process(target=_writer, args=(path, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    cache = GradeCache(path)
    assert len(cache) == 800 and cache.get(content_key(3, 199)) == {"worker": 3, "i": 199}


def test_async_grading_keeps_order(grader):
    problems = FAST[:3]
    items = [(p, fenced(p.reference)) for p in problems] + [(problems[0], "no code")]
    results = asyncio.run(grader.grade_many(items, concurrency=2))
    assert [r.problem_id for r in results] == [p.id for p in problems] + [problems[0].id]
    assert [r.passed for r in results] == [True, True, True, False]
