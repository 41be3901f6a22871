"""``cvdp-gym check``: run reference solutions (and named candidates) through the harnesses.

Each job is one (problem, candidate) pair with the verdict it should get. Results are
appended to a JSONL file as they finish, so an interrupted check resumes where it stopped.
On Ctrl-C the queued jobs are cancelled and the running sandboxes killed at once (see
``cvdp_gym.interrupt``); what had finished stays in the file.

Comprehension problems have no harness: :func:`comprehension_checks` scores each reference
answer against itself, as the official golden mode does, and as a JSON answer.

A repository-context problem's reference is its golden patch applied to its repository's
checked-out files (the runner's ``RepoStore``), made when the job runs; a repository that
cannot be found makes that job ``unsupported``, with where it was looked for.

A benchmark problem (VerilogEval, RTLLM) runs its reference through the benchmark's own flow;
the reference of a labelled defect (``Problem.defect``) may fail without counting as a
mismatch, and :func:`cvdp_gym.consistency.findings` says where a benchmark's files disagree.

A training set's problem (``grader="reference"``: :mod:`cvdp_gym.data.benchmarks.training`)
runs its reference against itself, which must pass, and one broken copy of it
(:func:`broken_copy`: an operator swapped or a constant changed, its interface untouched),
which must be caught (``test_failure``): "the reference is equivalent to itself and a broken
copy is caught". A broken copy may still compute the same thing (an equivalent mutant),
so a miss is a finding to read, not proof of a grader bug; :func:`training_notes` says which
references nobody checked (RTLCoder's).

A job whose harness draws at random (``harness.randomness``) runs with ``seeds`` seeds
(``cvdp_gym.seeds.seed_list``): it matches only when every run gets the expected verdict,
and it is ``flaky`` when the runs disagree. Every result records its seed; ``seed``
reproduces a run.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cvdp_gym.data.benchmarks import BENCHMARKS
from cvdp_gym.data.benchmarks.training import GRADER as REFERENCE_GRADER
from cvdp_gym.data.bundle import Candidate
from cvdp_gym.data.problems import Dataset, DatasetError, Problem
from cvdp_gym.errors import PatchError, RepoUnavailable
from cvdp_gym.execution.executors import GradeExecutor
from cvdp_gym.execution.jobs import RunnerSpec, harness_job
from cvdp_gym.grading.comprehension import grade_comprehension, grade_reference
from cvdp_gym.grading.result import GradeResult
from cvdp_gym.harness.randomness import harness_randomness
from cvdp_gym.harness.results import (
    HARNESS_ERROR,
    PASSED,
    TEST_FAILURE,
    UNDECIDED,
    UNSUPPORTED,
    HarnessResult,
)
from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.interrupt import Children, sigint_ignored
from cvdp_gym.jsonl import JsonlError, iter_json, read_objects
from cvdp_gym.seeds import seed_list

REFERENCE = "reference"
#: The name of a training problem's broken copy (``broken:<mutant kind>``).
BROKEN = "broken"
#: Mutant kinds that change what a design computes, in the order tried, and the seeds tried
#: per kind (each seed may pick another site) before the next kind.
BROKEN_KINDS = (
    "and-or", "plus-minus", "eq-ne", "lt-ge", "bit-flip", "not-removed", "if-inverted", "digit", "output-x",
)
BROKEN_SEEDS = 8
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
#: Module headers and port and parameter declarations: what a broken copy must leave as it is.
_DECLARATIONS = re.compile(r"\bmodule\b[^;]*;|\b(?:input|output|inout|parameter)\b[^;]*;")
#: After Ctrl-C, how long to keep killing sandboxes while the running jobs wind down.
STOP_TIMEOUT_S = 1.5


@dataclass(frozen=True)
class CheckJob:
    problem: Problem
    name: str
    files: dict[str, str]
    expected: str
    #: The files are the golden patch applied to the problem's repository (made when run).
    golden: bool = False

    @property
    def key(self) -> str:
        return f"{self.problem.id}::{self.name}"


@dataclass
class CheckOutcome:
    job_key: str
    problem_id: str
    name: str
    expected: str
    result: HarnessResult
    #: A randomised harness run with several seeds: ``{"seed", "verdict"}`` per run.
    seed_verdicts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def verdicts(self) -> list[str]:
        return [v["verdict"] for v in self.seed_verdicts] or [self.result.verdict]

    @property
    def flaky(self) -> bool:
        """Runs with different seeds gave different verdicts."""
        return len(set(self.verdicts)) > 1

    @property
    def matches(self) -> bool:
        """Every run got the expected verdict; a labelled benchmark defect's reference may
        fail (the label says why, ``Problem.defect``)."""
        return all(v == self.expected for v in self.verdicts) or self.labelled_defect

    @property
    def labelled_defect(self) -> bool:
        """The reference of a problem the benchmark itself gets wrong (known, labelled)."""
        return self.name == REFERENCE and self.result.defect is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.job_key,
            "id": self.problem_id,
            "name": self.name,
            "expected": self.expected,
            "verdict": self.result.verdict,
            "matches": self.matches,
            "flaky": self.flaky,
            "seed_verdicts": self.seed_verdicts,
            "result": self.result.to_dict(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckOutcome:
        result = HarnessResult.from_dict(data["result"])
        return cls(data["key"], data["id"], data["name"], data["expected"], result, list(data.get("seed_verdicts") or []))


def _candidate(item: Any, where: str) -> dict[str, Any]:
    """One candidate line, checked so that a bad one fails here and not in a worker thread."""
    if not isinstance(item, dict):
        raise DatasetError(f"{where}: malformed candidate line: expected a JSON object, got {type(item).__name__}")
    files = item.get("files")
    if not isinstance(item.get("id"), str) or not item["id"] or not isinstance(files, dict):
        raise DatasetError(f"{where}: malformed candidate line: needs 'id' and 'files'")
    bad = next((path for path, text in files.items() if not isinstance(text, str)), None)
    if bad is not None:
        raise DatasetError(f"{where}: malformed candidate line: files[{bad!r}] must be text")
    for key in ("name", "expected"):
        if item.get(key) is not None and not isinstance(item[key], str):
            raise DatasetError(f"{where}: malformed candidate line: {key!r} must be a string")
    return item


def load_candidates(path: str | Path) -> list[dict[str, Any]]:
    """Extra candidates: JSONL lines ``{"id", "name", "files": {path: text}, "expected"}``.

    Raises ``DatasetError`` naming the file and line for anything else (including a file
    that is missing, binary or not UTF-8).
    """
    try:
        return [_candidate(item, f"{path}:{number}") for number, item in iter_json(path)]
    except JsonlError as exc:
        raise DatasetError(str(exc)) from None


def build_jobs(
    dataset: Dataset,
    candidates: Iterable[Candidate | dict[str, Any]] = (),
    *,
    references: bool = True,
) -> list[CheckJob]:
    by_id = {p.id: p for p in dataset.problems}
    jobs: list[CheckJob] = []
    if references:
        for problem in dataset.problems:
            if problem.reference is not None:  # public CVDP releases carry no solutions
                jobs.append(CheckJob(problem, REFERENCE, problem.reference, PASSED))
                broken = broken_copy(problem) if problem.grader == REFERENCE_GRADER else None
                if broken is not None:
                    jobs.append(CheckJob(problem, f"{BROKEN}:{broken[0]}", broken[1], TEST_FAILURE))
            elif problem.repo is not None and any(d.strip() for d in problem.patch.values()):
                jobs.append(CheckJob(problem, REFERENCE, {}, PASSED, golden=True))
    for item in candidates:
        data = item.to_json() if isinstance(item, Candidate) else item
        problem = by_id.get(data["id"])
        if problem is None:
            continue
        # A missing or null name/expected gets the default (not the text "None").
        name, expected = data.get("name") or "candidate", data.get("expected") or "?"
        jobs.append(CheckJob(problem, str(name), data["files"], str(expected)))
    return jobs


def broken_copy(problem: Problem) -> tuple[str, dict[str, str]] | None:
    """``(mutant kind, files)``: the problem's reference with one change of behaviour (the
    first of ``BROKEN_KINDS`` that applies without touching a module header, port or
    parameter declaration), or None where none applies."""
    from cvdp_gym.parity.mutants import mutate  # the parity package imports this module

    target = problem.targets[0] if problem.targets else ""
    text = (problem.reference or {}).get(target, "")
    top = problem.extra.get("top")
    interface = _DECLARATIONS.findall(_COMMENTS.sub(" ", text))
    for kind in BROKEN_KINDS:
        for seed in range(BROKEN_SEEDS):
            mutated = mutate(text, kind, seed=seed, key=problem.id, top=str(top) if top else None)
            if mutated is not None and _DECLARATIONS.findall(_COMMENTS.sub(" ", mutated)) == interface:
                return kind, {target: mutated}
    return None


def training_notes(problems: Iterable[Problem], outcomes: Iterable[CheckOutcome]) -> list[str]:
    """What ``check`` says about training sets: references equivalent to themselves, broken
    copies caught, and which sets' references nobody checked (a failure there may be the
    reference's own)."""
    chosen = [p for p in problems if p.grader == REFERENCE_GRADER]
    if not chosen:
        return []
    names = {p.id for p in chosen}
    mine = [o for o in outcomes if o.problem_id in names]
    refs = [o for o in mine if o.name == REFERENCE]
    broken = [o for o in mine if o.name.startswith(BROKEN + ":")]
    without = {o.problem_id for o in refs} - {o.problem_id for o in broken}
    undecided = [sum(o.result.verdict == UNDECIDED for o in group) for group in (refs, broken)]
    lines = [
        f"training sets: references equivalent to themselves {sum(o.result.passed for o in refs)}/{len(refs)}; "
        f"broken copies caught {sum(o.result.verdict == TEST_FAILURE for o in broken)}/{len(broken)}"
        + (f" ({len(without)} problem(s) with no applicable broken copy)" if without else "")
        + (f"; undecided (no stage covered the design): {undecided[0]} reference(s), {undecided[1]} broken copies"
           if any(undecided) else "")
    ]
    unchecked = Counter(p.benchmark for p in chosen if p.extra.get("checked_reference") is False)
    for name, count in sorted(unchecked.items()):
        why = getattr(BENCHMARKS.get(name), "unchecked", "marked unchecked")
        lines.append(
            f"note: {count} reference(s) of {name} are unchecked: {why}; such a reference may itself be wrong, so "
            "its passing only says it equals itself, and a broken copy caught only that it differs from it"
        )
    return lines


