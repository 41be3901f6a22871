"""Staged grading: format → syntax → interface → harness tests → reference → plug-ins' stages → quality.

Comprehension problems (cid006/cid008/cid009/cid010) have no harness: their text answers
are scored by BLEU/ROUGE-2 or an LLM judge, here in the calling thread
(:mod:`cvdp_gym.grading.comprehension`), never cached by the grader (the judge caches its
own calls). Each harness stage is far cheaper than the next, and a failed stage stops the later ones: a
response with no code costs nothing, a syntax error costs one compile (tens of
milliseconds), and only a candidate that compiles and declares the right interface costs a
simulation. Results are cached by content hash, so identical responses are simulated once.

The ``Grader`` does the format stage's extraction and the cache lookups itself, sends the
stages after extraction (``stages.run_stages``: the one ordered sequence, plug-ins' stages
included) to an executor (``cvdp_gym.execution``) as a job (``grade_job``), and runs the last
stage, quality, on the verdict. ``Grader.from_settings`` builds one from ``GraderSettings``.
"""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from cvdp_gym.data.problems import SCORING_HARNESS, Problem
from cvdp_gym.data.repos import RepoStore
from cvdp_gym.errors import WorkerLost
from cvdp_gym.execution.cache import GradeCache, content_key
from cvdp_gym.execution.executor_factory import make_executor
from cvdp_gym.execution.executors import GradeExecutor, ThreadExecutor
from cvdp_gym.execution.jobs import RunnerSpec
from cvdp_gym.grading.backed import TESTBENCH, check_verdict
from cvdp_gym.grading.comprehension import Judge, check_route, grade_comprehension
from cvdp_gym.grading.grade_job import grade_job
from cvdp_gym.grading.judge import JudgeSettings, LLMJudge
from cvdp_gym.grading.quality import QualitySettings, QualityStage
from cvdp_gym.grading.result import (
    FORMAT_ERROR,
    GRADER_VERSION,
    INTERFACE_ERROR,
    LOG_TAIL_CHARS,
    STAGES,
    UNDECIDED,
    GradeResult,
    Stage,
    infra_result,
    late_result,
)
from cvdp_gym.grading.seed_verdicts import combine
from cvdp_gym.grading.settings import GraderSettings
from cvdp_gym.grading.stages import StageContext, run_stages, stage_names
from cvdp_gym.harness.randomness import harness_randomness, problem_randomness
from cvdp_gym.harness.results import TIMEOUT
from cvdp_gym.harness.runner import HarnessRunner, RunOptions
from cvdp_gym.parsers.benchmark_answers import NO_CODE, extract_answer
from cvdp_gym.parsers.comprehension import ROUTE_CHAT
from cvdp_gym.sandbox import Limits, make_sandbox
from cvdp_gym.seeds import seed_list

#: Re-exported for ``from cvdp_gym.grading.grader import ...``; they live in ``result.py``.
__all__ = [
    "FORMAT_ERROR",
    "GRADER_VERSION",
    "INTERFACE_ERROR",
    "LOG_TAIL_CHARS",
    "STAGES",
    "GradeResult",
    "Grader",
    "Stage",
]


