#!/usr/bin/env python
"""Measure grading speed: cache hits, early rejection, executors' throughput and overhead.

One run prints:
- the median time of a cache hit and of rejecting an answer with a syntax error (the lint
  stage: no simulation);
- what one answer costs: CPU time (user + sys of the sandboxed processes, plus the grading
  thread's own) and wall time, from a one-at-a-time pass;
- graded answers/s over the bundled set (references and known-wrong candidates, Icarus
  problems) for threads (1), threads (2), processes (2) and Ray (2 CPUs on 2 nodes of a
  loopback cluster on this machine), and Ray's share of processes (2) (target >= 90%);
- each executor's own cost per job (``noop_job``): many submitted at once, and one at a time
  (target for Ray < 20 ms);
- the grading CPUs that keep grade-wait under 10% of a training step (README: "How many
  grading CPUs").

    .venv/bin/python scripts/bench_grading.py [--repeat 2] [--quick] [--no-ray]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import math
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.data.problems import Problem
from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.execution.executors import GradeExecutor, ProcessExecutor, ThreadExecutor
from cvdp_gym.execution.jobs import noop_job
from cvdp_gym.grading import Grader, GradeResult

Answers = list[tuple[Problem, str]]
#: Step times the README quotes for Tinker (30B student), for the CPU sizing table.
STEP_TIMES_S = (45.0, 75.0)
ANSWERS_PER_STEP = (64, 256, 1024)
WAIT_SHARE = 0.10
PR_SET_CHILD_SUBREAPER = 36


@dataclass
class JobCost:
    """One graded answer's cost, measured around its job."""

    problem_id: str
    failure_class: str | None
    simulated: bool  # reached the tests stage (else rejected by lint or the interface check)
    cpu_s: float
    wall_s: float


def set_child_subreaper(on: bool) -> None:
    """Adopt orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``).

    ``bwrap`` exits on its sandbox's exit status without waiting for the sandbox's PID 1,
    so the simulation's CPU time never reaches this process's ``RUSAGE_CHILDREN``; as a
    subreaper this process adopts that PID 1 and reaps it, CPU time included.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def reap_orphans(timeout_s: float = 2.0) -> None:
    """Wait for every child left (the adopted sandbox PID 1s) until none remains."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.005)


