"""What ``check`` says beside the verdicts: the training sets' references and broken copies, and
comprehension problems' reference answers scored against themselves.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from cvdp_gym.check.jobs import BROKEN, REFERENCE
from cvdp_gym.check.outcomes import CheckOutcome
from cvdp_gym.data.benchmarks import BENCHMARKS
from cvdp_gym.data.problems import REFERENCE_GRADER, Dataset, Problem
from cvdp_gym.grading.comprehension import grade_comprehension, grade_reference
from cvdp_gym.grading.result import GradeResult
from cvdp_gym.harness.results import TEST_FAILURE, UNDECIDED

__all__ = ["ReferenceCheck", "comprehension_checks", "training_notes"]

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
