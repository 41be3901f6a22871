"""What ``check`` runs: one job per (problem, candidate) pair with the verdict it should get: each
problem's reference, a training problem's broken copy, and extra candidates from a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvdp_gym.data.bundle import Candidate
from cvdp_gym.data.mutants import mutate
from cvdp_gym.data.problems import REFERENCE_GRADER, Dataset, DatasetError, Problem
from cvdp_gym.harness.results import PASSED, TEST_FAILURE
from cvdp_gym.jsonl import JsonlError, iter_json

__all__ = ["BROKEN", "BROKEN_KINDS", "REFERENCE", "CheckJob", "broken_copy", "build_jobs", "load_candidates"]

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
