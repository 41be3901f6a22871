"""Local grading executors (threads, processes) with real grading: verdicts, deadlines that
kill the sandbox, a crashed worker's job retried, and the env's ``grading_deadline``."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path

import gymnasium as gym
import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.execution.executor_factory import make_executor, parse_executor
from cvdp_gym.execution.executors import ProcessExecutor, ThreadExecutor
from cvdp_gym.execution.jobs import noop_job
from cvdp_gym.grading import Grader
from cvdp_gym.interrupt import proc_info
from tests.support import hanging_answer, sandboxes_under

pytestmark = pytest.mark.sandbox

PROBLEMS = load_dataset("bundled")
EDGE = PROBLEMS["cvdp_gym_edge_detector_0001"]
def worker_processes() -> list[int]:
    """This test process's grading worker processes (``python -m cvdp_gym.execution.worker``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            info = proc_info(int(entry.name))
            try:
                if info and info.ppid == os.getpid() and b"cvdp_gym.execution.worker" in (entry / "cmdline").read_bytes():
                    found.append(info.pid)
            except OSError:
                continue
    return found


def wait_until(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_executor_specs():
    assert parse_executor("ray:10.0.0.1:6379") == ("ray", "10.0.0.1:6379")
    assert parse_executor("processes:4") == ("processes", "4")
    assert parse_executor("threads") == ("threads", None)
    for bad in ("gpu", "threads:many", "process"):
        with pytest.raises(ValueError):
            parse_executor(bad)
    pool = make_executor("threads:3")
    assert isinstance(pool, ThreadExecutor) and pool.capacity == 3
    assert make_executor(pool) is pool
    pool.close()


@pytest.mark.parametrize("spec", ["threads:2", "processes:2"])
def test_verdicts_match_grading_in_place(runner, spec):
    problems = [EDGE, PROBLEMS["cvdp_gym_traffic_light_0001"]]
    items = [(p, answer_text(p, p.reference)) for p in problems]
    items.append((EDGE, answer_text(EDGE, {"rtl/edge_detector.sv": "module edge_detector(input clk; endmodule"})))
    items.append((EDGE, "no code at all"))
    here = asyncio.run(Grader(runner, cache=None).grade_many(items))
    pool = make_executor(spec)
    try:
        assert pool.submit(noop_job, 7).result(timeout=60) == 7
        there = asyncio.run(Grader(runner, cache=None, executor=pool).grade_many(items))
    finally:
        pool.close()
    assert [(r.passed, r.failure_class, r.tests.total) for r in there] == [
        (r.passed, r.failure_class, r.tests.total) for r in here
    ]
    assert [r.failure_class for r in there] == [None, None, "build_error", "format_error"]


@pytest.mark.parametrize("spec", ["threads:1", "processes:1", None])
def test_a_hanging_answer_is_cut_at_the_deadline_and_its_sandbox_killed(runner, spec):
    pool = make_executor(spec) if spec else None
    grader = Grader(runner, cache=None, executor=pool)
    try:
        start = time.monotonic()
        result = grader.grade_files(EDGE, hanging_answer(EDGE), deadline=time.time() + 4)
        assert result.late and result.failure_class == "timeout"
        assert "deadline" in result.reason
        assert time.monotonic() - start < 60  # the harness limit is 300 s
        assert wait_until(lambda: sandboxes_under({os.getpid()}) == {}, 15)
        # The executor goes on grading.
        assert grader.grade_files(EDGE, EDGE.reference).passed
    finally:
        if pool is not None:
            pool.close()


def test_a_crashed_worker_process_loses_no_result(runner):
    pool = ProcessExecutor(2)
    grader = Grader(runner, cache=None, executor=pool)
    problems = [p for p in PROBLEMS.problems if not p.agentic and "verilator" not in p.harness.get("src/.env", "")][:4]
    items = [(p, answer_text(p, p.reference)) for p in problems]
    killed: list[int] = []

    def kill_a_busy_worker() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for worker in worker_processes():
                if sandboxes_under({worker}):
                    os.kill(worker, signal.SIGKILL)
                    killed.append(worker)
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    try:
        results = asyncio.run(grader.grade_many(items))
    finally:
        killer.join()
        pool.close()
    assert killed, "no worker was caught running a sandbox"
    assert [r.problem_id for r in results] == [p.id for p in problems]
    assert all(r.passed for r in results), [(r.problem_id, r.reason) for r in results]


def test_env_grading_deadline_scores_a_late_answer_timeout():
    env = gym.make("CVDP-SingleShot-v0", ids=[EDGE.id], cache=False, executor="processes:1")
    try:
        env.reset(options={"problem_id": EDGE.id, "grading_deadline": time.time() + 3})
        _, reward, terminated, _, info = env.step(answer_text(EDGE, hanging_answer(EDGE)))
        assert terminated and info["late"] and info["failure_class"] == "timeout"
        assert reward == pytest.approx(0.1)  # format credit only
        env.reset(options={"problem_id": EDGE.id})
        _, reward, _, _, info = env.step(answer_text(EDGE, EDGE.reference))
        assert info["passed"] and not info["late"] and reward == pytest.approx(1.4)
        with pytest.raises(TypeError):
            env.reset(options={"problem_id": EDGE.id, "grading_deadline": "soon"})
    finally:
        env.unwrapped.grader.executor.close()
        env.close()
