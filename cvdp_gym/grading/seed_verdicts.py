"""One verdict from the runs of one answer to a randomised harness with several seeds.

Contract: ``combine(results)`` turns the runs of one answer (their seeds from
``cvdp_gym.seeds.seed_list``) into one verdict: it passes only when every run passed (a
design that fails for one of the parameter values its harness may draw is wrong for that
value: the official runner would fail it whenever it drew it), and otherwise is the first
failing run's verdict; ``seed_verdicts`` lists every run's seed and verdict, and ``flaky``
says the verdicts differ. Deterministic harnesses are never run twice: the grader asks
``harness.randomness`` first.
"""

from __future__ import annotations

from collections.abc import Sequence

from cvdp_gym.grading.result import GradeResult

__all__ = ["combine"]


def combine(results: Sequence[GradeResult]) -> GradeResult:
    """One verdict from the runs of one answer with different seeds (see the module doc)."""
    first_failure = next((r for r in results if not r.passed), None)
    chosen = first_failure or results[0]
    chosen.seed_verdicts = [{"seed": r.seed, "verdict": r.verdict} for r in results]
    chosen.cached = all(r.cached for r in results)
    return chosen
