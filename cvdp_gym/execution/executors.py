"""Where grading jobs run: the ``GradeExecutor`` interface, and executors on local threads or processes.

Every executor takes a job (a module-level function and picklable arguments, see
``cvdp_gym.execution.jobs``) and returns a ``concurrent.futures.Future``; ``cancel(future)``
kills the job's sandbox wherever it runs. The grader, ``cvdp-gym check``, ``cvdp-gym eval``
and the trainer all submit through this one interface, chosen by a spec string
(``cvdp_gym.execution.executor_factory.make_executor``):

- ``threads[:N]`` (default): N threads in this process (N: the caller's concurrency);
- ``processes[:N]``: N worker processes on this machine (a crashed worker's job is retried);
- ``ray[:ADDRESS]``: one Ray task per job, each asking for one CPU; ``ray`` alone starts or
  joins a local instance (``RAY_ADDRESS`` is honoured), ``ray:auto`` joins the running
  cluster, ``ray:HOST:PORT`` a given head. Needs ``pip install 'cvdp-gym[ray]'``
  (``RayExecutor``, in ``ray_executor.py``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any, Protocol, runtime_checkable

from cvdp_gym.errors import UsageError, WorkerLost
from cvdp_gym.sandbox.cancel import CancelToken, cancellable

#: After a graceful cancel (SIGINT to a worker, KeyboardInterrupt in a Ray task), how long to
#: wait before killing the worker outright.
CANCEL_GRACE_S = 2.0


@runtime_checkable
class GradeExecutor(Protocol):
    """Runs grading jobs; ``capacity``: how many run at once."""

    name: str
    capacity: int

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]: ...

    def cancel(self, future: Future[Any]) -> None: ...

    def close(self) -> None: ...


class ThreadExecutor:
    """Jobs on threads of this process; a cancelled job's sandbox is killed via its token."""

    name = "threads"

    def __init__(self, workers: int = 2) -> None:
        self.capacity = max(1, workers)
        self._pool = ThreadPoolExecutor(max_workers=self.capacity, thread_name_prefix="grade")
        self._tokens: dict[Future[Any], CancelToken] = {}
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        token = CancelToken()

        def run() -> Any:
            with cancellable(token):
                return fn(*args)

        future = self._pool.submit(run)
        with self._lock:
            self._tokens[future] = token
        future.add_done_callback(self._forget)
        return future

    def _forget(self, future: Future[Any]) -> None:
        with self._lock:
            self._tokens.pop(future, None)

    def cancel(self, future: Future[Any]) -> None:
        if future.cancel():
            return
        with self._lock:
            token = self._tokens.get(future)
        if token is not None:
            token.cancel()

    def close(self) -> None:
        """Cancel every job and wait (``CANCEL_GRACE_S`` at most) for the running ones to
        clean up: a caller that exits right after (uvicorn re-raises SIGTERM once shut down)
        would otherwise cut their sandboxes' cleanup short, leaving cgroups and scratch."""
        with self._lock:
            running = dict(self._tokens)
        for token in running.values():
            token.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)
        futures.wait(list(running), timeout=CANCEL_GRACE_S)


