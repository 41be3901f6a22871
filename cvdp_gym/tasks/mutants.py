"""The seeded bugs a verification answer is scored on: mutants shown to differ from the reference.

Contract: ``draw_mutants(design, sandbox, count=, seed=, limits=)`` returns a
:class:`MutantDraw`: up to ``count`` mutants of the design's reference, each a bug the
reference-equivalence grader (:class:`~cvdp_gym.equivalence.flow.ReferenceFlow`:
a differential simulation, then Yosys's formal check) shows is **not** equivalent to the
reference: an equivalent rewrite (a mutant no test could tell apart) or one the grader could
not decide is never counted against an answer.

Where they come from: a per-problem **pool** of up to ``POOL_SIZE`` candidates, the
behaviour-changing kinds of :mod:`cvdp_gym.data.mutants` (operators, constants, conditions,
resets, widths, case items, state transitions) drawn with a few fixed seeds (:mod:`cvdp_gym.seeds`), so it is the
same on every machine; each run draws its ``count`` from the pool with the run's ``seed``
(a fresh one per run unless the grader pins ``harness_seed``), so which bugs are scored changes
from run to run and never appears in a prompt, while the equivalence verdicts, the expensive
part (about a second each), are computed once per pool member and kept in this process.
Every mutant is written to the same file name as the reference, with the same module names,
so nothing but behaviour tells them apart.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field

from cvdp_gym.data.mutants import BEHAVIOUR_KINDS, mutate
from cvdp_gym.equivalence.flow import ReferenceFlow
from cvdp_gym.harness.results import PASSED, TEST_FAILURE
from cvdp_gym.sandbox.base import Limits, Sandbox
from cvdp_gym.seeds import TASK_MUTANT_POOL_SEEDS, task_mutant_order
from cvdp_gym.tasks.design import DesignUnderTest

__all__ = ["POOL_SIZE", "MutantDraw", "TaskMutant", "draw_mutants", "forget_verdicts", "mutant_pool"]

#: Candidates per problem: every behaviour kind, drawn with ``cvdp_gym.seeds.TASK_MUTANT_POOL_SEEDS``, at most this many.
POOL_SIZE = 16
DIFFERENT, EQUIVALENT, UNDECIDED = "different", "equivalent", "undecided"
_VERDICTS: dict[str, tuple[str, str]] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class TaskMutant:
    """One bug: its kind and the design text (its name is only the draw's index)."""

    kind: str
    text: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:12]


@dataclass
class MutantDraw:
    """The mutants a run scores, and what the pool held besides."""

    mutants: list[TaskMutant] = field(default_factory=list)
    #: Pool members checked and found equivalent to the reference, or not decided.
    equivalent: int = 0
    undecided: int = 0
    #: Why there are none at all ("" when some were drawn).
    why: str = ""

    def summary(self) -> dict[str, object]:
        return {
            "drawn": len(self.mutants), "kinds": [m.kind for m in self.mutants],
            "equivalent_skipped": self.equivalent, "undecided_skipped": self.undecided,
        }


def mutant_pool(design: DesignUnderTest) -> list[TaskMutant]:
    """The design's candidate bugs, in a fixed order (the same on every machine)."""
    seen = {design.text}
    pool: list[TaskMutant] = []
    for seed in TASK_MUTANT_POOL_SEEDS:
        for kind in BEHAVIOUR_KINDS:
            text = mutate(design.text, kind, seed=seed, key=design.source_id, top=design.top)
            if text is not None and text not in seen:
                seen.add(text)
                pool.append(TaskMutant(kind, text))
    return pool[:POOL_SIZE] if len(pool) <= POOL_SIZE else _spread(pool)


def _spread(pool: list[TaskMutant]) -> list[TaskMutant]:
    """``POOL_SIZE`` members taking the kinds in turn, so no kind crowds out the others."""
    by_kind: dict[str, list[TaskMutant]] = {}
    for mutant in pool:
        by_kind.setdefault(mutant.kind, []).append(mutant)
    chosen: list[TaskMutant] = []
    while len(chosen) < POOL_SIZE:
        for group in by_kind.values():
            if group and len(chosen) < POOL_SIZE:
                chosen.append(group.pop(0))
    return chosen


def draw_mutants(
    design: DesignUnderTest, sandbox: Sandbox, *, count: int, seed: int, limits: Limits,
) -> MutantDraw:
    """Up to ``count`` pool members the equivalence grader shows differ, in ``seed``'s order."""
    pool = mutant_pool(design)
    if not pool:
        return MutantDraw(why="no mutant of the reference applies (no operator, constant or condition to change)")
    draw = MutantDraw()
    undecided_why = ""
    for mutant in task_mutant_order(pool, seed, design.source_id):
        if len(draw.mutants) >= count:
            break
        verdict, why = equivalence_verdict(design, mutant, sandbox, limits)
        if verdict == DIFFERENT:
            draw.mutants.append(mutant)
        elif verdict == EQUIVALENT:
            draw.equivalent += 1
        else:
            draw.undecided += 1
            undecided_why = undecided_why or why
    if not draw.mutants:
        example = f"; e.g. {undecided_why[:200]}" if undecided_why else ""
        draw.why = f"no mutant of the reference was shown to differ from it ({draw.equivalent} equivalent, {draw.undecided} undecided{example})"
    return draw


def equivalence_verdict(design: DesignUnderTest, mutant: TaskMutant, sandbox: Sandbox, limits: Limits) -> tuple[str, str]:
    """(``different``, ``equivalent`` or ``undecided``, the grader's reason), cached per process."""
    key = hashlib.sha256(
        json.dumps([design.text, design.top, design.target, design.equivalence, mutant.text], sort_keys=True).encode()
    ).hexdigest()
    with _LOCK:
        known = _VERDICTS.get(key)
    if known is not None:
        return known
    result = ReferenceFlow().run(sandbox, design.as_problem(), {design.target: mutant.text}, limits=limits)
    if result.passed or result.failure_class == PASSED:
        verdict = (EQUIVALENT, result.reason)
    elif result.failure_class == TEST_FAILURE:
        verdict = (DIFFERENT, result.reason)
    else:
        verdict = (UNDECIDED, f"{result.failure_class}: {result.reason}")
    if verdict[0] != UNDECIDED or result.failure_class not in ("timeout", "infra_error", "harness_error"):
        with _LOCK:
            _VERDICTS[key] = verdict
    return verdict


def forget_verdicts() -> None:
    """Drop every equivalence verdict this process knows (``scripts/bench_verification.py``'s cold runs)."""
    with _LOCK:
        _VERDICTS.clear()
