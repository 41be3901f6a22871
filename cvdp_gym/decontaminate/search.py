"""Each training item's nearest evaluation problems, its scores, and whether it is flagged.

A training item is **flagged** when, against some evaluation problem, a score is strictly
above its threshold: the specification's ROUGE-L, the reference code's ROUGE-L, or the word
n-gram overlap of either (see :mod:`.texts` for the normalisation and definitions). A
threshold of 1.0 turns its test off (no score is above 1). Presets: ``codev-r1`` is
CodeV-R1's filter (specification ROUGE-L > 0.5, nothing else); ``default`` adds the code and
the n-gram tests.

Flags are exact, never sampled: the evaluation set is indexed once
(:class:`cvdp_gym.decontaminate.index.FieldIndex`); each item's nearest problems by
specification ROUGE-L and by code ROUGE-L are found by branch and bound, exact down to the
threshold (or ``exact_above``, lower), and its n-gram overlap with every problem comes from
the inverted index. The reported neighbours are the closest of those and of the problems of
highest n-gram overlap, with all four scores each.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from cvdp_gym.data import Problem, load_dataset
from cvdp_gym.decontaminate.index import FieldIndex
from cvdp_gym.decontaminate.texts import (
    code_tokens,
    match_masks,
    reference_code,
    spec_words,
    specification,
)
from cvdp_gym.errors import ConfigError, DatasetError

#: A threshold no score exceeds: the test is off.
OFF = 1.0


@dataclass(frozen=True)
class Thresholds:
    """Flag a training item when a score is strictly above its threshold (``OFF``: never)."""

    #: ROUGE-L of the specifications (CodeV-R1 removed items above 0.5).
    spec_rouge_l: float = 0.5
    #: ROUGE-L of the reference designs' code tokens.
    code_rouge_l: float = 0.8
    #: n of the word / token n-grams.
    ngram: int = 10
    #: Share of an evaluation problem's n-grams (specification or code) the item has.
    ngram_overlap: float = 0.5

    def check(self) -> Thresholds:
        """Itself, or a ``ConfigError`` naming the first value out of range."""
        for name in ("spec_rouge_l", "code_rouge_l", "ngram_overlap"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"threshold {name}={value}: expected a number from 0 to 1 (1: off)")
        if self.ngram < 1:
            raise ConfigError(f"ngram={self.ngram}: expected n >= 1")
        return self

    def describe(self) -> str:
        """One line: which tests are on, at what threshold."""
        tests = [
            f"specification ROUGE-L > {self.spec_rouge_l:g}" if self.spec_rouge_l < OFF else "",
            f"code ROUGE-L > {self.code_rouge_l:g}" if self.code_rouge_l < OFF else "",
            f"{self.ngram}-gram overlap > {self.ngram_overlap:g}" if self.ngram_overlap < OFF else "",
        ]
        return " or ".join(t for t in tests if t) or "nothing (every test is off)"

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


PRESETS: dict[str, Thresholds] = {
    "default": Thresholds(),
    "codev-r1": Thresholds(spec_rouge_l=0.5, code_rouge_l=OFF, ngram_overlap=OFF),
}


def thresholds_for(preset: str = "default", **overrides: float | int | None) -> Thresholds:
    """A preset's thresholds with the given (non-None) values replaced; ``ConfigError`` for an
    unknown preset or a value out of range."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    return replace(PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None}).check()


@dataclass(frozen=True)
class Match:
    """One evaluation problem near a training item, with every score (None: no code to compare)."""

    evaluation_id: str
    benchmark: str
    spec_rouge_l: float
    code_rouge_l: float | None
    spec_ngram_overlap: float
    code_ngram_overlap: float | None

    @property
    def closeness(self) -> tuple[float, float]:
        """Sort key: the higher ROUGE-L, then the higher n-gram overlap."""
        return (max(self.spec_rouge_l, self.code_rouge_l or 0.0),
                max(self.spec_ngram_overlap, self.code_ngram_overlap or 0.0))

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class ItemResult:
    """A training item's nearest evaluation problems and the verdict.

    ``nearest_spec_rouge_l`` / ``nearest_code_rouge_l`` are the highest ROUGE-L against the
    whole evaluation set (None: the item has no code); ``reasons`` says which score passed
    which threshold against which problem (empty: not flagged).
    """

    training_id: str
    nearest: tuple[Match, ...]
    nearest_spec_rouge_l: float
    nearest_code_rouge_l: float | None
    reasons: tuple[str, ...]

    @property
    def flagged(self) -> bool:
        return bool(self.reasons)

    def to_json(self) -> dict[str, Any]:
        return {"training_id": self.training_id, "flagged": self.flagged, "reasons": list(self.reasons),
                "nearest_spec_rouge_l": self.nearest_spec_rouge_l, "nearest_code_rouge_l": self.nearest_code_rouge_l,
                "nearest": [m.to_json() for m in self.nearest]}


