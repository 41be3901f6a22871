"""The evaluation loop: fetch or read answers, grade them concurrently, append each result.

Every graded sample is appended to ``results.jsonl`` as soon as it finishes, and every
answer fetched from an endpoint is first appended to ``responses.jsonl``, so an interrupted
run resumes without grading or paying for anything twice. Samples that failed for reasons
that are not the answer's fault (a request that never succeeded, a crash of the grader) are
recorded as failures but tried again on ``--resume``; so are comprehension answers whose
judge gave no usable score (``judge_error``: the judge's own answers are cached, so a resumed
run asks it only about those).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cvdp_gym.data.problems import SCORING_HARNESS, Problem
from cvdp_gym.envs.prompts import single_shot_messages
from cvdp_gym.eval.sources import ChatClient, ChatSettings, RequestFailed, Response
from cvdp_gym.grading.grader import Grader
from cvdp_gym.grading.result import JUDGE_ERROR, NO_REFERENCE, STAGES, GradeResult, Stage
from cvdp_gym.grading.rewards import RewardFn
from cvdp_gym.jsonl import read_objects

RESULTS = "results.jsonl"
RESPONSES = "responses.jsonl"
PASSED = "passed"
REQUEST_ERROR = "request_error"
GRADER_ERROR = "grader_error"
#: Verdicts that say nothing about the answer: recorded, but tried again on resume.
RETRIED = frozenset({REQUEST_ERROR, GRADER_ERROR, JUDGE_ERROR})
#: Comprehension answers scored at once by default (judge requests wait on the network).
TEXT_JOBS = 16

OnDone = Callable[[dict[str, Any]], None]


def sample_key(problem_id: str, sample: int) -> str:
    return f"{problem_id}::{sample}"


def read_rows(path: Path) -> list[dict[str, Any]]:
    """JSON objects with ``id`` and ``sample`` from a JSONL file; torn or foreign lines are skipped."""
    return [
        row
        for row in read_objects(path)
        if isinstance(row.get("id"), str) and isinstance(row.get("sample"), int)
    ]


def _write_rows(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def failed_grade(problem: Problem, verdict: str, reason: str) -> GradeResult:
    """A result with no stage run, for answers that never reached the grader."""
    credit = None if problem.scoring == SCORING_HARNESS else 0.0
    return GradeResult(problem.id, [Stage(name, None) for name in STAGES], verdict, reason, scoring=problem.scoring, credit=credit)


def result_row(problem: Problem, sample: int, response: str, grade: GradeResult, reward: RewardFn, **extra: Any) -> dict[str, Any]:
    """One line of results.jsonl; ``grade`` keeps the full verdict (less the files) for rescoring."""
    stored = grade.to_dict()
    stored.pop("files", None)
    return {
        "id": problem.id,
        "sample": sample,
        "category": problem.category,
        "difficulty": problem.difficulty,
        "benchmark": problem.benchmark,
        "task": problem.task,
        "response": response,
        "verdict": PASSED if grade.passed else (grade.failure_class or "failed"),
        "passed": grade.passed,
        "format_ok": grade.format_ok,
        "syntax_ok": grade.syntax_ok,
        "interface_ok": grade.interface_ok,
        "tests_passed": grade.tests.passed,
        "tests_total": grade.tests.total,
        "reward": reward(grade),
        "scoring": grade.scoring,
        "scores": grade.scores,
        "credit": grade.official_credit,
        "reason": grade.reason,
        "wall_s": round(grade.wall_s, 3),
        "cached": grade.cached,
        "seed": grade.seed,
        "flaky": grade.flaky,
        "official": grade.official,
        "defect": grade.defect,
        "excluded": grade.excluded,
        **extra,
        "grade": stored,
    }


def rescore(row: dict[str, Any], reward: RewardFn) -> dict[str, Any]:
    """Recompute a stored row's reward, so a resumed run may use another ``--reward``."""
    with contextlib.suppress(KeyError, TypeError):
        row["reward"] = reward(GradeResult.from_dict(row["grade"]))
    return row


