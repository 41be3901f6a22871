"""``cvdp-gym check``: run reference solutions (and named candidates) through the harnesses.

Each job is one (problem, candidate) pair with the verdict it should get. Results are
appended to a JSONL file as they finish, so an interrupted check resumes where it stopped.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvdp_gym.data.bundle import Candidate
from cvdp_gym.data.problems import Dataset, DatasetError, Problem
from cvdp_gym.harness.results import PASSED, HarnessResult
from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.jsonl import read_objects

REFERENCE = "reference"


@dataclass(frozen=True)
class CheckJob:
    problem: Problem
    name: str
    files: dict[str, str]
    expected: str

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

    @property
    def matches(self) -> bool:
        return self.result.verdict == self.expected

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.job_key,
            "id": self.problem_id,
            "name": self.name,
            "expected": self.expected,
            "verdict": self.result.verdict,
            "matches": self.matches,
            "result": self.result.to_dict(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckOutcome:
        return cls(data["key"], data["id"], data["name"], data["expected"], HarnessResult.from_dict(data["result"]))


def load_candidates(path: str | Path) -> list[dict[str, Any]]:
    """Extra candidates: JSONL lines ``{"id", "name", "files": {path: text}, "expected"}``."""
    out = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                if not isinstance(item.get("files"), dict) or not isinstance(item.get("id"), str):
                    raise ValueError("needs 'id' and 'files'")
            except (json.JSONDecodeError, ValueError, AttributeError) as exc:
                raise DatasetError(f"{path}:{number}: malformed candidate line: {exc}") from None
            out.append(item)
    return out


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
    for item in candidates:
        data = item.to_json() if isinstance(item, Candidate) else item
        problem = by_id.get(data["id"])
        if problem is None:
            continue
        jobs.append(CheckJob(problem, str(data.get("name", "candidate")), data["files"], str(data.get("expected", "?"))))
    return jobs


def read_done(path: Path) -> dict[str, CheckOutcome]:
    """Outcomes already in a results file (a torn last line is ignored)."""
    done: dict[str, CheckOutcome] = {}
    for row in read_objects(path):
        try:
            outcome = CheckOutcome.from_json(row)
        except (KeyError, TypeError):
            continue
        done[outcome.job_key] = outcome
    return done


def run_jobs(
    jobs: list[CheckJob],
    runner: HarnessRunner,
    *,
    jobs_parallel: int = 1,
    out_path: Path | None = None,
    resume: bool = False,
    on_done: Callable[[CheckOutcome], None] | None = None,
) -> list[CheckOutcome]:
    """Run every job (in parallel threads), appending each outcome to ``out_path``."""
    done = read_done(out_path) if (resume and out_path is not None) else {}
    if done and out_path is not None:
        # Drop a torn last line left by an interrupted run, so appends start on a clean line.
        out_path.write_text("".join(json.dumps(o.to_json()) + "\n" for o in done.values()))
    if out_path is not None and not resume and out_path.exists():
        out_path.unlink()
    outcomes = [done[j.key] for j in jobs if j.key in done]
    for outcome in outcomes:
        if on_done:
            on_done(outcome)
    todo = [j for j in jobs if j.key not in done]
    lock = threading.Lock()

    def run_one(job: CheckJob) -> CheckOutcome:
        result = runner.run(job.problem, job.files)
        return CheckOutcome(job.key, job.problem.id, job.name, job.expected, result)

    if out_path is not None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs_parallel)) as pool:
        futures = [pool.submit(run_one, job) for job in todo]
        for future in as_completed(futures):
            outcome = future.result()
            with lock:
                if out_path is not None:
                    with open(out_path, "a", encoding="utf-8") as handle:
                        handle.write(json.dumps(outcome.to_json()) + "\n")
                outcomes.append(outcome)
            if on_done:
                on_done(outcome)
    order = {j.key: i for i, j in enumerate(jobs)}
    return sorted(outcomes, key=lambda o: order.get(o.job_key, 0))
