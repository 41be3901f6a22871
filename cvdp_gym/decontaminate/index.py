"""The evaluation side of decontamination, indexed once so each training item is fast.

One ``FieldIndex`` per compared field (specification words, code tokens) over every
evaluation problem. Tokens are numbered by the evaluation set's vocabulary (a training
token it lacks is -1: it can match nothing). The index holds:

- an **inverted n-gram index** (n-gram → problems that have it): a training item's n-gram
  overlap with every evaluation problem, exactly, from the postings of its own n-grams;
- **token postings with counts** (a column-sparse matrix in numpy arrays): for every
  evaluation problem at once, the size of the multiset intersection of its tokens and the
  training item's, which no common subsequence can exceed, so ``2·shared / (m + n)`` bounds
  ROUGE-L from above;
- each problem's **match masks** for the bit-parallel LCS (:mod:`.texts`).

``nearest`` computes the exact ROUGE-L only for candidates in decreasing order of that bound
and stops when the bound cannot beat the k-th best found (branch and bound) or falls to a
floor (the flagging threshold): the nearest problems above the floor are exact, those below
it the nearest of the most promising few, and the rest of the evaluation set is never
compared token by token.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from cvdp_gym.decontaminate.texts import lcs_length, match_masks, ngram_set, rouge_l_from_lcs

#: The number of a token the evaluation set does not have.
UNKNOWN = -1
#: Problems of highest bound compared exactly whatever the floor: below the floor, the nearest
#: of these is within a few hundredths of the true nearest (measured: bench_decontaminate.py).
PROBE = 32


class FieldIndex:
    """One field (specification or code) of every evaluation problem, by position."""

    def __init__(self, token_lists: Sequence[list[str]], n: int) -> None:
        self.n = n
        self.size = len(token_lists)
        self.vocabulary: dict[str, int] = {}
        for tokens in token_lists:
            for token in tokens:
                self.vocabulary.setdefault(token, len(self.vocabulary))
        self.tokens = [self.encode(t) for t in token_lists]
        self.lengths = np.array([len(t) for t in self.tokens], dtype=np.float64)
        self.masks = [match_masks(t) for t in self.tokens]
        postings: dict[int, list[int]] = defaultdict(list)
        counts = []
        for position, tokens in enumerate(self.tokens):
            grams = ngram_set(tokens, n)
            counts.append(len(grams))
            for gram in grams:
                postings[gram].append(position)
        self.ngram_counts = np.array(counts, dtype=np.float64)
        self.ngram_postings = {gram: np.array(where, dtype=np.int64) for gram, where in postings.items()}
        # token postings, grouped by token number: problems[starts[t]:starts[t + 1]] have token t
        rows = sorted((number, position, count) for position, tokens in enumerate(self.tokens)
                      for number, count in Counter(tokens).items())
        self.starts = np.searchsorted(np.array([r[0] for r in rows], dtype=np.int64), np.arange(len(self.vocabulary) + 1))
        self.posting_problem = np.array([r[1] for r in rows], dtype=np.int64)
        self.posting_count = np.array([r[2] for r in rows], dtype=np.float64)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Token numbers in this index's vocabulary (``UNKNOWN`` for a token it lacks)."""
        return [self.vocabulary.get(t, UNKNOWN) for t in tokens]

    # ---------------------------------------------------------------- bounds and exact scores

    def shared_tokens(self, numbers: Sequence[int]) -> np.ndarray:
        """For every evaluation problem, the size of the multiset intersection with ``numbers``."""
        counts = Counter(t for t in numbers if t != UNKNOWN)
        if not counts:
            return np.zeros(self.size)
        wanted_tokens = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
        wanted = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        starts, spans = self.starts[wanted_tokens], self.starts[wanted_tokens + 1] - self.starts[wanted_tokens]
        # the positions of every posting of every wanted token, in one array
        offsets = np.repeat(starts - np.cumsum(spans) + spans, spans) + np.arange(int(spans.sum()))
        shared = np.minimum(self.posting_count[offsets], np.repeat(wanted, spans))
        return np.bincount(self.posting_problem[offsets], weights=shared, minlength=self.size)

    def rouge_l(self, position: int, numbers: Sequence[int], own_masks: dict[int, int] | None = None) -> float:
        """Exact ROUGE-L of ``numbers`` and problem ``position``; the loop runs over the shorter
        text (``own_masks``: the ``match_masks`` of ``numbers``, if already made)."""
        length = int(self.lengths[position])
        if not numbers or not length:
            return 0.0
        if len(numbers) <= length:
            lcs = lcs_length(self.masks[position], length, numbers)
        else:
            masks = own_masks if own_masks is not None else match_masks(numbers)
            lcs = lcs_length(masks, len(numbers), self.tokens[position])
        return rouge_l_from_lcs(lcs, len(numbers), length)

    def nearest(
        self, numbers: Sequence[int], k: int, *, floor: float = 0.0, probe: int = PROBE
    ) -> tuple[list[tuple[float, int]], int]:
        """The ``k`` problems of highest ROUGE-L with ``numbers`` as (score, position), best
        first, none at 0; and how many exact ROUGE-L computations that took.

        Every score is exact, and so is the choice of the ``k`` among problems whose ROUGE-L
        is above ``floor``; a problem whose bound is at most ``floor`` is compared only if it
        is among the ``probe`` of highest bound. So where even the nearest is at or below
        ``floor``, the result is the nearest of those (a lower bound of the true nearest).
        """
        if not numbers or k < 1:
            return [], 0
        bounds = 2.0 * self.shared_tokens(numbers) / (len(numbers) + self.lengths)
        order = np.argsort(-bounds, kind="stable")
        own_masks = match_masks(numbers)
        best: list[tuple[float, int]] = []  # a min-heap of the k best so far: (score, -position)
        computed = 0
        for rank, position in enumerate(order.tolist()):
            bound = bounds[position]
            if bound <= 0.0 or (len(best) == k and bound <= best[0][0]) or (rank >= probe and bound <= floor):
                break
            score = self.rouge_l(position, numbers, own_masks)
            computed += 1
            if score > 0.0 and (len(best) < k or score > best[0][0]):
                (heapq.heappush if len(best) < k else heapq.heapreplace)(best, (score, -position))
        return [(score, -negative) for score, negative in sorted(best, reverse=True)], computed

    def overlaps(self, numbers: Sequence[int]) -> dict[int, float]:
        """Each evaluation problem's share of its n-grams that ``numbers`` has (those above 0)."""
        hits = [self.ngram_postings[g] for g in ngram_set(numbers, self.n) if g in self.ngram_postings]
        if not hits:
            return {}
        shared = np.bincount(np.concatenate(hits), minlength=self.size)
        return {int(p): float(shared[p] / self.ngram_counts[p]) for p in np.nonzero(shared)[0]}
