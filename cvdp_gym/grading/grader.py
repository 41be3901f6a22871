"""Staged grading: format → syntax → interface → harness tests.

Each stage is far cheaper than the next, and a failed stage stops the later ones: a
response with no code costs nothing, a syntax error costs one compile (tens of
milliseconds), and only a candidate that compiles and declares the right interface costs a
simulation. Results are cached by content hash, so identical responses are simulated once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cvdp_gym.data.problems import Problem
from cvdp_gym.grading.cache import GradeCache, content_key
from cvdp_gym.grading.executors import GradeExecutor, ThreadExecutor, make_executor
from cvdp_gym.grading.interface import check_interface
from cvdp_gym.grading.jobs import RunnerSpec, grade_job
from cvdp_gym.harness.results import (
    BUILD_ERROR,
    TIMEOUT,
    TOOLCHAIN_GAP,
    UNSUPPORTED,
    HarnessResult,
    TestCounts,
)
from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.parsers import extract_files

GRADER_VERSION = 2  # 2: results carry the failing tests (``failures``)
#: Failure classes of the grader's own stages (the harness adds its classes).
FORMAT_ERROR = "format_error"
INTERFACE_ERROR = "interface_error"
STAGES = ("format", "syntax", "interface", "tests")
LOG_TAIL_CHARS = 2000


@dataclass
class Stage:
    """One stage's verdict: ``passed`` is None when the stage did not run."""

    name: str
    passed: bool | None
    detail: str = ""
    seconds: float = 0.0


@dataclass
class GradeResult:
    """Everything a reward function or a report needs about one graded answer."""

    problem_id: str
    stages: list[Stage]
    failure_class: str | None
    reason: str
    tests: TestCounts = field(default_factory=TestCounts)
    files: dict[str, str] = field(default_factory=dict)
    extraction: dict[str, Any] = field(default_factory=dict)
    log_tail: str = ""
    wall_s: float = 0.0
    cached: bool = False
    late: bool = False  # not graded by the caller's deadline: scored ``timeout``, never cached
    #: Failing cocotb tests, ``{"test", "message"}`` (from the results files; bounded).
    failures: list[dict[str, str]] = field(default_factory=list)

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    @property
    def format_ok(self) -> bool:
        return bool(self.stage("format").passed)

    @property
    def syntax_ok(self) -> bool:
        return bool(self.stage("syntax").passed)

    @property
    def interface_ok(self) -> bool:
        return bool(self.stage("interface").passed)

    @property
    def passed(self) -> bool:
        return bool(self.stage("tests").passed)

    @property
    def test_fraction(self) -> float:
        return self.tests.passed / self.tests.total if self.tests.total else float(self.passed)

    @property
    def excluded(self) -> bool:
        """Not the answer's fault (toolchain gap, unsupported): leave out of training."""
        return self.failure_class in (TOOLCHAIN_GAP, UNSUPPORTED)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["passed"] = self.passed
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GradeResult:
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["stages"] = [Stage(**s) for s in data["stages"]]
        fields["tests"] = TestCounts(**data.get("tests", {}))
        return cls(**fields)


