"""Rewards recomputed from stored rows under another reward setting, without grading again.

Two kinds of rows keep enough of a verdict for this:

- ``cvdp-gym eval``'s results rows keep the whole verdict (``grade``, less the files):
  it is read back with ``GradeResult.from_dict``;
- the NeMo-Gym ``/verify`` answers of ``cvdp-gym serve`` keep ``passed``, ``verdict``,
  ``tests``, ``category`` and ``reward_components``, whose ``format`` and ``syntax``
  parts say whether those stages passed and whose ``credit`` is a comprehension answer's
  credit. The interface check is not among them.

Either way the row becomes a ``GradeResult`` and the new reward is
``make_reward_parts(reward, interface_credit=...)`` of it, as grading computes it. Where a
row leaves something unknown (a stage, a comprehension credit), each value it could have
is tried: if the new reward comes out the same, it is the reward; if not, the row is left as
it was, with a one-line reason. Pass/fail never changes.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cvdp_gym.data.problems import SCORING_BY_CATEGORY
from cvdp_gym.errors import JsonlError
from cvdp_gym.eval.run import RESULTS
from cvdp_gym.grading.result import (
    FORMAT_ERROR,
    HARNESS_SCORING,
    INTERFACE_ERROR,
    STAGES,
    GradeResult,
    Stage,
)
from cvdp_gym.grading.rewards import RewardPartsFn, make_reward_parts, total
from cvdp_gym.harness.results import TestCounts
from cvdp_gym.jsonl import iter_json

__all__ = ["RescoreSummary", "rescore_file", "rescore_rows"]

Row = dict[str, Any]
#: Fields a ``/verify`` answer must hold to be rescored at all.
VERIFY_REQUIRED = {"passed": bool, "verdict": str, "tests": dict}
#: What an unknown value of a stored verdict may have been: the stages' bits, a credit's extremes.
POSSIBLE = {"format": (False, True), "syntax": (False, True), "interface": (False, True), "credit": (0.0, 1.0)}
UNKNOWN_NAMES = {"format": "the format stage", "syntax": "the syntax stage", "interface": "the interface check", "credit": "the comprehension credit"}


class NotRescorable(Exception):
    """A row that cannot be rescored under the reward asked for; the message is the reason."""


@dataclass
class RescoreSummary:
    """The rows with their new rewards (in input order), and what was done."""

    rows: list[Row]
    reward: str
    interface_credit: float = 0.0
    before: list[float] = field(default_factory=list)
    after: list[float] = field(default_factory=list)
    rescored: int = 0
    #: Why rows were left as they were, with how many.
    left: Counter[str] = field(default_factory=Counter)
    #: Lines of the input that are not JSON objects (not written).
    unreadable: list[str] = field(default_factory=list)

    @property
    def pass_rate(self) -> float:
        """The share of rows that passed, of those that say (rescoring never changes it)."""
        said = [row["passed"] for row in self.rows if isinstance(row.get("passed"), bool)]
        return sum(said) / len(said) if said else 0.0

    def columns(self) -> list[str]:
        return ["rows", "rescored", "left as they were", "mean reward before", f"mean reward after ({self.setting})", "pass rate (unchanged)"]

    def cells(self) -> list[str]:
        return [
            str(len(self.rows)), str(self.rescored), str(sum(self.left.values())),
            _mean(self.before), _mean(self.after), f"{100 * self.pass_rate:.1f}%",
        ]

    @property
    def setting(self) -> str:
        return f"{self.reward}, interface credit {self.interface_credit:g}" if self.interface_credit else self.reward

    def reasons(self) -> list[str]:
        """One line per reason a row was left as it was, and per line that could not be read."""
        lines = [f"left as it was ({count} row{'s' * (count != 1)}): {reason}" for reason, count in self.left.most_common()]
        return lines + [f"not written: {problem}" for problem in self.unreadable]


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.4f}" if values else "-"


def rescore_file(source: Path, reward: str, *, interface_credit: float = 0.0) -> RescoreSummary:
    """``rescore_rows`` of an eval run folder's results (or a JSONL file of rows); a line that
    is not a JSON object is left out, named in ``unreadable``. ``JsonlError`` when the file
    cannot be read."""
    path = source / RESULTS if source.is_dir() else source
    if not path.is_file():
        where = "; not a folder that `cvdp-gym eval --out` wrote" if source.is_dir() else ""
        raise JsonlError(f"{path}: no such file{where}")
    unreadable: list[str] = []
    rows: list[Row] = []
    for number, value in iter_json(path, on_error=lambda exc: unreadable.append(str(exc))):
        if isinstance(value, dict):
            rows.append(value)
        else:
            unreadable.append(f"{path}:{number}: not a JSON object")
    summary = rescore_rows(rows, reward, interface_credit=interface_credit)
    summary.unreadable = unreadable
    return summary


def rescore_rows(rows: Iterable[Row], reward: str, *, interface_credit: float = 0.0) -> RescoreSummary:
    """Each row with its reward (and a ``/verify`` answer's ``reward_components``) under
    ``reward``; a row that cannot be rescored is kept as it was and its reason counted."""
    parts_of = make_reward_parts(reward, interface_credit=interface_credit)
    summary = RescoreSummary([], reward, interface_credit)
    for row in rows:
        before = _number(row.get("reward"))
        try:
            parts = _parts(row, parts_of, summary.setting)
        except NotRescorable as exc:
            summary.left[str(exc)] += 1
            new, after = row, before
        else:
            new = {**row, "reward": total(parts)}
            if _is_verify(row):
                new["reward_components"] = parts
            after = new["reward"]
            summary.rescored += 1
        summary.rows.append(new)
        if before is not None:
            summary.before.append(before)
        if after is not None:
            summary.after.append(after)
    return summary


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _is_verify(row: Row) -> bool:
    return "reward_components" in row or "verifier_metadata" in row


def _parts(row: Row, parts_of: RewardPartsFn, setting: str) -> dict[str, float]:
    """The new reward's parts of a row: the same whatever the values it does not store were."""
    if "grade" in row:
        return parts_of(_eval_verdict(row))
    if not _is_verify(row):
        if "id" in row and "sample" in row:
            raise NotRescorable("an eval results row without its stored verdict ('grade'): written by another cvdp-gym version")
        raise NotRescorable("neither an eval results row nor a /verify answer")
    unknown, verdicts = _verify_verdicts(row)
    outcome = {values: tuple(parts_of(verdict).items()) for values, verdict in verdicts.items()}
    if len(set(outcome.values())) == 1:
        return dict(next(iter(outcome.values())))
    read = [
        name for i, name in enumerate(unknown)
        if any(outcome[values] != outcome[(*values[:i], other, *values[i + 1:])] for values in outcome for other in POSSIBLE[name])
    ]
    raise NotRescorable(f"the {setting} reward reads {' and '.join(UNKNOWN_NAMES[name] for name in read)}, which this /verify answer does not store")


def _eval_verdict(row: Row) -> GradeResult:
    try:
        return GradeResult.from_dict(row["grade"])
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise NotRescorable(f"an eval results row whose stored verdict ('grade') cannot be read: {type(exc).__name__}: {exc}") from None


def _verify_verdicts(row: Row) -> tuple[list[str], dict[tuple[Any, ...], GradeResult]]:
    """The values a ``/verify`` answer does not store, and the verdict it stands for with each
    combination of them."""
    wrong = [name for name, kind in VERIFY_REQUIRED.items() if not isinstance(row.get(name), kind)]
    if wrong:
        raise NotRescorable(f"a /verify answer without {', '.join(wrong)}: written by another cvdp-gym version")
    try:
        tests = TestCounts(**row["tests"])
    except TypeError:
        raise NotRescorable("a /verify answer whose 'tests' are not test counts") from None
    known, unknown = _verify_known(row)
    passed = row["passed"]
    verdicts = {}
    for values in itertools.product(*(POSSIBLE[name] for name in unknown)):
        value = {**known, **dict(zip(unknown, values, strict=True))}
        stages = [Stage(name, value[name]) for name in STAGES[:-1]] + [Stage(STAGES[-1], passed)]
        verdicts[values] = GradeResult(
            str(row.get("task_id") or ""), stages, None if passed else row["verdict"], "",
            tests=tests, scoring=value["scoring"], credit=value["credit"],
        )
    return unknown, verdicts


def _verify_known(row: Row) -> tuple[dict[str, Any], list[str]]:
    """What a ``/verify`` answer says of its verdict (a stage None: it did not run), and the
    names of what it does not say."""
    parts = row["reward_components"] if isinstance(row.get("reward_components"), dict) else {}
    scoring = SCORING_BY_CATEGORY.get(str(row.get("category") or ""), HARNESS_SCORING)
    harness = scoring == HARNESS_SCORING
    passed, verdict = row["passed"], row["verdict"]
    known: dict[str, Any] = {"scoring": scoring}
    unknown: list[str] = []
    if _number(parts.get("format")) is not None and _number(parts.get("syntax")) is not None:  # shaped or partial
        known["format"], known["syntax"] = parts["format"] > 0, parts["syntax"] > 0
    elif passed or verdict == FORMAT_ERROR:
        known["format"] = passed
        known["syntax"] = True if passed and harness else None
    else:
        unknown += ["format", "syntax"] if harness else ["format"]
    if harness:
        known["credit"] = None
        if verdict == INTERFACE_ERROR:
            known["interface"] = False
        else:
            unknown.append("interface")
    else:  # a comprehension answer: no syntax or interface stage; its credit, if the parts hold it
        known["syntax"] = known["interface"] = None
        known["credit"] = _number(parts.get("credit"))
        if known["credit"] is None:
            unknown.append("credit")
    return known, unknown