class MeasuredThreadExecutor:
    """One grading thread that records each job's CPU and wall time.

    Jobs run one at a time and nothing else in this process starts processes meanwhile, so
    the growth of ``RUSAGE_CHILDREN`` (the sandboxed processes, reaped as a subreaper) plus
    the thread's own CPU time is that job's CPU cost.
    """

    name = "threads"
    capacity = 1

    def __init__(self) -> None:
        self._inner = ThreadExecutor(workers=1)
        self.costs: list[JobCost] = []
        set_child_subreaper(True)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        return self._inner.submit(self._measured, fn, args)

    def _measured(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        thread_before, start = time.thread_time(), time.perf_counter()
        result = fn(*args)
        wall = time.perf_counter() - start
        reap_orphans()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        cpu += time.thread_time() - thread_before
        problem = next(a for a in args if isinstance(a, Problem))
        tests = next(s for s in result["stages"] if s["name"] == "tests")
        self.costs.append(JobCost(problem.id, result["failure_class"], tests["passed"] is not None, cpu, wall))
        return result

    def cancel(self, future: Future[Any]) -> None:
        self._inner.cancel(future)

    def close(self) -> None:
        self._inner.close()
        set_child_subreaper(False)


def answer_set(quick: bool) -> tuple[Answers, dict[str, Problem]]:
    """References and known-wrong candidates of the bundled Icarus problems."""
    dataset = load_dataset("bundled")
    fast = [p for p in dataset if "verilator" not in p.harness.get("src/.env", "")]
    by_id = {p.id: p for p in fast}
    answers = [(p, answer_text(p, p.reference)) for p in fast]
    answers += [
        (by_id[c.problem_id], answer_text(by_id[c.problem_id], c.files))
        for c in bundled_candidates()
        if c.problem_id in by_id
    ]
    return (answers[::2] if quick else answers), by_id


def cache_hit_times(answers: Answers, count: int = 50) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        cached = Grader(cache=Path(tmp) / "grades.sqlite")
        problem, answer = answers[0]
        cached.grade_response(problem, answer)
        hits = []
        for _ in range(count):
            start = time.perf_counter()
            result = cached.grade_response(problem, answer)
            hits.append(time.perf_counter() - start)
            assert result.cached
    return hits


def syntax_reject_times(by_id: dict[str, Problem]) -> list[float]:
    grader = Grader(cache=None)
    syntax = [
        (by_id[c.problem_id], answer_text(by_id[c.problem_id], c.files))
        for c in bundled_candidates()
        if c.name == "syntax_error" and c.problem_id in by_id
    ]
    grader.grade_response(*syntax[0])  # warm up
    rejects = []
    for problem, answer in syntax:
        start = time.perf_counter()
        result = grader.grade_response(problem, answer)
        rejects.append(time.perf_counter() - start)
        assert result.failure_class == "build_error", result.reason
    return rejects


def verdicts(results: Sequence[GradeResult]) -> list[tuple[str | None, bool]]:
    return [(r.failure_class, r.passed) for r in results]


def timed_pass(grader: Grader, answers: Answers) -> tuple[float, list[GradeResult]]:
    """Answers/s of one ``grade_many`` over ``answers`` (all sent at once, no cache)."""
    start = time.perf_counter()
    results = asyncio.run(grader.grade_many(answers))
    return len(results) / (time.perf_counter() - start), results


def warm_up(grader: Grader, answers: Answers, capacity: int) -> None:
    """Start every worker and build its runner: a few simulating answers per slot."""
    asyncio.run(grader.grade_many(answers[: max(2, 2 * capacity)]))


def noop_overhead(executor: GradeExecutor, batch: int, serial: int) -> tuple[float, float]:
    """Milliseconds per ``noop_job``: ``batch`` submitted at once, and the median of
    ``serial`` round trips one at a time."""
    for future in [executor.submit(noop_job, i) for i in range(4 * executor.capacity)]:
        future.result()
    start = time.perf_counter()
    for future in [executor.submit(noop_job, i) for i in range(batch)]:
        future.result()
    per_task = (time.perf_counter() - start) / batch
    trips = []
    for i in range(serial):
        start = time.perf_counter()
        executor.submit(noop_job, i).result()
        trips.append(time.perf_counter() - start)
    return per_task * 1000, statistics.median(trips) * 1000


def p90(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else values[0]


def cost_table(costs: list[JobCost]) -> Table:
    table = Table(title="cost of one answer (threads (1): one job at a time)")
    for column in ("answers", "n", "CPU mean", "CPU median", "CPU p90", "CPU max", "wall mean", "wall p90", "CPU / wall"):
        table.add_column(column)
    simulated = [c for c in costs if c.simulated]
    rejected = [c for c in costs if not c.simulated]
    for label, group in (("all", costs), ("simulated", simulated), ("rejected before simulation", rejected)):
        if not group:
            continue
        cpu, wall = [c.cpu_s for c in group], [c.wall_s for c in group]
        table.add_row(
            label, str(len(group)), f"{statistics.mean(cpu):.2f} s", f"{statistics.median(cpu):.2f} s",
            f"{p90(cpu):.2f} s", f"{max(cpu):.2f} s", f"{statistics.mean(wall):.2f} s", f"{p90(wall):.2f} s",
            f"{sum(cpu) / sum(wall):.2f}",
        )
    return table


def sizing_table(cpu_per_answer: float) -> Table:
    """CPUs so that grading a whole step's answers after its last sample takes at most
    ``WAIT_SHARE`` of the step (the conservative case: no overlap with sampling)."""
    table = Table(title=f"grading CPUs for grade-wait <= {WAIT_SHARE:.0%} of a step, all grading after sampling "
                        f"({cpu_per_answer:.2f} CPU-s per answer, measured)")
    table.add_column("answers / step")
    for step in STEP_TIMES_S:
        table.add_column(f"{step:.0f} s step")
    for count in ANSWERS_PER_STEP:
        table.add_row(str(count), *(str(math.ceil(count * cpu_per_answer / (WAIT_SHARE * s))) for s in STEP_TIMES_S))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="rounds of processes (2) and Ray, taken in turns")
    parser.add_argument("--quick", action="store_true", help="half the answers, one round, fewer no-op jobs")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray cluster")
    parser.add_argument("--noop-jobs", type=int, default=500, help="no-op jobs submitted at once per executor")
    parser.add_argument("--noop-serial", type=int, default=100, help="no-op jobs timed one at a time")
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.noop_jobs, args.noop_serial = 1, 200, 50
    console = Console(width=130)
    load_before = os.getloadavg()[0]
    answers, by_id = answer_set(args.quick)
    simulating = [a for a in answers if a[1] == answer_text(a[0], a[0].reference)]

    with console.status("cache hits and syntax-error rejections"):
        hits = cache_hit_times(answers)
        rejects = syntax_reject_times(by_id)

    rates: dict[str, list[float]] = {}
    same: dict[str, bool] = {}
    overhead: dict[str, tuple[float, float]] = {}

    measured = MeasuredThreadExecutor()
    grader = Grader(cache=None, executor=measured)
    with console.status(f"threads (1): {len(answers)} answers one at a time (CPU and wall per answer)"):
        warm_up(grader, simulating, 1)
        measured.costs.clear()
        rate, baseline = timed_pass(grader, answers)
    rates["threads (1)"], same["threads (1)"] = [rate], True
    costs = list(measured.costs)
    measured.close()
    console.log(f"threads (1): {rate:.2f} answers/s")

    threads = ThreadExecutor(workers=2)
    grader = Grader(cache=None, executor=threads)
    with console.status("threads (2)"):
        warm_up(grader, simulating, 2)
        rate, results = timed_pass(grader, answers)
        overhead["threads (2)"] = noop_overhead(threads, args.noop_jobs, args.noop_serial)
    rates["threads (2)"], same["threads (2)"] = [rate], verdicts(results) == verdicts(baseline)
    threads.close()
    console.log(f"threads (2): {rate:.2f} answers/s")

    graders: dict[str, Grader] = {}
    processes = ProcessExecutor(workers=2)
    graders["processes (2)"] = Grader(cache=None, executor=processes)
    cluster = None
    if not args.no_ray:
        from cvdp_gym.execution.ray_executor import RayExecutor
        from cvdp_gym.execution.ray_local import LocalRayCluster, use_loopback_driver

        use_loopback_driver()
        with console.status("starting a 2-node Ray cluster on 127.0.0.1 (1 CPU per node)"):
            cluster = LocalRayCluster(nodes=2, cpus_per_node=1).start()
            graders["ray (2 nodes x 1 CPU)"] = Grader(cache=None, executor=RayExecutor(cluster.address))
    try:
        for label, each in graders.items():
            with console.status(f"warming up {label}"):
                warm_up(each, simulating, each.executor.capacity)
        for round_ in range(args.repeat):
            for label, each in graders.items():
                with console.status(f"round {round_ + 1}/{args.repeat}: {label}"):
                    rate, results = timed_pass(each, answers)
                rates.setdefault(label, []).append(rate)
                same[label] = same.get(label, True) and verdicts(results) == verdicts(baseline)
                console.log(f"round {round_ + 1}: {label}: {rate:.2f} answers/s")
        for label, each in graders.items():
            with console.status(f"{label}: no-op jobs"):
                overhead[label] = noop_overhead(each.executor, args.noop_jobs, args.noop_serial)
    finally:
        for each in graders.values():
            each.executor.close()
        if cluster is not None:
            with console.status("stopping the Ray cluster"):
                cluster.stop()

    table = Table(title="grading speed (bundled set, Icarus problems)")
    for column in ("measure", "value", "target"):
        table.add_column(column)
    table.add_row("cache hit (median of 50)", f"{statistics.median(hits) * 1000:.2f} ms", "milliseconds")
    table.add_row(f"syntax-error rejection (median of {len(rejects)})", f"{statistics.median(rejects):.3f} s", "< 0.1 s")
    console.print(table)

    table = Table(title=f"graded answers/s ({len(answers)} answers sent at once; median of rounds; "
                        f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after)")
    for column in ("executor", "answers/s", "rounds", "vs threads (1)", "same verdicts as threads (1)"):
        table.add_column(column)
    base = statistics.median(rates["threads (1)"])
    for label, values in rates.items():
        median = statistics.median(values)
        table.add_row(label, f"{median:.2f}", " ".join(f"{v:.2f}" for v in values), f"{median / base:.2f}x",
                      "yes" if same[label] else "NO")
    console.print(table)
    ray_label = "ray (2 nodes x 1 CPU)"
    if ray_label in rates:
        share = statistics.median(rates[ray_label]) / statistics.median(rates["processes (2)"])
        console.print(f"Ray / processes (2) throughput: [bold]{share:.0%}[/] (target >= 90%)")

    table = Table(title="executor overhead per job (noop_job)")
    for column in ("executor", f"{args.noop_jobs} at once, per job", f"one at a time, median of {args.noop_serial}", "target"):
        table.add_column(column)
    for label, (batch, serial) in overhead.items():
        table.add_row(label, f"{batch:.2f} ms", f"{serial:.2f} ms", "< 20 ms" if label == ray_label else "")
    console.print(table)

    console.print(cost_table(costs))
    simulated = [c.cpu_s for c in costs if c.simulated]
    console.print(sizing_table(statistics.mean(simulated) if simulated else statistics.mean(c.cpu_s for c in costs)))


if __name__ == "__main__":
    main()
