"""One parity run: our verdicts and the official runner's on the same answers, side by side.

Contract: ``ParityRow`` pairs one answer's verdict here (the harness run by our runner, as
``cvdp-gym check`` runs it: no lint or interface stage, which the official runner does not
have) with the official runner's (``official.OfficialVerdict``). ``agreement(rows)``
counts, per category, answers both judged with the same pass/fail, those they disagree
on, and those left out of the comparison because the official runner failed for a reason
of the machine (or gave no result), or because ours cannot run the problem
(``unsupported``). ``summary_json`` is what ``cvdp-gym parity --json`` writes.

For the other benchmarks, ``BenchmarkRow`` pairs our flow's ``official`` reading
(:mod:`cvdp_gym.harness.flows`: the benchmark's own rule over the whole log) with the
benchmark's own script's (``benchmarks.BenchmarkVerdict.reading``): VerilogEval v2's class,
v1's result string, RTLLM's compiled and ``auto_run`` pass. It agrees when every key of
the reading is equal (each official flow's ``reading_keys``); ``pass_agrees`` compares pass/fail only, and
``verdict_differs`` marks where our trusted verdict (``ours.passed``: the test bench's own
lines) differs from the official pass, which only an answer that prints the pass words
itself should cause. ``benchmarks.rows.benchmark_summary_json`` adds both counts to ``summary_json``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cvdp_gym.harness.randomness import harness_randomness
from cvdp_gym.harness.results import PASSED as OUR_PASSED
from cvdp_gym.harness.results import UNSUPPORTED, HarnessResult
from cvdp_gym.parity.answers import Answer, official_id
from cvdp_gym.parity.official import FAILED, MACHINE, MISSING, PASSED, OfficialVerdict

__all__ = [
    "AGREE",
    "DISAGREE",
    "LEFT_OUT",
    "ParityRow",
    "agreement",
    "summary_json",
]

AGREE, DISAGREE, LEFT_OUT = "agree", "disagree", "left out"


@dataclass
class ParityRow:
    answer: Answer
    ours: HarnessResult
    official: OfficialVerdict

    @property
    def status(self) -> str:
        if self.official.outcome in (MACHINE, MISSING) or self.ours.failure_class == UNSUPPORTED:
            return LEFT_OUT
        return AGREE if (self.ours.verdict == OUR_PASSED) == (self.official.outcome == PASSED) else DISAGREE

    @property
    def why_left_out(self) -> str:
        if self.ours.failure_class == UNSUPPORTED:
            return f"ours: {self.ours.reason}"
        return f"official runner ({self.official.outcome}): {self.official.reason}"

    @property
    def randomised(self) -> list[str]:
        return list(harness_randomness(self.answer.problem.harness))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.answer.problem.id,
            "name": self.answer.name,
            "official_id": official_id(self.answer),
            "category": self.answer.problem.category,
            "status": self.status,
            "ours": self.ours.verdict,
            "ours_reason": self.ours.reason,
            "ours_seed": self.ours.seed,
            "ours_s": round(self.ours.wall_s, 3),
            "official": self.official.outcome,
            "official_reason": self.official.reason,
            "official_logs": self.official.logs,
            "official_s": round(self.official.seconds, 3),
            "randomised": self.randomised,
        }


def agreement(rows: Iterable[ParityRow]) -> dict[str, dict[str, int]]:
    """Per category (and ``all``): answers, agree, disagree, left out."""
    table: dict[str, dict[str, int]] = {}
    for row in rows:
        for key in (row.answer.problem.category, "all"):
            entry = table.setdefault(key, {"answers": 0, AGREE: 0, DISAGREE: 0, LEFT_OUT: 0})
            entry["answers"] += 1
            entry[row.status] += 1
    ordered = sorted(k for k in table if k != "all")
    return {k: table[k] for k in [*ordered, "all"] if k in table}


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def summary_json(rows: list[ParityRow], meta: dict[str, Any]) -> dict[str, Any]:
    compared = [r for r in rows if r.status != LEFT_OUT]
    return {
        **meta,
        "agreement": agreement(rows),
        "median_s": {
            "ours": _median([r.ours.wall_s for r in compared]),
            "official": _median([r.official.seconds for r in compared if r.official.outcome in (PASSED, FAILED)]),
        },
        "rows": [r.to_json() for r in rows],
    }
