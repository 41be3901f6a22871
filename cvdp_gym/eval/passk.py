"""pass@k estimators and their aggregation over problems.

Two estimators, both averaged over problems:

- unbiased (Chen et al. 2021): ``1 − C(n−c, k) / C(n, k)``, the probability that at least
  one of k samples drawn without replacement from the n graded ones passes;
- official (what the CVDP report prints): ``1 − (1 − c/n)^k``, which treats the n samples
  as draws with replacement and so overstates pass@k for k > 1 (equal at k = 1).

A problem with fewer than k samples has no estimate for that k and is left out of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import comb
from typing import Any

from cvdp_gym.errors import ConfigError

#: Default k values: the usual ladder, cut at the largest sample count.
K_LADDER = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


def problem_counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[int]]:
    """``[samples, passed]`` per problem id of some results rows: the ``(n, c)`` every
    estimator here takes, in the order the problems first appear."""
    counts: dict[str, list[int]] = {}
    for row in rows:
        entry = counts.setdefault(row["id"], [0, 0])
        entry[0] += 1
        entry[1] += bool(row.get("passed"))
    return counts


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ConfigError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ConfigError(f"pass@{k} needs at least {k} samples, got n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with ``c`` passing samples out of ``n``."""
    _check(n, c, k)
    if n - c < k:  # every k-subset holds a passing sample
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_at_k_official(n: int, c: int, k: int) -> float:
    """The official CVDP (biased) pass@k of one problem: ``1 − (1 − c/n)^k``."""
    _check(n, c, k)
    return 1.0 - (1.0 - c / n) ** k


def default_ks(max_samples: int) -> list[int]:
    """1, the ladder values up to ``max_samples``, and ``max_samples`` itself."""
    if max_samples < 1:
        return []
    return sorted({k for k in K_LADDER if k <= max_samples} | {max_samples})


@dataclass(frozen=True)
class PassAtK:
    """pass@k of a group of problems, with how many problems it covers."""

    k: int
    unbiased: float | None
    official: float | None
    problems: int  # problems with at least k samples
    excluded: int  # problems left out: fewer than k samples

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "k": self.k,
            "unbiased": self.unbiased,
            "official_biased": self.official,
            "problems": self.problems,
            "excluded_fewer_samples": self.excluded,
        }


def aggregate(counts: Iterable[tuple[int, int]], ks: Iterable[int]) -> list[PassAtK]:
    """pass@k for each k, averaged over problems given as ``(n, c)`` pairs."""
    pairs = [(n, c) for n, c in counts if n > 0]
    out = []
    for k in sorted(set(ks)):
        eligible = [(n, c) for n, c in pairs if n >= k]
        if eligible:
            unbiased = sum(pass_at_k(n, c, k) for n, c in eligible) / len(eligible)
            official = sum(pass_at_k_official(n, c, k) for n, c in eligible) / len(eligible)
        else:
            unbiased = official = None
        out.append(PassAtK(k, unbiased, official, len(eligible), len(pairs) - len(eligible)))
    return out


def pass_after_attempts(first_passes: Iterable[int | None], attempts: int) -> list[float]:
    """pass@1 after attempt 1, 2, ... ``attempts`` of multi-turn episodes: for each i, the
    fraction of episodes whose first passing answer (``None``: none passed) is among their first i."""
    firsts = list(first_passes)
    if not firsts:
        return [0.0] * attempts
    return [sum(f is not None and f <= i for f in firsts) / len(firsts) for i in range(1, attempts + 1)]
