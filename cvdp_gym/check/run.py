"""Running ``check``'s jobs: in parallel threads (or on an executor), each outcome appended as it
finishes, resumable; Ctrl-C cancels the queued jobs and kills the running sandboxes at once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from pathlib import Path

from cvdp_gym.check.jobs import CheckJob
from cvdp_gym.check.outcomes import CheckOutcome, read_done
from cvdp_gym.errors import PatchError, RepoUnavailable
from cvdp_gym.execution.executors import GradeExecutor
from cvdp_gym.execution.jobs import RunnerSpec, harness_job
from cvdp_gym.harness.randomness import harness_randomness
from cvdp_gym.harness.results import HARNESS_ERROR, UNSUPPORTED, HarnessResult
from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.interrupt import Children, sigint_ignored
from cvdp_gym.seeds import seed_list

__all__ = ["CheckInterrupted", "run_jobs"]

#: After Ctrl-C, how long to keep killing sandboxes while the running jobs wind down.
STOP_TIMEOUT_S = 1.5


class CheckInterrupted(KeyboardInterrupt):
    """Ctrl-C during ``run_jobs``: queued jobs were cancelled and running sandboxes killed.

    ``finished``: the outcomes kept (all also in the results file); ``unfinished``: how
    many jobs did not run to the end; ``stuck``: jobs whose thread had not returned when
    we stopped waiting (their sandboxes are killed, but their cleanup may still be going:
    ``settle`` waits for it).
    """

    def __init__(
        self, finished: list[CheckOutcome], unfinished: int, running: Iterable[Future[CheckOutcome]] = ()
    ) -> None:
        super().__init__(f"interrupted: {len(finished)} jobs finished, {unfinished} not")
        self.finished = finished
        self.unfinished = unfinished
        self._running = [f for f in running if not f.done()]
        self.stuck = len(self._running)

    def settle(self, timeout: float) -> int:
        """Wait up to ``timeout`` s for the stuck jobs' cleanup (run folders, cgroups);
        returns how many are still not done."""
        return len(wait(self._running, timeout=timeout).not_done)


def run_jobs(
    jobs: list[CheckJob],
    runner: HarnessRunner,
    *,
    jobs_parallel: int = 1,
    out_path: Path | None = None,
    resume: bool = False,
    on_done: Callable[[CheckOutcome], None] | None = None,
    executor: GradeExecutor | None = None,
    seed: int | None = None,
    seeds: int = 1,
) -> list[CheckOutcome]:
    """Run every job (in parallel threads), appending each outcome to ``out_path``.

    ``executor``: run the harnesses there (processes, a Ray cluster) instead of in the
    threads; ``jobs_parallel`` should then be its capacity. ``seed``: every harness runs
    with it (None: fresh seeds); ``seeds``: runs of a randomised harness (see the module doc).

    On Ctrl-C (``KeyboardInterrupt`` in the calling thread) raises ``CheckInterrupted``
    within about ``STOP_TIMEOUT_S``: jobs that finished before the signal are kept (and
    written), the rest are cancelled, and the sandboxes this run started are killed.
    """
    done = read_done(out_path) if (resume and out_path is not None) else {}
    if done and out_path is not None:
        # Drop a torn last line left by an interrupted run, so appends start on a clean line.
        # Write aside and rename: a Ctrl-C mid-write must not lose the finished results.
        fresh = out_path.with_name(out_path.name + ".tmp")
        fresh.write_text("".join(json.dumps(o.to_json()) + "\n" for o in done.values()), encoding="utf-8")
        os.replace(fresh, out_path)
    if out_path is not None and not resume and out_path.exists():
        out_path.unlink()
    outcomes = [done[j.key] for j in jobs if j.key in done]
    for outcome in outcomes:
        if on_done:
            on_done(outcome)
    todo = [j for j in jobs if j.key not in done]
    finished: dict[Future[CheckOutcome], CheckOutcome] = {}

    spec = RunnerSpec.of(runner) if executor is not None else None
    remote: set[Future[HarnessResult]] = set()

    def run_seed(job: CheckJob, files: Mapping[str, str], one: int | None) -> HarnessResult:
        if executor is None:  # a runner of the caller's may not take a seed: give one only when set
            return runner.run(job.problem, files) if one is None else runner.run(job.problem, files, seed=one)
        sent = executor.submit(harness_job, spec, job.problem, files, one)
        remote.add(sent)
        try:
            return sent.result()
        finally:
            remote.discard(sent)

    def run_one(job: CheckJob) -> CheckOutcome:
        files, failed = _job_files(job, runner)
        if failed is not None:
            return CheckOutcome(job.key, job.problem.id, job.name, job.expected, failed)
        if seeds < 2 or not harness_randomness(job.problem.harness):
            return CheckOutcome(job.key, job.problem.id, job.name, job.expected, run_seed(job, files, seed))
        runs: list[HarnessResult] = []
        for one in seed_list(seeds, seed):
            runs.append(run_seed(job, files, one))
            if runs[-1].seed is None:  # no harness ran (unsupported, a bad path): no seed changes it
                break
        shown = next((r for r in runs if not r.passed), runs[0])  # as the grader's seeds.combine
        verdicts = [{"seed": r.seed, "verdict": r.verdict} for r in runs]
        return CheckOutcome(job.key, job.problem.id, job.name, job.expected, shown, verdicts)

    def record(future: Future[CheckOutcome]) -> None:
        """Write a finished outcome (main thread only). Storing it in ``finished`` is one
        step, so a Ctrl-C in between at worst writes a line twice; resuming dedupes by key."""
        if future in finished:
            return
        outcome = future.result()
        if out_path is not None:
            with open(out_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(outcome.to_json()) + "\n")
        finished[future] = outcome
        if on_done:
            on_done(outcome)

    if out_path is not None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
    ours = Children.snapshot()
    pool = ThreadPoolExecutor(max_workers=max(1, jobs_parallel))
    futures: list[Future[CheckOutcome]] = []
    try:
        for job in todo:
            futures.append(pool.submit(run_one, job))
        for future in as_completed(futures):
            record(future)
    except KeyboardInterrupt:
        with sigint_ignored():
            for sent in list(remote):
                executor.cancel(sent)
            running = _stop(runner, pool, futures, ours, record)
        kept = _in_order([*outcomes, *finished.values()], jobs)
        raise CheckInterrupted(kept, len(jobs) - len(kept), running) from None
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return _in_order([*outcomes, *finished.values()], jobs)


def _job_files(job: CheckJob, runner: HarnessRunner) -> tuple[dict[str, str], HarnessResult | None]:
    """The files a job runs, or the result that stops it first (a golden patch whose
    repository is missing, or that does not apply to it)."""
    if not job.golden:
        return job.files, None
    try:
        return runner.repos.reference(job.problem), None
    except RepoUnavailable as exc:
        result = HarnessResult.failure(job.problem.id, UNSUPPORTED, str(exc))
    except PatchError as exc:
        result = HarnessResult.failure(job.problem.id, HARNESS_ERROR, str(exc))
    result.toolchain = dict(runner.versions)
    return {}, result


def _stop(
    runner: HarnessRunner,
    pool: ThreadPoolExecutor,
    futures: list[Future[CheckOutcome]],
    ours: Children,
    record: Callable[[Future[CheckOutcome]], None],
) -> list[Future[CheckOutcome]]:
    """Cancel the queue, keep what finished before the signal, kill the rest; returns the
    jobs still running when we gave up waiting (none, normally)."""
    pool.shutdown(wait=False, cancel_futures=True)
    # Finished before any kill: real verdicts. Anything finishing later may be a casualty.
    before = [f for f in futures if f.done() and not f.cancelled() and f.exception() is None]
    running = [f for f in futures if not f.done()]
    cancel = getattr(getattr(runner, "sandbox", None), "cancel", None)  # containers: not our children
    if callable(cancel):
        cancel()
    ours.kill_until(lambda: all(f.done() for f in running), STOP_TIMEOUT_S)
    for future in before:
        record(future)
    return [f for f in running if not f.done()]


def _in_order(outcomes: list[CheckOutcome], jobs: list[CheckJob]) -> list[CheckOutcome]:
    order = {j.key: i for i, j in enumerate(jobs)}
    return sorted(outcomes, key=lambda o: order.get(o.job_key, 0))