@dataclass(frozen=True)
class Texts:
    """The compared tokens of one problem."""

    spec: list[str]
    code: list[str]

    @classmethod
    def of(cls, problem: Problem) -> Texts:
        return cls(spec_words(specification(problem)), code_tokens(reference_code(problem)))


class EvaluationIndex:
    """The evaluation problems, indexed for ``ngram``-grams (build once, search many items)."""

    def __init__(self, problems: Sequence[Problem], ngram: int) -> None:
        self.problems = list(problems)
        self.ngram = ngram
        texts = [Texts.of(p) for p in self.problems]
        self.spec = FieldIndex([t.spec for t in texts], ngram)
        self.code = FieldIndex([t.code for t in texts], ngram)

    def search(
        self, problem: Problem, thresholds: Thresholds, nearest: int = 3, exact_above: float | None = None
    ) -> ItemResult:
        """One training item against every evaluation problem. The nearest ROUGE-L scores
        above each field's threshold, or above ``exact_above`` where that is lower, are exact;
        below it, the nearest of the most promising candidates (``FieldIndex.nearest``)."""
        texts = Texts.of(problem)
        spec, code = self.spec.encode(texts.spec), self.code.encode(texts.code)
        spec_floor = min(thresholds.spec_rouge_l, OFF if exact_above is None else exact_above)
        code_floor = min(thresholds.code_rouge_l, OFF if exact_above is None else exact_above)
        spec_top, _ = self.spec.nearest(spec, nearest, floor=spec_floor)
        code_top, _ = self.code.nearest(code, nearest, floor=code_floor)
        spec_overlaps, code_overlaps = self.spec.overlaps(spec), self.code.overlaps(code)
        spec_scores = {position: score for score, position in spec_top}
        code_scores = {position: score for score, position in code_top}
        # the k of highest n-gram overlap, and every one over the threshold (a reason to flag)
        by_overlap = {p for overlaps in (spec_overlaps, code_overlaps)
                      for p in sorted(overlaps, key=overlaps.__getitem__, reverse=True)[:nearest]}
        by_overlap |= {p for overlaps in (spec_overlaps, code_overlaps)
                       for p, share in overlaps.items() if share > thresholds.ngram_overlap}
        spec_masks, code_masks = match_masks(spec), match_masks(code)
        matches = []
        for position in sorted({*spec_scores, *code_scores, *by_overlap}):
            if position not in spec_scores:
                spec_scores[position] = self.spec.rouge_l(position, spec, spec_masks)
            has_code = bool(code) and self.code.lengths[position] > 0
            if has_code and position not in code_scores:
                code_scores[position] = self.code.rouge_l(position, code, code_masks)
            evaluation = self.problems[position]
            matches.append(Match(
                evaluation.id, evaluation.benchmark, spec_scores[position],
                code_scores.get(position) if has_code else None,
                spec_overlaps.get(position, 0.0), code_overlaps.get(position, 0.0) if has_code else None,
            ))
        matches.sort(key=lambda m: m.closeness, reverse=True)
        return ItemResult(
            problem.id, tuple(matches[:nearest]),
            spec_top[0][0] if spec_top else 0.0,
            (code_top[0][0] if code_top else 0.0) if code else None,
            tuple(reason for m in matches for reason in _reasons(m, thresholds)),
        )