class _PipeConnection:
    """Both ends a parent needs: receive from the worker, send to it."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._in = Connection(read_fd, writable=False)
        self._out = Connection(write_fd, readable=False)

    def send(self, obj: Any) -> None:
        self._out.send(obj)

    def recv(self) -> Any:
        return self._in.recv()

    def poll(self, timeout: float) -> bool:
        return self._in.poll(timeout)

    def close(self) -> None:
        self._out.close()
        self._in.close()


class _Job:
    __slots__ = ("args", "cancelled", "fn", "future", "id", "tries")

    def __init__(self, job_id: int, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.id, self.fn, self.args = job_id, fn, args
        self.future: Future[Any] = Future()
        self.cancelled = False
        self.tries = 0


class ProcessExecutor:
    """Jobs on a pool of worker processes of this machine.

    A job whose worker dies is run again on a fresh worker (up to ``max_retries`` times); a
    cancelled job's worker gets SIGINT (its sandbox is killed by the job's own cleanup),
    then SIGKILL after ``CANCEL_GRACE_S`` (the sandbox dies with it: ``--die-with-parent``).
    """

    name = "processes"

    def __init__(self, workers: int = 2, *, max_retries: int = 2) -> None:
        self.capacity = max(1, workers)
        self.max_retries = max_retries
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._ids = itertools.count()
        self._jobs: dict[Future[Any], _Job] = {}
        self._running: dict[int, Any] = {}  # job id -> worker process
        self._lock = threading.Lock()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._serve, name=f"grade-process-{i}", daemon=True)
            for i in range(self.capacity)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        if self._closed:
            raise UsageError("the executor is closed")
        job = _Job(next(self._ids), fn, args)
        with self._lock:
            self._jobs[job.future] = job
        job.future.add_done_callback(self._forget)
        self._queue.put(job)
        return job.future

    def _forget(self, future: Future[Any]) -> None:
        with self._lock:
            self._jobs.pop(future, None)

    def cancel(self, future: Future[Any]) -> None:
        with self._lock:
            job = self._jobs.get(future)
            if job is None:
                return
            job.cancelled = True
            process = self._running.get(job.id)
        if process is None:
            future.cancel()  # still queued: its worker thread will skip it
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGINT)

    def _spawn(self) -> tuple[Any, Any]:
        """A fresh ``python -m cvdp_gym.execution.worker`` (no fork of this threaded process,
        no re-import of the caller's main module), talking over a pipe pair; it dies with
        this process (``worker.die_with_parent``), sandbox and all, even on a SIGKILL."""
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        process = subprocess.Popen(
            [sys.executable, "-m", "cvdp_gym.execution.worker", str(to_child_r), str(from_child_w), str(os.getpid())],
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # the terminal's Ctrl-C is the caller's to handle (close())
        )
        os.close(to_child_r)
        os.close(from_child_w)
        return process, _PipeConnection(from_child_r, to_child_w)

    def _serve(self) -> None:
        """One worker process, fed by this thread; replaced when it dies or is killed."""
        process, conn = None, None
        try:
            while True:
                job = self._queue.get()
                if job is None:
                    return
                if job.cancelled or not job.future.set_running_or_notify_cancel():
                    continue
                while True:
                    if process is None or process.poll() is not None:
                        process, conn = self._spawn()
                    outcome = self._run_on(process, conn, job)
                    if outcome != "lost":
                        break
                    process, conn = _reap(process, conn)
                    job.tries += 1
                    if job.cancelled:
                        job.future.set_exception(CancelledError())
                        break
                    if job.tries > self.max_retries:
                        job.future.set_exception(WorkerLost(f"the worker died {job.tries} times running this job"))
                        break
        finally:
            _reap(process, conn)

    def _run_on(self, process: Any, conn: Any, job: _Job) -> str:
        """Send ``job`` to ``process`` and settle its future; ``"lost"`` if the worker died."""
        with self._lock:
            self._running[job.id] = process
        try:
            try:
                conn.send((job.id, job.fn, job.args))
            except (OSError, EOFError):
                return "lost"
            except Exception as exc:  # the arguments would not pickle
                job.future.set_exception(exc)
                return "done"
            interrupted_at: float | None = None
            while True:
                if conn.poll(0.2):
                    try:
                        _, status, value = conn.recv()
                    except (EOFError, OSError):
                        return "lost"
                    if status == "ok":
                        job.future.set_result(value)
                    elif status == "cancelled":
                        job.future.set_exception(CancelledError())
                    else:
                        job.future.set_exception(value)
                    return "done"
                if process.poll() is not None:
                    return "lost"
                if job.cancelled:
                    now = time.monotonic()
                    interrupted_at = interrupted_at or now
                    if now - interrupted_at > CANCEL_GRACE_S:
                        process.kill()
        finally:
            with self._lock:
                self._running.pop(job.id, None)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            self.cancel(job.future)
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join(timeout=CANCEL_GRACE_S + 3)


def _reap(process: Any, conn: Any) -> tuple[None, None]:
    """Stop a worker process (politely, then not) and close its pipe."""
    if conn is not None:
        with contextlib.suppress(Exception):
            conn.send(None)
        with contextlib.suppress(Exception):
            conn.close()
    if process is not None:
        try:
            process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    return None, None
