"""The grading service's core, under the routes: ``ServiceConfig``, ``GradingService`` (the
bounded queue of grading jobs, rewards, counters) and the answers' shapes."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import Request
from fastapi.responses import JSONResponse

from cvdp_gym.data.problems import Dataset, Problem
from cvdp_gym.errors import ConfigError, UnknownProblemError
from cvdp_gym.grading import Grader, GradeResult
from cvdp_gym.grading.rewards import REWARDS
from cvdp_gym.service.metrics import Metrics
from cvdp_gym.service.models import GradeAnswer, RewardKind, VerdictKind

#: Routes open without the token: liveness probes and the API's own description.
OPEN_PATHS = frozenset({
    "/healthz", "/health", "/livez", "/readyz", "/", "/docs", "/docs/oauth2-redirect", "/openapi.json", "/redoc",
})
TOKEN_ENV = "CVDP_GYM_SERVE_TOKEN"
#: How long closing the service waits for the cancelled jobs to end, seconds.
CLOSE_WAIT_S = 10.0


def is_loopback(host: str) -> bool:
    """``127.0.0.1``, ``::1``, ``localhost``: only this machine can connect."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class ServiceConfig:
    """What the service grades with and how much it takes.

    ``workers``: answers graded at once; ``queue``: answers admitted to wait beyond those
    (one more is answered 429); ``max_body``: largest request body, bytes (413 beyond);
    ``deadline_s``: the longest a grade may take (and the default of a request that names
    none); ``retry_after_s``: the ``Retry-After`` of a 429; ``token``: the bearer token
    (None: none asked; only allowed on a loopback host, see ``check_host``); ``reward``: the
    reward of a request that names none (NeMo-Gym's rows never do); ``per_client``: grading
    jobs one client may have admitted at once (0: no limit beyond the queue's), a client
    being its ``X-Client-Id`` header, else its address. The grader's quality stage (``serve
    --quality``) measures passing answers' design quality; without one the ``quality`` reward
    is refused.
    """

    grader: Grader
    dataset: Dataset
    workers: int = 2
    queue: int = 64
    max_body: int = 4 * 1024 * 1024
    deadline_s: float = 600.0
    retry_after_s: int = 1
    token: str | None = None
    reward: str = "shaped"
    per_client: int = 0
    metrics: Metrics = field(default_factory=Metrics)

    def check_host(self, host: str) -> None:
        """Refuse to serve a non-loopback host without a token."""
        if not self.token and not is_loopback(host):
            raise ConfigError(f"--host {host} is not a loopback address: set --token or ${TOKEN_ENV}")


class GradingService:
    """The grader behind the routes: lookups, the bounded queue, rewards, counters."""

    def __init__(self, config: ServiceConfig) -> None:
        if config.workers < 1 or config.queue < 0:
            raise ConfigError("workers must be at least 1 and queue at least 0")
        self.config = config
        self.grader = config.grader
        self.metrics = config.metrics
        self.problems: dict[str, Problem] = {p.id: p for p in config.dataset}
        self._pool = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="serve")
        self._admitted = 0  # waiting + running; touched on the event loop only
        self._by_client: Counter[str] = Counter()  # the same, per client
        self._jobs: set[Future[GradeResult]] = set()  # for close() to wait on
        self._lock = threading.Lock()
        self.closed = False

    def problem(self, problem_id: str) -> Problem:
        try:
            return self.problems[problem_id]
        except KeyError:
            raise UnknownProblemError(f"no problem {problem_id!r} in {self.config.dataset.source or 'this dataset'}") from None

    @property
    def capacity(self) -> int:
        return self.config.workers + self.config.queue

    def admit(self, client: str = "") -> str | None:
        """Take a grading job from ``client`` into the queue; None, or why it is refused
        (the queue is full, or the client has ``per_client`` jobs in already)."""
        if self._admitted >= self.capacity:
            self.metrics.rejected += 1
            return f"the grading queue is full ({self.capacity} jobs); retry later"
        limit = self.config.per_client
        if limit and self._by_client[client] >= limit:
            self.metrics.rejected += 1
            return f"this client already has {limit} answer(s) grading or queued (the per-client limit); retry later"
        self._admitted += 1
        self._by_client[client] += 1
        self.metrics.queue_depth = self._admitted - self.metrics.running
        return None

    def cached(
        self, problem: Problem, *, response: str | None = None, files: dict[str, str] | None = None, seed: int | None = None,
        verdict: str | None = None,
    ) -> GradeResult | None:
        """The cache's verdict on an answer, counted as graded, or None: a hit is answered at
        once, never queued (and never refused with 429)."""
        start = time.monotonic()
        result = self.grader.cached_verdict(problem, response=response, files=files, seed=seed, verdict=verdict)
        if result is not None:
            result.wall_s = time.monotonic() - start
            self.metrics.graded(result.wall_s, result.verdict, True)
        return result

    async def verdict(
        self, problem: Problem, *, client: str, response: str | None = None, files: dict[str, str] | None = None,
        deadline_s: float | None = None, seed: int | None = None, verdict: str | None = None, workspace: Path | None = None,
    ) -> tuple[GradeResult, float, float] | JSONResponse:
        """What every grading route answers from: the cache's verdict at once (never queued,
        never refused), else the verdict graded through the queue; ``(result, seconds queued,
        seconds in all)``, or the 429 of a job ``admit`` refused, or the 503 of a job the
        shutdown cut (uvicorn's graceful shutdown ran out of time). ``verdict``: the verdict
        option (None: the grader's); ``workspace``: an agent's folder graded with ``files``
        (an agentic session's, as ``CVDP-Agentic-v0`` grades; never cached)."""
        hit = None if workspace is not None else self.cached(problem, response=response, files=files, seed=seed, verdict=verdict)
        if hit is not None:
            return hit, 0.0, hit.wall_s
        refused = self.admit(client)
        if refused:
            return queue_full(self, refused)
        try:
            return await self.grade(
                problem, response=response, files=files, deadline_s=deadline_s, seed=seed, client=client, verdict=verdict,
                workspace=workspace,
            )
        except asyncio.CancelledError:
            return shutting_down(self)

    async def grade(
        self, problem: Problem, *, response: str | None = None, files: dict[str, str] | None = None,
        deadline_s: float | None = None, seed: int | None = None, client: str = "", verdict: str | None = None,
        workspace: Path | None = None,
    ) -> tuple[GradeResult, float, float]:
        """Grade an answer ``admit(client)`` took; the verdict, seconds queued, seconds in all.

        The job's slot is given back when the job ends, not when the request does: a client
        that hangs up leaves its job running to its deadline, and it still counts."""
        start = time.monotonic()
        limit = min(deadline_s or self.config.deadline_s, self.config.deadline_s)
        deadline = time.time() + limit
        waited = 0.0
        ran = False
        loop = asyncio.get_running_loop()

        def run() -> GradeResult:
            nonlocal waited, ran
            waited, ran = time.monotonic() - start, True
            _tell(loop, self._started)
            if files is not None:
                return self.grader.grade_files(
                    problem, files, deadline=deadline, seed=seed, verdict=verdict, workspace=workspace
                )
            return self.grader.grade_response(problem, response or "", deadline=deadline, seed=seed, verdict=verdict)

        job = self._pool.submit(run)
        with self._lock:
            self._jobs.add(job)
        job.add_done_callback(lambda done: self._forget(done, loop, ran, client))
        result = await asyncio.wrap_future(job)
        total = time.monotonic() - start
        self.metrics.graded(total, result.verdict, result.cached)
        return result, waited, total

    def _forget(self, job: Future[GradeResult], loop: asyncio.AbstractEventLoop, ran: bool, client: str) -> None:
        with self._lock:
            self._jobs.discard(job)
        _tell(loop, self._ended, ran, client)

    def _started(self) -> None:  # on the event loop, as every count of the queue
        self.metrics.running += 1
        self.metrics.queue_depth = max(0, self._admitted - self.metrics.running)

    def _ended(self, ran: bool, client: str) -> None:
        self._admitted -= 1
        self._by_client[client] -= 1
        if self._by_client[client] <= 0:
            del self._by_client[client]
        if ran:
            self.metrics.running -= 1
        self.metrics.queue_depth = max(0, self._admitted - self.metrics.running)

    def close(self) -> None:
        """Stop taking jobs, kill the sandboxes still running and wait (a few seconds at
        most) for their jobs to end: ``cvdp-gym serve`` exits right after, by re-raising
        the SIGTERM (uvicorn), which would cut their cleanup short."""
        self.closed = True
        with self._lock:
            running = list(self._jobs)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.grader.close()
        futures.wait(running, timeout=CLOSE_WAIT_S)