class Grader:
    """Grades answers to CVDP problems; thread-safe, one per process is enough.

    ``cache``: a ``GradeCache``, a path for one, or ``None`` to grade without caching.
    ``lint`` and ``interface`` turn the cheap pre-simulation stages on or off.
    ``executor``: where the stages after extraction run (``threads[:N]``, ``processes[:N]``,
    ``ray[:ADDRESS]`` or a ``GradeExecutor``); ``None`` grades in the calling thread.
    Extraction and cache lookups always happen here, before any job is sent.
    """

    def __init__(
        self,
        runner: HarnessRunner | None = None,
        *,
        cache: GradeCache | str | Path | None = None,
        lint: bool = True,
        interface: bool = True,
        executor: str | GradeExecutor | None = None,
    ) -> None:
        self.runner = runner or HarnessRunner()
        self.cache = GradeCache(cache) if isinstance(cache, (str, Path)) else cache
        self.lint = lint
        self.interface = interface
        self.executor = make_executor(executor) if executor is not None else None
        self._fingerprint = self.runner.toolchain.fingerprint()
        self._spec = RunnerSpec.of(self.runner)
        self._waiter: GradeExecutor | None = None  # for deadlines without an executor
        self._waiter_lock = threading.Lock()

    def grade_response(self, problem: Problem, response: str, *, deadline: float | None = None) -> GradeResult:
        """Extract the target files from a single-shot answer, then grade them.

        ``deadline``: a ``time.time()`` by which the verdict must be in; a job still running
        then is cancelled (its sandbox killed) and the answer scored ``timeout`` (``late``).
        """
        start = time.monotonic()
        files, info, failed = self._extract(problem, response)
        result = failed or self.grade_files(problem, files, deadline=deadline)
        result.extraction = info
        result.wall_s = time.monotonic() - start
        return result

    @staticmethod
    def _extract(problem: Problem, response: str) -> tuple[dict[str, str], dict[str, Any], GradeResult | None]:
        """The answer's target files, how they were found, and the verdict if none were."""
        extraction = extract_files(response, list(problem.targets))
        info = {
            "method": extraction.method,
            "blocks_found": extraction.blocks_found,
            "missing": extraction.missing,
            "had_think": extraction.had_think,
            "harmony": extraction.harmony,
            "notes": extraction.notes,
        }
        if extraction.found_all:
            return extraction.files, info, None
        missing = ", ".join(extraction.missing) or "the target file"
        stages = [Stage("format", False, f"no code found for {missing}")] + [Stage(n, None) for n in STAGES[1:]]
        return {}, info, GradeResult(problem.id, stages, FORMAT_ERROR, f"no code found for {missing}", extraction=info)

    def grade_files(
        self,
        problem: Problem,
        files: Mapping[str, str],
        *,
        workspace: Path | None = None,
        deadline: float | None = None,
    ) -> GradeResult:
        """Grade candidate files (workspace-relative path → text), format stage included.

        With a ``workspace`` (an agent's folder on this machine) grading runs here.
        """
        start = time.monotonic()
        key = self._cache_key(problem, files) if workspace is None else None
        hit = self._cached(key)
        if hit is not None:
            hit.wall_s = time.monotonic() - start
            return hit
        if workspace is not None or (self.executor is None and deadline is None):
            result = self.grade_here(problem, dict(files), workspace)
        else:
            future = self.submit(problem, files)
            result = self._wait(problem, files, future, deadline)
        result.wall_s = time.monotonic() - start
        self._store(key, result)
        return result

    def _cache_key(self, problem: Problem, files: Mapping[str, str]) -> str | None:
        if self.cache is None:
            return None
        return content_key(
            GRADER_VERSION, self._fingerprint, self.lint, self.interface,
            problem.harness, problem.context, problem.reference, dict(files),
        )

    def _cached(self, key: str | None) -> GradeResult | None:
        """The cached verdict under ``key`` (marked ``cached``), if any."""
        data = self.cache.get(key) if key is not None else None
        if data is None:
            return None
        result = GradeResult.from_dict(data)
        result.cached = True
        return result

    def _store(self, key: str | None, result: GradeResult) -> None:
        if key is not None and not result.late and result.failure_class not in (TIMEOUT, "resource_limit"):
            self.cache.put(key, result.to_dict())

    def submit(self, problem: Problem, files: Mapping[str, str]) -> Future[dict[str, Any]]:
        """Send the stages after extraction to the executor (uncached); the future holds
        ``GradeResult.to_dict()``."""
        executor = self.executor
        if executor is None:
            with self._waiter_lock:
                if self._waiter is None:
                    self._waiter = ThreadExecutor(workers=64)
            executor = self._waiter
        check_nodes = getattr(executor, "check_nodes", None)
        if callable(check_nodes):
            check_nodes(self._spec)
        return executor.submit(grade_job, self._spec, self.lint, self.interface, problem, dict(files))

    def _wait(
        self, problem: Problem, files: Mapping[str, str], future: Future[dict[str, Any]], deadline: float | None
    ) -> GradeResult:
        try:
            return GradeResult.from_dict(future.result(timeout=_seconds_until(deadline)))
        except (FutureTimeout, CancelledError):
            executor = self.executor or self._waiter
            if executor is not None:
                executor.cancel(future)
            return self.late_result(problem, files)

    @staticmethod
    def late_result(problem: Problem, files: Mapping[str, str]) -> GradeResult:
        """The verdict of an answer that was not graded by the deadline."""
        stages = [Stage("format", True, f"{len(files)} file(s)")] + [Stage(n, None) for n in STAGES[1:]]
        return GradeResult(problem.id, stages, TIMEOUT, "not graded by the grading deadline", files=dict(files), late=True)

    def grade_here(self, problem: Problem, files: dict[str, str], workspace: Path | None = None) -> GradeResult:
        """The stages after extraction, in this thread, uncached (what a job runs)."""
        stages = [Stage("format", True, f"{len(files)} file(s)")]

        def stop(failure_class: str, reason: str, tail: str = "") -> GradeResult:
            stages.extend(Stage(n, None) for n in STAGES[len(stages):])
            return GradeResult(problem.id, stages, failure_class, reason, files=files, log_tail=tail[-LOG_TAIL_CHARS:])

        if problem.unsupported:
            return stop(UNSUPPORTED, problem.unsupported)
        if self.lint:
            lint = self.runner.lint(problem, files, workspace=workspace)
            detail = "; ".join(lint.errors[:3])
            stages.append(Stage("syntax", lint.ok, detail if not lint.ok else lint.simulator, lint.seconds))
            if not lint.ok:
                if lint.gap:
                    return stop(TOOLCHAIN_GAP, f"Icarus 11 rejected code a full SystemVerilog parser accepts: {detail}")
                return stop(BUILD_ERROR, detail or "does not compile", "\n".join(lint.errors))
        else:
            stages.append(Stage("syntax", None, "skipped"))
        if self.interface:
            t0 = time.monotonic()
            verdict = check_interface(problem, files)
            stages.append(Stage("interface", verdict.ok, verdict.detail, time.monotonic() - t0))
            if not verdict.ok:
                return stop(INTERFACE_ERROR, verdict.detail)
        else:
            stages.append(Stage("interface", None, "skipped"))
        harness = self.runner.run(problem, files, workspace=workspace)
        return self._with_harness(problem, stages, files, harness)

    @staticmethod
    def _with_harness(problem: Problem, stages: list[Stage], files: dict[str, str], harness: HarnessResult) -> GradeResult:
        if stages[1].passed is None and harness.failure_class in (BUILD_ERROR, TOOLCHAIN_GAP):
            stages[1] = Stage("syntax", False, harness.reason)
        elif stages[1].passed is None:
            stages[1] = Stage("syntax", True, "compiled in the harness")
        stages.append(Stage("tests", harness.passed, harness.reason, harness.wall_s))
        return GradeResult(
            problem.id,
            stages,
            harness.failure_class,
            harness.reason,
            tests=harness.tests,
            files=files,
            log_tail=harness.log_tail[-LOG_TAIL_CHARS:],
            failures=harness.failures,
        )

    async def grade_many(
        self, items: Iterable[tuple[Problem, str]], *, concurrency: int = 2, deadline: float | None = None
    ) -> list[GradeResult]:
        """Grade ``(problem, response)`` pairs concurrently, in input order.

        Without an executor, ``concurrency`` threads grade. With one, extraction and cache
        lookups happen here and every other answer is sent at once (the executor bounds
        how many run); ``deadline`` (a ``time.time()``) cuts the stragglers as ``late``.
        """
        if self.executor is None:
            semaphore = asyncio.Semaphore(max(1, concurrency))

            async def one(problem: Problem, response: str) -> GradeResult:
                async with semaphore:
                    return await asyncio.to_thread(self.grade_response, problem, response, deadline=deadline)

            return list(await asyncio.gather(*(one(p, r) for p, r in items)))

        async def remote(problem: Problem, response: str) -> GradeResult:
            start = time.monotonic()
            files, info, result = self._extract(problem, response)
            if result is None:
                key = self._cache_key(problem, files)
                result = self._cached(key)
                if result is None:
                    future = await asyncio.to_thread(self.submit, problem, files)
                    try:
                        data = await asyncio.wait_for(asyncio.wrap_future(future), _seconds_until(deadline))
                        result = GradeResult.from_dict(data)
                    except (asyncio.TimeoutError, CancelledError):
                        self.executor.cancel(future)
                        result = self.late_result(problem, files)
                    self._store(key, result)
            result.extraction = info
            result.wall_s = time.monotonic() - start
            return result

        return list(await asyncio.gather(*(remote(p, r) for p, r in items)))


def _seconds_until(deadline: float | None) -> float | None:
    """How long to wait for a ``time.time()`` deadline (None: no deadline)."""
    return None if deadline is None else max(0.0, deadline - time.time())