class Evaluator:
    """Grades samples through one ``Grader`` (at most ``jobs`` harness answers and
    ``text_jobs`` comprehension answers at once) and logs each result; the grader's stages,
    quality included, make each verdict."""

    def __init__(
        self, grader: Grader, reward: RewardFn, out_dir: Path, *, jobs: int = 2, resume: bool = False,
        on_done: OnDone | None = None, text_jobs: int = TEXT_JOBS,
    ) -> None:
        self.grader = grader
        self.reward = reward
        self.jobs = max(1, jobs)
        self.text_jobs = max(1, text_jobs)
        self.on_done = on_done
        self.results_path = Path(out_dir) / RESULTS
        self.responses_path = Path(out_dir) / RESPONSES
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        self.rows: dict[str, dict[str, Any]] = {}
        self.saved: dict[str, dict[str, Any]] = {}
        self._start(resume)
        self._semaphore: asyncio.Semaphore | None = None
        self._text_semaphore: asyncio.Semaphore | None = None
        self._pool: ThreadPoolExecutor | None = None

    def _start(self, resume: bool) -> None:
        if not resume:
            self.results_path.unlink(missing_ok=True)
            self.responses_path.unlink(missing_ok=True)
            return
        # Rewrite both files without torn lines, so appends start on a clean line.
        kept = [rescore(r, self.reward) for r in read_rows(self.results_path) if r.get("verdict") not in RETRIED]
        self.rows = {sample_key(r["id"], r["sample"]): r for r in kept}
        _write_rows(self.results_path, self.rows.values())
        saved = [r for r in read_rows(self.responses_path) if isinstance(r.get("response"), str)]
        self.saved = {sample_key(r["id"], r["sample"]): r for r in saved}
        _write_rows(self.responses_path, self.saved.values())

    def is_done(self, problem_id: str, sample: int) -> bool:
        return sample_key(problem_id, sample) in self.rows

    def _append(self, path: Path, row: dict[str, Any]) -> None:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")

    def _finish(self, row: dict[str, Any]) -> dict[str, Any]:
        self._append(self.results_path, row)
        self.rows[sample_key(row["id"], row["sample"])] = row
        if self.on_done:
            self.on_done(row)
        return row

    def save_response(self, problem: Problem, sample: int, text: str, finish_reason: str | None) -> None:
        """Keep a fetched answer before grading it, so a resumed run never asks for it again."""
        row = {"id": problem.id, "sample": sample, "response": text, "finish_reason": finish_reason}
        self._append(self.responses_path, row)
        self.saved[sample_key(problem.id, sample)] = row

    def record(self, problem: Problem, sample: int, response: str, grade: GradeResult) -> dict[str, Any]:
        """A verdict reached outside this evaluator's grader (the golden test benches' rows)."""
        return self._finish(result_row(problem, sample, response, grade, self.reward))

    def record_failure(self, problem: Problem, sample: int, verdict: str, reason: str, response: str = "") -> dict[str, Any]:
        """A sample that could not be graded counts as a failed sample with its reason."""
        grade = failed_grade(problem, verdict, reason)
        return self._finish(result_row(problem, sample, response, grade, self.reward))

    async def grade(
        self, problem: Problem, sample: int, response: str, *, files: dict[str, str] | None = None, **extra: Any
    ) -> dict[str, Any]:
        """Grade one answer in a worker thread (``files``: the answer's files as they are,
        not extracted from ``response``); a crash of the grader is recorded, not raised."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.jobs)
            self._text_semaphore = asyncio.Semaphore(self.text_jobs)
        harness = problem.scoring == SCORING_HARNESS
        async with self._semaphore if harness else self._text_semaphore:
            try:
                loop = asyncio.get_running_loop()
                grade = await loop.run_in_executor(self._threads(), self._grade_one, problem, response, files)
            except Exception as exc:  # one bad sample must not end a long run
                return self.record_failure(problem, sample, GRADER_ERROR, f"{type(exc).__name__}: {exc}", response)
        return self._finish(result_row(problem, sample, response, grade, self.reward, **extra))

    def _grade_one(self, problem: Problem, response: str, files: dict[str, str] | None = None) -> GradeResult:
        """The grader's verdict on ``response``, or on ``files`` when given."""
        if files is None:
            return self.grader.grade_response(problem, response)
        return self.grader.grade_files(problem, files)

    def _threads(self) -> ThreadPoolExecutor:
        """Threads that wait on the grader (asyncio's default pool is smaller)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.jobs + self.text_jobs, thread_name_prefix="eval-grade")
        return self._pool

    def collect(self, keys: Iterable[tuple[str, int]]) -> list[dict[str, Any]]:
        """The rows for ``(id, sample)`` pairs, in that order (missing ones left out)."""
        found = (self.rows.get(sample_key(pid, s)) for pid, s in keys)
        return [row for row in found if row is not None]


async def eval_responses(ev: Evaluator, problems: dict[str, Problem], responses: list[Response]) -> list[dict[str, Any]]:
    """Grade answers read from a file (ids must be in ``problems``); skip those already done."""
    todo = [r for r in responses if not ev.is_done(r.id, r.sample)]
    await asyncio.gather(*(ev.grade(problems[r.id], r.sample, r.text) for r in todo))
    keys = sorted((r.id, r.sample) for r in responses)
    return ev.collect(keys)


async def eval_references(ev: Evaluator, problems: list[Problem]) -> list[dict[str, Any]]:
    """Grade each problem's own reference solution as its answer (sample 0): the baseline row
    of a benchmark (its references' pass rate and, with ``quality``, their figures). A problem
    without a reference counts as failed ``no_reference``."""
    todo = [p for p in problems if not ev.is_done(p.id, 0)]
    for problem in todo:
        if not problem.reference:
            ev.record_failure(problem, 0, NO_REFERENCE, "the problem has no reference solution")
    await asyncio.gather(*(ev.grade(p, 0, "", files=dict(p.reference)) for p in todo if p.reference))
    return ev.collect((p.id, 0) for p in problems)


async def eval_endpoint(ev: Evaluator, problems: list[Problem], settings: ChatSettings, samples: int, *, client: ChatClient | None = None) -> list[dict[str, Any]]:
    """Ask the endpoint for ``samples`` answers per problem (only those missing) and grade them."""
    async with client or ChatClient(settings) as chat:
        await asyncio.gather(*(_endpoint_problem(ev, chat, p, samples) for p in problems))
    return ev.collect((p.id, s) for p in problems for s in range(samples))


async def _endpoint_problem(ev: Evaluator, chat: ChatClient, problem: Problem, samples: int) -> None:
    grading: list[asyncio.Task[dict[str, Any]]] = []
    todo: list[int] = []
    for sample in range(samples):
        if ev.is_done(problem.id, sample):
            continue
        saved = ev.saved.get(sample_key(problem.id, sample))
        if saved is not None:
            grading.append(_grade_task(ev, problem, sample, saved["response"], saved.get("finish_reason")))
        else:
            todo.append(sample)
    if todo:
        try:
            async for batch in chat.completions(single_shot_messages(problem), len(todo)):
                for completion in batch:
                    sample = todo.pop(0)
                    ev.save_response(problem, sample, completion.text, completion.finish_reason)
                    grading.append(_grade_task(ev, problem, sample, completion.text, completion.finish_reason))
        except RequestFailed as exc:
            reason = exc.reason
        except Exception as exc:  # an unexpected client failure is this problem's, not the run's
            reason = f"{type(exc).__name__}: {exc}"
        else:
            reason = ""
        for sample in todo:
            ev.record_failure(problem, sample, REQUEST_ERROR, reason)
    await asyncio.gather(*grading)


def _grade_task(ev: Evaluator, problem: Problem, sample: int, text: str, finish_reason: str | None) -> asyncio.Task[dict[str, Any]]:
    return asyncio.create_task(ev.grade(problem, sample, text, finish_reason=finish_reason))
