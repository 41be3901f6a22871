"""Every seed the project draws or derives, in one place, so that a seeded run is reproducible.

Contract:

- ``draw_seed()``: a fresh seed for a harness run that was given none (recorded with its
  result, so the run can be repeated);
- ``seed_list(count, first)``: the seeds of ``count`` runs of one answer: ``first,
  first + 1, ...`` when a first seed is given (a command line reproduces them), fresh draws
  otherwise;
- ``stimulus_seed(problem_id, settings)``: the reference grader's stimulus seed, a hash of
  the problem id, the cycle count and the ``seed`` option: the same answer under the same
  settings always sees the same stimulus (cacheable), on either simulator, in every mode;
- ``reference_mutant_random(seed, *parts)``: the generator of one seeded choice among a
  reference's mutants (:mod:`cvdp_gym.data.mutants`: which edit, the kinds' order, which
  problems hang), seeded with the seed and the choice's parts (problem id, kind): the same
  arguments always make the same mutant, for ``parity``, ``audit`` and ``check``.
- ``task_mutant_order(pool, seed, key)``: the order a verification task's run draws its seeded
  bugs in (its pool, itself built with the fixed ``TASK_MUTANT_POOL_SEEDS``): the run's seed
  and the problem's id, so a pinned ``harness_seed`` scores the same bugs everywhere.
"""

from __future__ import annotations

import hashlib
import json
import random
import secrets
from collections.abc import Sequence
from typing import Protocol, TypeVar

__all__ = [
    "TASK_MUTANT_POOL_SEEDS", "StimulusOptions", "draw_seed", "reference_mutant_random", "seed_list", "stimulus_seed",
    "task_mutant_order",
]

T = TypeVar("T")
#: The seeds a verification task's pool of candidate bugs is drawn with: fixed, so the pool is
#: the same on every machine (``cvdp_gym.tasks.mutants.mutant_pool``).
TASK_MUTANT_POOL_SEEDS = (0, 1, 2)


class StimulusOptions(Protocol):
    """What the stimulus seed depends on (``cvdp_gym.equivalence.settings.Settings`` has it)."""

    @property
    def cycles(self) -> int: ...

    @property
    def seed(self) -> int: ...


def draw_seed() -> int:
    """A fresh seed for a run that was given none (recorded with its result)."""
    return secrets.randbelow(2**31)


def seed_list(count: int, first: int | None = None) -> list[int]:
    """The seeds of ``count`` runs: ``first, first + 1, ...`` or fresh draws."""
    if first is None:
        return [draw_seed() for _ in range(max(1, count))]
    return [first + i for i in range(max(1, count))]


def stimulus_seed(problem_id: str, settings: StimulusOptions) -> int:
    """The stimulus's seed: the same for the same problem, cycle count and ``seed`` option."""
    text = json.dumps([problem_id, settings.cycles, settings.seed])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def reference_mutant_random(seed: int, *parts: str) -> random.Random:
    """The generator of one seeded choice among a reference's mutants (``data/mutants.py``):
    seeded with ``seed`` and ``parts`` (the problem id, the kind...) joined by ``:``."""
    return random.Random(":".join([str(seed), *parts]))
def task_mutant_order(pool: Sequence[T], seed: int, key: str) -> list[T]:
    """``pool`` in the order a verification task's run with ``seed`` draws it for problem ``key``."""
    order = list(pool)
    random.Random(f"{seed}:{key}").shuffle(order)
    return order
