"""Rewards computed from a ``GradeResult``, each the sum of its named parts.

- ``shaped`` (default): 0.1 for extractable code + 0.3 if it compiles + 1.0 if every test
  passes (maximum 1.4): parts ``format``, ``syntax``, ``tests``. Compiling is worth
  something on its own: early in training most samples do not.
- ``partial``: the shaping plus the fraction of cocotb tests passed (maximum 1.4): the same
  parts, ``tests`` the fraction (0 for a test-bench pass that ``testbench+reference`` refused).
- ``binary``: 1.0 if every test passes, else 0.0: one part, ``tests``.
- ``quality``: the shaping plus ``QUALITY_REWARD`` times the quality score of a passing
  answer (``grading.quality``: 0.5 at the reference's area, delay and power, 1.0 at half,
  0.0 at twice; maximum 2.4): parts ``format``, ``syntax``, ``tests``, ``quality``. A failing
  answer, or one that could not be measured, gets no quality part.
- ``kills``: the verification tasks' reward (``RTL-Testbench-v0``, ``RTL-Assertion-v0``): the
  fraction of the seeded bugs the answer catches, 0.0 when it fails the reference design (a
  false alarm), does not build, or reaches into the design (maximum 1.0): one part, ``kills``.
  No shaping: a bench that merely compiles catches nothing.
- any callable ``GradeResult -> float``: one part, ``reward``.

A comprehension answer (``result.scoring`` ``bleu`` or ``judge``) has no code to shape:
``shaped`` and ``partial`` give it its credit in the official report (the BLEU-2 value, or
the judge's score; 0.0 when it could not be scored), one part ``credit``; ``binary`` its
pass bit (BLEU-2 and ROUGE-2 above 0.40, or a judge score of at least 0.7).

``interface_credit`` adds that much, part ``interface``, when the interface check passes
(off by default). The parts are what NeMo-Gym's ``/verify`` answers as
``reward_components``: a reward is ``total`` of its parts, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from cvdp_gym.errors import ConfigError
from cvdp_gym.grading.result import HARNESS_SCORING, GradeResult

RewardFn = Callable[[GradeResult], float]
#: A reward's named parts for one verdict (the reward is their ``total``).
RewardPartsFn = Callable[[GradeResult], dict[str, float]]
FORMAT_REWARD, SYNTAX_REWARD, PASS_REWARD, QUALITY_REWARD = 0.1, 0.3, 1.0, 1.0
MAX_SHAPED = FORMAT_REWARD + SYNTAX_REWARD + PASS_REWARD


def total(parts: Mapping[str, float]) -> float:
    """A reward from its parts, added in order."""
    return sum(parts.values(), 0.0)


def comprehension_credit(result: GradeResult) -> float:
    """A comprehension answer's official credit (0.0 when it was not scored)."""
    return float(result.credit or 0.0)


def shaped_parts(result: GradeResult) -> dict[str, float]:
    if result.scoring != HARNESS_SCORING:
        return {"credit": comprehension_credit(result)}
    return {
        "format": FORMAT_REWARD * result.format_ok,
        "syntax": SYNTAX_REWARD * result.syntax_ok,
        "tests": PASS_REWARD * result.passed,
    }


def partial_parts(result: GradeResult) -> dict[str, float]:
    if result.scoring != HARNESS_SCORING:
        return {"credit": comprehension_credit(result)}
    # A test-bench pass the reference refused (``testbench+reference``) earns no test credit.
    refused = bool(result.reference_check) and not result.passed
    tests = result.test_fraction if result.syntax_ok and not refused else 0.0
    return {"format": FORMAT_REWARD * result.format_ok, "syntax": SYNTAX_REWARD * result.syntax_ok, "tests": PASS_REWARD * tests}


def binary_parts(result: GradeResult) -> dict[str, float]:
    return {"tests": float(result.passed)}


def quality_parts(result: GradeResult) -> dict[str, float]:
    score = result.quality.get("score") if result.passed else None
    return {**shaped_parts(result), "quality": QUALITY_REWARD * float(score or 0.0)}


def kills_parts(result: GradeResult) -> dict[str, float]:
    caught = result.tests.passed / result.tests.total if result.syntax_ok and result.tests.total else 0.0
    return {"kills": caught}


def shaped(result: GradeResult) -> float:
    return total(shaped_parts(result))


def partial(result: GradeResult) -> float:
    return total(partial_parts(result))


def binary(result: GradeResult) -> float:
    return total(binary_parts(result))


def quality(result: GradeResult) -> float:
    return total(quality_parts(result))


def kills(result: GradeResult) -> float:
    return total(kills_parts(result))


REWARD_PARTS: dict[str, RewardPartsFn] = {
    "shaped": shaped_parts, "partial": partial_parts, "binary": binary_parts, "quality": quality_parts,
    "kills": kills_parts,
}
REWARDS: dict[str, RewardFn] = {
    "shaped": shaped, "partial": partial, "binary": binary, "quality": quality, "kills": kills,
}


def make_reward_parts(spec: str | RewardFn = "shaped", *, interface_credit: float = 0.0) -> RewardPartsFn:
    """The parts of a reward named or given as a callable (one part, ``reward``), with an
    ``interface`` part when the interface check is credited."""
    if callable(spec):
        base = _one_part(spec)
    elif spec in REWARD_PARTS:
        base = REWARD_PARTS[spec]
    else:
        raise ConfigError(f"unknown reward {spec!r}; expected one of {sorted(REWARDS)} or a callable")
    if not interface_credit:
        return base

    def with_interface(result: GradeResult) -> dict[str, float]:
        return {**base(result), "interface": interface_credit * result.interface_ok}

    return with_interface


def make_reward(spec: str | RewardFn = "shaped", *, interface_credit: float = 0.0) -> RewardFn:
    """A reward function from a name or a callable, optionally crediting a correct interface:
    the ``total`` of its ``make_reward_parts``."""
    parts = make_reward_parts(spec, interface_credit=interface_credit)

    def reward(result: GradeResult) -> float:
        return total(parts(result))

    return reward


def _one_part(reward_fn: RewardFn) -> RewardPartsFn:
    def parts(result: GradeResult) -> dict[str, float]:
        return {"reward": reward_fn(result)}

    return parts