def read_done(path: Path) -> dict[str, CheckOutcome]:
    """Outcomes already in a results file (a torn last line is ignored)."""
    done: dict[str, CheckOutcome] = {}
    for row in read_objects(path):
        try:
            outcome = CheckOutcome.from_json(row)
        except (KeyError, TypeError, AttributeError, ValueError):
            continue  # a line from another tool, or hand-edited: run that job again
        if isinstance(outcome.job_key, str):
            done[outcome.job_key] = outcome
    return done


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


@dataclass
class ReferenceCheck:
    """A comprehension reference scored against itself: unparsed (the official golden mode),
    and sent as the JSON answer ``{"response": reference}`` (which a fenced block in the
    reference cuts down to that block), with what a reader should know about it."""

    problem_id: str
    category: str
    golden: GradeResult
    as_answer: GradeResult
    note: str


def comprehension_checks(dataset: Dataset) -> list[ReferenceCheck]:
    """Every comprehension problem's reference scored against itself (no judge: judge
    problems are reported ``not_judged``). Its golden score need not be 1.0 (official quirks)."""
    out = []
    for problem in dataset.problems:
        if problem.scoring == "harness" or problem.reference_answer is None:
            continue
        golden = grade_reference(problem)
        as_answer = grade_comprehension(problem, json.dumps({"response": problem.reference_answer}))
        notes = []
        if golden.failure_class == "scoring_error":
            notes.append("a reference under two words: the official scorer fails it")
        elif golden.scores.get("rouge", 1.0) < 1.0:
            notes.append("ROUGE-2 below 1.0: the reference repeats a bigram (official quirk)")
        if "```" in problem.reference_answer and as_answer.scores.get("bleu", 1.0) < 1.0:
            notes.append("as an answer only its first fenced block is scored (official quirk)")
        out.append(ReferenceCheck(problem.id, problem.category, golden, as_answer, "; ".join(notes)))
    return out

