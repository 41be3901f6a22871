"""95% intervals and the paired test behind ``eval``, ``check`` and ``compare``.

- ``wilson``: the interval printed next to a pass rate. Wilson's score interval rather than
  a bootstrap over problems because it is closed-form (no seed, the same numbers on every
  machine), stays inside [0, 1] and keeps its coverage near 0% and 100%, where a handful
  of problems and the normal (Wald) interval collapse to a point. Its ``n`` is the number
  of *problems*, not answers: answers to one problem are not independent, and a mean of
  per-problem rates in [0, 1] has variance at most ``p(1 − p)/n_problems``, so with one
  answer per problem it is the textbook interval and with several it errs wide, not narrow.
- ``paired_bootstrap``: the interval of a difference of pass@1 between two runs on the same
  problems: resample problems (the units) with replacement, take the mean per-problem
  difference, keep the 2.5 and 97.5 percentiles. Pairing removes the problems' own
  difficulty from the noise, and it works with any number of samples per problem.
- ``bootstrap_mean``: the same percentile bootstrap of the mean of any per-problem values
  (the HTML report's pass@k intervals: per-problem unbiased pass@k, resampled over problems).
- ``mcnemar_exact``: the p-value of "neither run is better": the exact two-sided sign test
  on the problems one run wins and the other wins (ties dropped). With one sample per
  problem this is McNemar's exact test on the discordant pairs; with several it is the
  same test on per-problem pass rates. No seed and no normal approximation, so it is exact
  for the few discordant problems a benchmark comparison usually has.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb, sqrt

import numpy as np

__all__ = ["BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "Z95", "bootstrap_mean", "mcnemar_exact", "paired_bootstrap", "wilson"]

#: The normal quantile of a two-sided 95% interval.
Z95 = 1.959963984540054
#: Resamples and seed of ``paired_bootstrap`` (seeded: the same runs give the same interval).
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
#: Resamples drawn at once (bounds memory to about 8 MB of indices per chunk).
_CHUNK_CELLS = 1_000_000


def wilson(rate: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of a rate observed over ``n`` units ((0, 1) when ``n`` is 0)."""
    if n <= 0:
        return (0.0, 1.0)
    rate = min(1.0, max(0.0, rate))
    z2 = z * z
    centre = (rate + z2 / (2 * n)) / (1 + z2 / n)
    half = z * sqrt(rate * (1 - rate) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def paired_bootstrap(
    differences: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """The percentile bootstrap 95% interval of the mean of per-problem ``differences``
    (:func:`bootstrap_mean` of them)."""
    return bootstrap_mean(differences, resamples=resamples, seed=seed)


def bootstrap_mean(
    values: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """The percentile bootstrap 95% interval of the mean of per-problem ``values``.

    Procedure (tests repeat it): ``rng = numpy.random.default_rng(seed)``; draw the
    resamples' indices as ``rng.integers(0, n, size=(rows, n))`` in chunks of rows, in order;
    take each resample's mean; ``numpy.quantile(means, [0.025, 0.975])`` (linear).
    """
    data = np.asarray(values, dtype=float)
    n = len(data)
    if n == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    step = max(1, _CHUNK_CELLS // n)
    means = np.empty(resamples)
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        means[start : start + rows] = data[rng.integers(0, n, size=(rows, n))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return (float(low), float(high))


def mcnemar_exact(wins: int, losses: int) -> float:
    """Two-sided exact p-value: ``min(1, 2·P[X ≤ min(wins, losses)])``, ``X ~ Binomial(wins + losses, 1/2)``."""
    total = wins + losses
    if total == 0:
        return 1.0
    tail = sum(comb(total, i) for i in range(min(wins, losses) + 1)) / 2**total
    return min(1.0, 2 * tail)