def _tell(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: object) -> None:
    """Run ``fn(*args)`` on the event loop from a worker thread (nothing once it is closed: shutdown)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(fn, *args)


def answer_of(
    result: GradeResult, reward: RewardKind, queued: float, total: float, verdict: VerdictKind = "testbench",
) -> GradeAnswer:
    rewards = {name: float(fn(result)) for name, fn in REWARDS.items()}
    return GradeAnswer(
        problem_id=result.problem_id, reward=rewards[reward], reward_kind=reward, verdict_kind=verdict, rewards=rewards,
        verdict=result.verdict, failure_class=result.failure_class, passed=result.passed, reason=result.reason,
        tests=vars(result.tests), stages=[vars(s) for s in result.stages], failures=result.failures,
        cached=result.cached, late=result.late, excluded=result.excluded, infra_failure=result.infra_failure,
        seed=result.seed, queue_s=queued, grade_s=result.wall_s, total_s=total, extraction=result.extraction,
        official=result.official, defect=result.defect, reference_check=result.reference_check, quality=result.quality,
    )


def reward_refused(config: ServiceConfig, reward: str) -> JSONResponse | None:
    """A 400 for the ``quality`` reward on a service that does not measure quality, else None."""
    if reward == "quality" and config.grader.quality is None:
        return error(400, "this service does not measure design quality: start it with --quality asic (or fpga) for the quality reward")
    return None


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """A one-line error body, ``{"detail": message}`` (FastAPI's own shape)."""
    return JSONResponse({"detail": message}, status_code=status, headers=headers)


def shutting_down(service: GradingService) -> JSONResponse:
    """The answer to a job the server's shutdown cut (its graceful-shutdown time ran out):
    503 and a ``Retry-After``, not the 500 the cancelled request would otherwise get; the
    job's sandbox is killed as the service closes, and the verdict is not cached."""
    return error(
        503, "the server is shutting down: this answer was not graded; retry later",
        {"Retry-After": str(max(1, math.ceil(service.config.retry_after_s)))},
    )


def queue_full(service: GradingService, reason: str) -> JSONResponse:
    """The 429 of a job ``admit`` refused, with why and a ``Retry-After``."""
    return error(429, reason, {"Retry-After": str(max(1, math.ceil(service.config.retry_after_s)))})


def client_of(request: Request) -> str:
    """Who a request is from, for the per-client limit: its ``X-Client-Id`` (a trainer's
    name for itself, at most 200 characters), else its address."""
    named = request.headers.get("x-client-id")
    if named:
        return "id:" + named[:200]
    return "addr:" + (request.client.host if request.client else "")