class Grader:
    """Grades answers to CVDP problems; thread-safe, one per process is enough.

    ``cache``: a ``GradeCache``, a path for one, or ``None`` to grade without caching.
    ``lint`` and ``interface`` turn the cheap pre-simulation stages on or off.
    ``executor``: where the stages after extraction run (``threads[:N]``, ``processes[:N]``,
    ``ray[:ADDRESS]`` or a ``GradeExecutor``); ``None`` grades in the calling thread.
    Extraction and cache lookups always happen here, before any job is sent.
    ``judge``: the LLM judge of cid009/cid010 answers (None: they are graded ``not_judged``);
    ``route``: how comprehension answers are parsed, ``chat`` (the official OpenAI-chat
    route, JSON repaired first) or ``import`` (its local-import route).

    Randomised harnesses (``harness.randomness``: parameters or stimulus drawn at random on
    every run): ``harness_seed`` fixes the seed every harness runs with (None: a fresh one
    per run, recorded in ``GradeResult.seed``; the same seed reproduces a verdict), and
    ``seeds`` grades an answer to a randomised harness with that many seeds (``seed_list``:
    ``harness_seed, harness_seed + 1, ...``), passing it only if every run passes and marking
    it ``flaky`` when the runs disagree. The cache keys a randomised harness's verdict on its
    seed, and keeps none of an unseeded one: a fresh draw is one random outcome, not the truth.
    Deterministic harnesses run once and are cached as before, whatever the seed.

    ``verdict``: ``testbench`` (the problem's own test bench decides) or
    ``testbench+reference`` (a test-bench pass also needs the answer to be equivalent to the
    problem's reference: :mod:`cvdp_gym.grading.backed`); each grading call may name its own.
    The cache keys a backed verdict apart from a test-bench one.

    ``quality``: the quality stage (:mod:`cvdp_gym.grading.quality`), the last one, run on
    every verdict this grader gives (a passing answer measured against its reference), after
    the verdict cache; None: off. ``from_settings`` builds a grader from ``GraderSettings``.
    """

    def __init__(
        self,
        runner: HarnessRunner | None = None,
        *,
        cache: GradeCache | str | Path | None = None,
        lint: bool = True,
        interface: bool = True,
        executor: str | GradeExecutor | None = None,
        judge: Judge | None = None,
        route: str = ROUTE_CHAT,
        harness_seed: int | None = None,
        seeds: int = 1,
        verdict: str = TESTBENCH,
        quality: QualityStage | None = None,
    ) -> None:
        self.runner = runner or HarnessRunner()
        self.quality = quality
        self.verdict = check_verdict(verdict)
        self.judge = judge
        self.route = check_route(route)
        self.harness_seed = harness_seed
        self.seeds = max(1, seeds)
        self.cache = GradeCache(cache) if isinstance(cache, (str, Path)) else cache
        self.lint = lint
        self.interface = interface
        self.executor = make_executor(executor) if executor is not None else None
        self._fingerprint = self.runner.toolchain.fingerprint()
        self._spec = RunnerSpec.of(self.runner)
        self._waiter: GradeExecutor | None = None  # for deadlines without an executor
        self._waiter_lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: GraderSettings) -> Grader:
        """The grader ``settings`` describe (its runner, cache, judge and quality stage made here)."""
        runner = HarnessRunner(
            make_sandbox(settings.sandbox, toolchain=settings.toolchain),
            RunOptions(limits=Limits(wall_s=settings.timeout_s)),
            repos=settings.repos if isinstance(settings.repos, RepoStore) else RepoStore(settings.repos),
        )
        cache = settings.cache
        if cache is True:
            cache = GradeCache()
        elif cache is False:
            cache = None
        cache = GradeCache(cache) if isinstance(cache, (str, Path)) else cache
        judge = LLMJudge(settings.judge, cache=cache) if isinstance(settings.judge, JudgeSettings) else settings.judge
        quality = QualitySettings.of(settings.quality)
        stage = None
        if quality is not None:
            quality_cache = settings.quality_cache
            quality_cache = GradeCache(quality_cache) if isinstance(quality_cache, (str, Path)) else quality_cache
            stage = QualityStage(runner.sandbox, quality, cache=quality_cache or cache)
        return cls(
            runner, cache=cache, lint=settings.lint, interface=settings.interface, executor=settings.executor, judge=judge,
            route=settings.parse_route, harness_seed=settings.harness_seed, seeds=settings.seeds, verdict=settings.verdict,
            quality=stage,
        )

    def with_quality(self, settings: QualitySettings) -> Grader:
        """This grader (its runner, cache and executor shared) with a quality stage of
        ``settings`` instead of its own, its measurements in the grade cache; itself when
        its stage already has them."""
        if self.quality is not None and self.quality.settings == settings:
            return self
        twin = copy.copy(self)
        twin.quality = QualityStage(self.runner.sandbox, settings, cache=self.cache)
        return twin

    def _assess(self, problem: Problem, result: GradeResult) -> GradeResult:
        """The last stage, quality (when on), run on the verdict."""
        if self.quality is None:
            return result
        context = StageContext(problem, result.files, self.runner, verdict=self.verdict, result=result)
        self.quality.run(context)
        return context.result or result

    def grade_response(
        self, problem: Problem, response: str, *, deadline: float | None = None, seed: int | None = None,
        verdict: str | None = None,
    ) -> GradeResult:
        """Extract the target files from a single-shot answer, then grade them.

        ``deadline``: a ``time.time()`` by which the verdict must be in; a job still running
        then is cancelled (its sandbox killed) and the answer scored ``timeout`` (``late``).
        ``seed``: the harness seed for this answer (default: the grader's ``harness_seed``);
        ``verdict``: this answer's verdict option (default: the grader's).
        """
        if problem.scoring != SCORING_HARNESS:
            return self._assess(problem, self.grade_text(problem, response))
        start = time.monotonic()
        files, info, failed = self._extract(problem, response)
        result = failed or no_code(info, self.grade_files(problem, files, deadline=deadline, seed=seed, verdict=verdict))
        result.extraction = info
        result.wall_s = time.monotonic() - start
        return result

    def grade_text(self, problem: Problem, response: str) -> GradeResult:
        """A comprehension answer scored as the official tool scores it (this thread; the
        judge, if the problem needs one, is asked here)."""
        return grade_comprehension(problem, response, route=self.route, judge=self.judge)

    @staticmethod
    def _extract(problem: Problem, response: str) -> tuple[dict[str, str], dict[str, Any], GradeResult | None]:
        """The answer's target files, how they were found, and the verdict if none were
        (a benchmark answer always has its file: see ``no_code``)."""
        extraction = extract_answer(problem, response)
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
        seed: int | None = None,
        verdict: str | None = None,
    ) -> GradeResult:
        """Grade candidate files (workspace-relative path → text), format stage included.

        With a ``workspace`` (an agent's folder on this machine) grading runs here.
        ``seed``: the harness seed (default: the grader's ``harness_seed``); a randomised
        harness is graded with ``seeds`` seeds from it (see the class doc). ``verdict``:
        this answer's verdict option (default: the grader's).
        """
        start = time.monotonic()
        seed = self.harness_seed if seed is None else seed
        verdict = self.verdict if verdict is None else check_verdict(verdict)
        if self.seeds > 1 and harness_randomness(problem.harness):
            runs: list[GradeResult] = []
            for one in seed_list(self.seeds, seed):
                runs.append(self._grade_once(problem, files, workspace, deadline, one, verdict))
                if runs[-1].seed is None:  # stopped before the harness: no seed can change it
                    break
            result = combine(runs)
        else:
            result = self._grade_once(problem, files, workspace, deadline, seed, verdict)
        result = self._assess(problem, result)
        result.wall_s = time.monotonic() - start
        return result

    def _grade_once(
        self, problem: Problem, files: Mapping[str, str], workspace: Path | None, deadline: float | None,
        seed: int | None, verdict: str,
    ) -> GradeResult:
        key = self._cache_key(problem, files, seed, verdict) if workspace is None else None
        hit = self._cached(key)
        if hit is not None:
            return hit
        if workspace is not None or (self.executor is None and deadline is None):
            result = self.grade_here(problem, dict(files), workspace, seed=seed, verdict=verdict)
        else:
            future = self.submit(problem, files, seed=seed, verdict=verdict)
            result = self._wait(problem, files, future, deadline)
        self._store(key, result)
        return result

    def cached_verdict(
        self, problem: Problem, *, response: str | None = None, files: Mapping[str, str] | None = None,
        seed: int | None = None, verdict: str | None = None,
    ) -> GradeResult | None:
        """The verdict the cache already holds on an answer (``response`` or ``files``), or
        None; grades nothing (a service answers cache hits without queueing them)."""
        if self.cache is None or problem.scoring != SCORING_HARNESS:
            return None
        seed = self.harness_seed if seed is None else seed
        verdict = self.verdict if verdict is None else check_verdict(verdict)
        if self.seeds > 1 and harness_randomness(problem.harness):
            return None
        info = None
        if files is None:
            files, info, failed = self._extract(problem, response or "")
            if failed is not None:
                return None
        result = self._cached(self._cache_key(problem, files, seed, verdict))
        if result is not None and info is not None:
            result = no_code(info, result)
            result.extraction = info
        return result

    def _cache_key(
        self, problem: Problem, files: Mapping[str, str], seed: int | None = None, verdict: str = TESTBENCH
    ) -> str | None:
        """The verdict's cache key; None (not cached) for a randomised harness run unseeded.
        A backed verdict's key also names the verdict (a test-bench key is as it always was)."""
        if self.cache is None:
            return None
        if problem.repo is not None and self.runner.repos.missing(problem):
            return None  # "repository not found" is this machine's state, not a verdict to keep
        randomised = bool(problem_randomness(problem))
        if randomised and seed is None:
            return None  # one fresh draw of a randomised harness is not the truth
        # A repository problem's files come from its commit, which the key must name.
        repo = [[problem.repo.name, problem.repo.commit]] if problem.repo is not None else []
        # A benchmark flow's verdict also depends on which flow, simulator and options.
        flow = [problem.grader, problem.toolchain, problem.extra] if problem.flow is not None else []
        backed = [verdict] if verdict != TESTBENCH else []
        # Plug-ins' stages are part of the verdict (a key without any is as it always was).
        added = [["stages", list(names)]] if (names := stage_names()) else []
        return content_key(
            GRADER_VERSION, self._fingerprint, self.lint, self.interface,
            problem.harness, problem.context, problem.reference, dict(files),
            seed if randomised else None, *repo, *flow, *backed, *added,
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
        # Kept: verdicts on the answer, and excluded ones (a broken harness, unsupported: the
        # same on every try). Not kept: limits (another run may finish), an undecided
        # equivalence (often a formal stage's time limit) and infrastructure failures (late,
        # infra_error: another try may grade it).
        if key is not None and not result.infra_failure and result.failure_class not in (TIMEOUT, "resource_limit", UNDECIDED):
            self.cache.put(key, result.to_dict())

    def submit(
        self, problem: Problem, files: Mapping[str, str], *, seed: int | None = None, verdict: str | None = None
    ) -> Future[dict[str, Any]]:
        """Send the stages after extraction to the executor (uncached); the future holds
        ``GradeResult.to_dict()``."""
        verdict = self.verdict if verdict is None else verdict
        executor = self.executor
        if executor is None:
            with self._waiter_lock:
                if self._waiter is None:
                    self._waiter = ThreadExecutor(workers=64)
            # A thread of this process (a deadline, no executor): this grader's own runner, its
            # sandbox the object it was given, not one rebuilt from the sandbox's name.
            return self._waiter.submit(self._stages_here, problem, dict(files), seed, verdict)
        check_nodes = getattr(executor, "check_nodes", None)
        if callable(check_nodes):
            check_nodes(self._spec)
        return executor.submit(grade_job, self._spec, self.lint, self.interface, problem, dict(files), seed, verdict)

    def _stages_here(self, problem: Problem, files: dict[str, str], seed: int | None, verdict: str) -> dict[str, Any]:
        return self.grade_here(problem, files, seed=seed, verdict=verdict).to_dict()

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
        except WorkerLost as exc:  # the executor's retries are spent: no verdict on the answer
            return infra_result(problem, files, str(exc))

    #: The verdict of an answer that was not graded by the deadline.
    late_result = staticmethod(late_result)

    def close(self) -> None:
        """Cancel the jobs still running (their sandboxes killed) and close the executors;
        a grader with no executor and no deadline ever given has nothing to close."""
        with self._waiter_lock:
            waiter, self._waiter = self._waiter, None
        for executor in (self.executor, waiter):
            if executor is not None:
                executor.close()

    def grade_here(
        self, problem: Problem, files: dict[str, str], workspace: Path | None = None, *, seed: int | None = None,
        verdict: str | None = None,
    ) -> GradeResult:
        """The stages after extraction, in this thread, uncached (``run_stages`` with this
        grader's runner and switches)."""
        return run_stages(
            self.runner, problem, files, lint=self.lint, interface=self.interface, workspace=workspace, seed=seed,
            verdict=self.verdict if verdict is None else verdict,
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
            if problem.scoring != SCORING_HARNESS:
                return await asyncio.to_thread(lambda: self._assess(problem, self.grade_text(problem, response)))
            start = time.monotonic()
            files, info, result = self._extract(problem, response)
            if result is None and self.seeds > 1 and harness_randomness(problem.harness):
                result = await asyncio.to_thread(self.grade_files, problem, files, deadline=deadline)
            if result is None:
                seed = self.harness_seed
                key = self._cache_key(problem, files, seed, self.verdict)
                result = self._cached(key)
                if result is None:
                    future = await asyncio.to_thread(lambda: self.submit(problem, files, seed=seed))
                    try:
                        data = await asyncio.wait_for(asyncio.wrap_future(future), _seconds_until(deadline))
                        result = GradeResult.from_dict(data)
                    except (asyncio.TimeoutError, CancelledError):
                        self.executor.cancel(future)
                        result = self.late_result(problem, files)
                    except WorkerLost as exc:
                        result = infra_result(problem, files, str(exc))
                    self._store(key, result)
                result = no_code(info, await asyncio.to_thread(self._assess, problem, result))
            result.extraction = info
            result.wall_s = time.monotonic() - start
            return result

        return list(await asyncio.gather(*(remote(p, r) for p, r in items)))


def no_code(extraction: dict[str, Any], result: GradeResult) -> GradeResult:
    """A benchmark answer with no code in it: its benchmark's verdict is kept (``official``:
    its script writes and runs a file whatever the answer holds), but it is a ``format_error``."""
    if extraction.get("method") != NO_CODE or result.passed:
        return result
    result.stages = [Stage("format", False, "no code in the answer")] + [Stage(n, None) for n in STAGES[1:]]
    result.failure_class, result.reason = FORMAT_ERROR, "no code in the answer"
    return result


def _seconds_until(deadline: float | None) -> float | None:
    """How long to wait for a ``time.time()`` deadline (None: no deadline)."""
    return None if deadline is None else max(0.0, deadline - time.time())
