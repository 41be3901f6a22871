"""``cvdp-gym audit``'s runs: seeded mutants of each reference, graded by the problem's own test
bench, and the survivors judged by the reference-equivalence grader.

Contract: ``plan(problems, count, seed)`` gives one ``Subject`` per problem it can audit (a
harness problem with a reference: its reference's ``count`` seeded single-site mutants of
:data:`cvdp_gym.data.mutants.BEHAVIOUR_KINDS`, each named ``mutant:<kind>@<hash>``) and the
problems it leaves out with why. ``run_audit(subjects, runner, out=...)`` grades in three
phases, each a :func:`cvdp_gym.check.run_jobs` appending to the same JSONL (so an
interrupted audit resumes, and Ctrl-C raises ``CheckInterrupted`` with what finished kept):

1. every reference with its own test bench (a reference that fails it leaves its problem
   out: a kill would mean nothing);
2. the mutants of the problems whose reference passed, with the same test bench, and each
   such reference with the equivalence grader (does it decide this problem at all?);
3. the mutants the test bench passed ("survivors"), with the equivalence grader against the
   reference (:func:`cvdp_gym.grading.backed.reference_check`): ``equivalent`` survivors are
   dropped (they are right), ``different`` ones are the test bench's real misses, and
   ``undecided`` ones are reported apart, never as kills or misses.

A mutant the test bench fails by behaviour (``test_failure``, ``timeout``, ``resource_limit``)
is killed; one it rejects unbuilt (a build or interface error, VerilogEval's warning rules) is
counted apart, as is one the machine could not grade. Killed mutants are not checked for
equivalence: the reference passes the same test bench, so a killed mutant behaves otherwise
(a CVDP harness that draws at random runs with the audit's seed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cvdp_gym.check import CheckJob, CheckOutcome, run_jobs
from cvdp_gym.data.mutants import BEHAVIOUR_KINDS, problem_mutants
from cvdp_gym.data.problems import SCORING_HARNESS, Problem
from cvdp_gym.grading.backed import (
    DIFFERENT,
    EQUIVALENT,
    ReferenceCheck,
    equivalence,
    reference_check,
)
from cvdp_gym.grading.result import UNDECIDED
from cvdp_gym.harness.results import PASSED, RESOURCE_LIMIT, TEST_FAILURE, TIMEOUT, HarnessResult
from cvdp_gym.harness.runner import HarnessRunner

__all__ = [
    "KILLED",
    "MISSED",
    "NOT_GRADED",
    "OUTCOMES",
    "RESULTS",
    "UNBUILT",
    "Audited",
    "Subject",
    "audit_mutants",
    "plan",
    "run_audit",
]

#: The incremental results file in the audit's folder.
RESULTS = "audit.jsonl"
REFERENCE, MUTANT, EQUIVALENCE = "reference", "mutant", "equivalence"
#: What became of a mutant: killed by the test bench, missed (it passed, and differs from the
#: reference), equivalent (passed and equivalent: dropped), undecided (passed, equivalence
#: not decided), unbuilt (rejected before simulating), not graded (the machine failed).
KILLED, MISSED, UNBUILT, NOT_GRADED = "killed", "missed", "unbuilt", "not graded"
OUTCOMES = (KILLED, MISSED, EQUIVALENT, UNDECIDED, UNBUILT, NOT_GRADED)
#: Test-bench failure classes that say the mutant behaves otherwise.
_BEHAVIOUR = (TEST_FAILURE, TIMEOUT, RESOURCE_LIMIT)
_UNBUILT = ("build_error", "interface_error", "toolchain_gap")
#: Rounds of ``problem_mutants`` (each with another seed) tried to reach ``count`` mutants.
_ROUNDS = 4


@dataclass(frozen=True)
class Subject:
    """One problem to audit: its reference's files, its mutants (name -> files) and how
    answers are checked against the reference (or why they cannot be)."""

    problem: Problem
    reference: dict[str, str]
    mutants: dict[str, dict[str, str]]
    check: ReferenceCheck | None
    no_check: str = ""


@dataclass
class Audited:
    """What the runs said about one subject: the reference's test-bench and equivalence
    outcomes, and each mutant's (the equivalence outcome only for survivors; the reference's
    own is ``equivalence["reference"]``)."""

    subject: Subject
    reference: CheckOutcome | None = None
    reference_equivalence: str | None = None
    testbench: dict[str, CheckOutcome] = field(default_factory=dict)
    equivalence: dict[str, CheckOutcome] = field(default_factory=dict)

    def outcome(self, name: str) -> str:
        """What became of mutant ``name`` (one of ``OUTCOMES``)."""
        bench = self.testbench[name].result
        if not bench.passed:
            if bench.failure_class in _BEHAVIOUR:
                return KILLED
            return UNBUILT if bench.failure_class in _UNBUILT else NOT_GRADED
        check = self.subject.check
        judged = bench if check is not None and check.same else getattr(self.equivalence.get(name), "result", None)
        return _survivor(judged)


def _survivor(judged: HarnessResult | None) -> str:
    """A survivor's outcome from the reference grader's verdict on it: ``missed``,
    ``equivalent`` or ``undecided`` (also where no check could run)."""
    if judged is None:
        return UNDECIDED
    verdict = equivalence(judged.passed, judged.failure_class)
    return MISSED if verdict == DIFFERENT else verdict


def _name(kind: str, text: str) -> str:
    return f"{MUTANT}:{kind}@{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def audit_mutants(problem: Problem, count: int, seed: int) -> dict[str, dict[str, str]]:
    """Up to ``count`` distinct behaviour mutants of ``problem``'s reference (name -> files):
    ``problem_mutants`` rounds with seeds drawn from ``seed``, until ``count`` or nothing new."""
    target = problem.targets[0]
    reference = dict(problem.reference or {})
    out: dict[str, dict[str, str]] = {}
    seen = {reference.get(target, "")}
    for round_ in range(_ROUNDS):
        added = 0
        for mutant in problem_mutants(problem, count, seed=seed * _ROUNDS + round_, kinds=BEHAVIOUR_KINDS):
            if len(out) < count and mutant.text not in seen:
                seen.add(mutant.text)
                out[_name(mutant.kind, mutant.text)] = {**reference, target: mutant.text}
                added += 1
        if len(out) >= count or not added:
            break
    return out


def plan(problems: Iterable[Problem], count: int, seed: int) -> tuple[list[Subject], list[tuple[Problem, str]]]:
    """The subjects to audit, and ``(problem, why)`` for each problem left out."""
    subjects: list[Subject] = []
    skipped: list[tuple[Problem, str]] = []
    for problem in problems:
        why = _unauditable(problem)
        if why:
            skipped.append((problem, why))
            continue
        mutants = audit_mutants(problem, count, seed)
        if not mutants:
            skipped.append((problem, "no behaviour mutant applies to its reference"))
            continue
        check = reference_check(problem)
        subjects.append(Subject(
            problem, dict(problem.reference or {}), mutants,
            None if isinstance(check, str) else check, check if isinstance(check, str) else "",
        ))
    return subjects, skipped


def _unauditable(problem: Problem) -> str:
    if problem.scoring != SCORING_HARNESS:
        return f"a {problem.scoring}-scored problem: its answers are text, not designs"
    if problem.unsupported:
        return f"unsupported here: {problem.unsupported}"
    if problem.repo is not None:
        return "a repository problem: its reference is a patch, not a design to mutate"
    if not problem.reference or not problem.targets or problem.targets[0] not in problem.reference:
        return "no reference design"
    return ""


def run_audit(
    subjects: list[Subject],
    runner: HarnessRunner,
    *,
    out: Path,
    jobs: int = 1,
    resume: bool = False,
    seed: int | None = None,
    on_planned: Callable[[int], None] = lambda _: None,
    on_done: Callable[[CheckOutcome], None] = lambda _: None,
) -> list[Audited]:
    """Grade every subject in the module doc's three phases; results appended to ``out/audit.jsonl``.

    ``resume``: keep what that file holds and grade only the rest; ``seed``: the harness seed
    (CVDP harnesses that draw at random); ``on_planned(n)``: n more runs are queued (for a
    progress bar's total); ``on_done``: each run's outcome as it finishes.
    """
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS
    audited = {s.problem.id: Audited(s) for s in subjects}

    def phase(job_list: list[CheckJob], keep: bool) -> list[CheckOutcome]:
        on_planned(len(job_list))
        return run_jobs(job_list, runner, jobs_parallel=jobs, out_path=path, resume=keep, on_done=on_done, seed=seed)

    references = [CheckJob(s.problem, REFERENCE, s.reference, PASSED) for s in subjects]
    for outcome in phase(references, resume):
        audited[outcome.problem_id].reference = outcome
    ready = [a for a in audited.values() if a.reference is not None and a.reference.result.passed]
    second = [CheckJob(a.subject.problem, name, files, "?") for a in ready for name, files in a.subject.mutants.items()]
    second += [_equivalence_job(a.subject, REFERENCE, a.subject.reference) for a in ready if _checked(a.subject)]
    for outcome in phase(second, True):
        entry = audited[outcome.problem_id]
        if outcome.name.startswith(EQUIVALENCE + ":"):
            entry.equivalence[REFERENCE] = outcome
            entry.reference_equivalence = equivalence(outcome.result.passed, outcome.result.failure_class)
        else:
            entry.testbench[outcome.name] = outcome
    for entry in ready:
        if entry.subject.check is not None and entry.subject.check.same and entry.reference is not None:
            result = entry.reference.result
            entry.reference_equivalence = equivalence(result.passed, result.failure_class)
    survivors = [
        _equivalence_job(a.subject, name, a.subject.mutants[name])
        for a in ready if _checked(a.subject) for name, o in a.testbench.items() if o.result.passed
    ]
    for outcome in phase(survivors, True):
        audited[outcome.problem_id].equivalence[outcome.name.removeprefix(EQUIVALENCE + ":")] = outcome
    return list(audited.values())


def _checked(subject: Subject) -> bool:
    """Answers to ``subject`` need a second run to be checked against its reference."""
    return subject.check is not None and not subject.check.same


def _equivalence_job(subject: Subject, name: str, files: dict[str, str]) -> CheckJob:
    assert subject.check is not None
    return CheckJob(subject.check.twin, f"{EQUIVALENCE}:{name}", subject.check.answer(files), "?")
