"""Grading on a real Ray cluster: a head and a second node on this machine, loopback only.

The cluster is started with ``ray start`` (``LocalRayCluster``) and stopped afterwards, by
the process groups it started. The bundled set must get the same verdicts as local threads,
a worker killed mid-run must lose no result, a hanging answer must be cut at the deadline
with its sandbox gone, and a node without the toolchain must be named with the fix.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from cvdp_gym.check import run_jobs
from cvdp_gym.data import load_dataset
from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.errors import NodeToolchainError
from cvdp_gym.execution.jobs import RunnerSpec
from cvdp_gym.grading import Grader
from tests.support import hanging_answer, sandboxes_under, verdict_summary

ray = pytest.importorskip("ray")

from cvdp_gym.execution.ray_executor import RayExecutor  # noqa: E402
from cvdp_gym.execution.ray_local import LocalRayCluster, use_loopback_driver  # noqa: E402

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

PROBLEMS = load_dataset("bundled")
@pytest.fixture(scope="module")
def cluster(toolchain):
    with LocalRayCluster(nodes=2, cpus_per_node=1) as running:
        use_loopback_driver()
        yield running
    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture(scope="module")
def executor(cluster):
    pool = RayExecutor(cluster.address)
    yield pool
    pool.close()


def _ray_workers(cluster: LocalRayCluster) -> set[int]:
    """PIDs of this cluster's Ray worker processes (title ``ray::...``, in its sessions)."""
    sessions = {proc.pid for proc in cluster.processes}
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        session = int(stat[stat.rfind(b")") + 2 :].split()[3])
        if title.startswith(b"ray::") and not title.startswith((b"ray::Dashboard", b"ray::RuntimeEnv")) and session in sessions:
            found.add(int(entry.name))
    return found


#: Loopback as ``/proc/net/tcp{,6}`` print it (127.0.0.1, ::ffff:127.0.0.1, ::1).
LOOPBACK_HEX = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


def _listening_addresses(cluster: LocalRayCluster) -> set[str]:
    """Hex local addresses of every listening TCP socket held by the cluster's processes."""
    sessions = {proc.pid for proc in cluster.processes}
    inodes = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
            if int(stat[stat.rfind(b")") + 2 :].split()[3]) not in sessions:
                continue
            for fd in (entry / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found.add(fields[1].split(":")[0])
    return found


def test_cluster_has_two_nodes_on_loopback_only(cluster, executor):
    nodes = [n for n in ray.nodes() if n["Alive"]]
    assert len(nodes) == 2
    assert {n["NodeManagerAddress"] for n in nodes} == {"127.0.0.1"}
    assert executor.capacity == 2
    addresses = _listening_addresses(cluster)
    assert addresses and addresses <= LOOPBACK_HEX, addresses  # nothing reachable from outside


def test_grading_tasks_run_at_the_niceness_of_the_caller(executor):
    """Not at Ray's default of 15: a grading task (its sandbox and simulator with it) would
    otherwise get the CPU only after everything else on a busy node."""
    assert {executor.submit(os.getpriority, os.PRIO_PROCESS, 0).result(timeout=60) for _ in range(4)} == {0}


def test_bundled_set_gets_the_same_verdicts_as_local_threads(executor, runner, bundled_jobs, bundled_results):
    outcomes = run_jobs(bundled_jobs, runner, jobs_parallel=executor.capacity, executor=executor)
    assert len(outcomes) == len(bundled_jobs)
    through_ray = {o.job_key: verdict_summary(o.result) for o in outcomes}
    locally = {key: verdict_summary(result) for key, result in bundled_results.items()}
    different = {k: (locally[k], through_ray[k]) for k in locally if locally[k] != through_ray[k]}
    assert not different
    # Both nodes did work, with the toolchain the caller grades with.
    probes = executor.check_nodes(RunnerSpec.of(runner)) or []
    assert all(p["fingerprint"] == runner.toolchain.fingerprint() for p in probes)


def test_a_worker_killed_mid_run_loses_no_result(cluster, executor, runner):
    grader = Grader(runner, cache=None, executor=executor)
    problems = [p for p in PROBLEMS.problems if not p.agentic and "verilator" not in p.harness.get("src/.env", "")][:6]
    items = [(p, answer_text(p, p.reference)) for p in problems]
    killed: list[int] = []

    def kill_one_worker() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            running = sandboxes_under(_ray_workers(cluster))
            if running:
                worker = next(iter(running.values()))
                os.kill(worker, signal.SIGKILL)
                killed.append(worker)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_worker)
    killer.start()
    results = asyncio.run(grader.grade_many(items))
    killer.join()
    assert killed, "no worker was caught running a sandbox"
    assert killed[0] not in _ray_workers(cluster)
    assert [r.problem_id for r in results] == [p.id for p in problems]  # one result per answer
    assert all(r.passed for r in results), [(r.problem_id, r.failure_class, r.reason) for r in results]


def test_a_hanging_answer_is_cut_at_the_deadline_and_its_sandbox_killed(cluster, executor, runner):
    grader = Grader(runner, cache=None, executor=executor)
    problem = PROBLEMS["cvdp_gym_edge_detector_0001"]
    start = time.monotonic()
    result = grader.grade_files(problem, hanging_answer(problem), deadline=time.time() + 6)
    assert result.late and result.failure_class == "timeout"
    assert time.monotonic() - start < 250  # the harness limit is 300 s: the deadline cut it
    deadline = time.monotonic() + 30
    while sandboxes_under(_ray_workers(cluster)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sandboxes_under(_ray_workers(cluster)) == {}
    # The cluster still grades afterwards.
    assert grader.grade_files(problem, problem.reference).passed


def test_a_node_without_the_toolchain_is_named_with_the_fix(toolchain, runner, tmp_path, cluster):
    empty = tmp_path / "no-toolchain"
    empty.mkdir()
    if ray.is_initialized():
        ray.shutdown()
    with LocalRayCluster(nodes=2, cpus_per_node=1, env={"CVDP_GYM_TOOLCHAIN": str(empty)}) as bad:
        pool = RayExecutor(bad.address)
        try:
            with pytest.raises(NodeToolchainError) as caught:
                Grader(runner, cache=None, executor=pool).grade_files(
                    PROBLEMS["cvdp_gym_edge_detector_0001"], PROBLEMS["cvdp_gym_edge_detector_0001"].reference
                )
        finally:
            pool.close()
    message = str(caught.value)
    assert "1 of 2 Ray node(s) cannot grade" in message
    assert "cvdp-gym toolchain install" in message and str(empty) in message