def _reasons(match: Match, thresholds: Thresholds) -> list[str]:
    n = thresholds.ngram
    tests = [
        ("specification ROUGE-L", match.spec_rouge_l, thresholds.spec_rouge_l),
        ("code ROUGE-L", match.code_rouge_l, thresholds.code_rouge_l),
        (f"specification {n}-gram overlap", match.spec_ngram_overlap, thresholds.ngram_overlap),
        (f"code {n}-gram overlap", match.code_ngram_overlap, thresholds.ngram_overlap),
    ]
    return [f"{what} {score:.3f} > {limit:g} with {match.evaluation_id}"
            for what, score, limit in tests if score is not None and score > limit]


def evaluation_problems(specs: Iterable[str | Path], *, benchmark_dir: str | Path | None = None) -> list[Problem]:
    """Every problem of the evaluation datasets ``specs`` (anything ``load_dataset`` reads;
    CVDP problems of every category, scorable here or not), each id once."""
    problems: dict[str, Problem] = {}
    for spec in specs:
        dataset = load_dataset(spec, include_unsupported=True, benchmark_dir=benchmark_dir)
        for problem in dataset.problems:
            problems.setdefault(problem.id, problem)
    if not problems:
        raise DatasetError(f"no evaluation problems in {', '.join(map(str, specs))}")
    return list(problems.values())


def decontaminate(
    training: Iterable[Problem],
    evaluation: Sequence[Problem] | EvaluationIndex,
    thresholds: Thresholds | None = None,
    *,
    nearest: int = 3,
    exact_above: float | None = None,
    processes: int = 1,
    on_item: Callable[[ItemResult], None] | None = None,
) -> list[ItemResult]:
    """Every training item's result against the evaluation problems, in the items' order.

    An index is built when given problems (pass an ``EvaluationIndex`` of the same ``ngram``
    to reuse one). ``exact_above``: see ``EvaluationIndex.search``. ``processes`` > 1 searches in that many processes (started fresh, each
    indexing the evaluation problems once); ``on_item`` is called with each result as it is ready.
    """
    thresholds = (thresholds or Thresholds()).check()
    index = evaluation if isinstance(evaluation, EvaluationIndex) else EvaluationIndex(evaluation, thresholds.ngram)
    if index.ngram != thresholds.ngram:
        raise ConfigError(f"the evaluation index is of {index.ngram}-grams, the thresholds ask for {thresholds.ngram}-grams")
    items = list(training)
    if processes > 1 and len(items) > CHUNK:
        chunks = [[_texts_only(p) for p in items[i : i + CHUNK]] for i in range(0, len(items), CHUNK)]
        context = multiprocessing.get_context("spawn")  # no fork of a process with threads (a progress bar's)
        # each worker indexes the problems anew: quicker than pickling an index (tens of MB of masks)
        evaluation_texts = [_texts_only(p) for p in index.problems]
        with ProcessPoolExecutor(processes, mp_context=context, initializer=_build_index,
                                 initargs=(evaluation_texts, index.ngram)) as pool:
            found = (r for rs in pool.map(_search_chunk, chunks, *([setting] * len(chunks) for setting in (thresholds, nearest, exact_above))) for r in rs)
            return _collect(found, on_item)
    return _collect((index.search(p, thresholds, nearest, exact_above) for p in items), on_item)


#: Training items a worker process searches per task.
CHUNK = 64
_WORKER_INDEX: EvaluationIndex | None = None


def _texts_only(problem: Problem) -> Problem:
    """The problem without the files no comparison reads (harness, context, patch)."""
    return replace(problem, harness={}, context={}, patch={})


def _build_index(problems: list[Problem], ngram: int) -> None:
    global _WORKER_INDEX
    _WORKER_INDEX = EvaluationIndex(problems, ngram)


def _search_chunk(problems: list[Problem], thresholds: Thresholds, nearest: int, exact_above: float | None) -> list[ItemResult]:
    assert _WORKER_INDEX is not None
    return [_WORKER_INDEX.search(p, thresholds, nearest, exact_above) for p in problems]


def _collect(results: Iterable[ItemResult], on_item: Callable[[ItemResult], None] | None) -> list[ItemResult]:
    collected = []
    for result in results:
        collected.append(result)
        if on_item is not None:
            on_item(result)
    return collected
