"""One answer of a benchmark's parity run: our flow's reading of it beside the benchmark's own
script's, compared key by key as its official flow says (``reading_keys``, ``reading_passed``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cvdp_gym.harness.results import UNSUPPORTED
from cvdp_gym.parity.benchmarks.official_flows import OFFICIAL_FLOWS
from cvdp_gym.parity.compare import AGREE, DISAGREE, LEFT_OUT, ParityRow, summary_json
from cvdp_gym.parity.official import MACHINE, MISSING

__all__ = ["BenchmarkRow", "benchmark_summary_json"]


@dataclass
class BenchmarkRow(ParityRow):
    """One answer to a benchmark problem: our flow's official reading vs the
    benchmark's own script's (``official`` is a ``benchmarks.BenchmarkVerdict``)."""

    @property
    def keys(self) -> tuple[str, ...]:
        return OFFICIAL_FLOWS[self.answer.problem.flow or ""].reading_keys

    @property
    def ours_reading(self) -> dict[str, Any]:
        return {k: self.ours.official[k] for k in self.keys if k in self.ours.official}

    @property
    def theirs_reading(self) -> dict[str, Any]:
        return dict(getattr(self.official, "reading", {}) or {})

    @property
    def status(self) -> str:
        if self.official.outcome in (MACHINE, MISSING) or self.ours.failure_class == UNSUPPORTED:
            return LEFT_OUT
        if len(self.ours_reading) != len(self.keys):
            return LEFT_OUT
        return AGREE if self.ours_reading == self.theirs_reading else DISAGREE

    @property
    def why_left_out(self) -> str:
        if self.ours.failure_class == UNSUPPORTED:
            return f"ours: {self.ours.reason}"
        if self.official.outcome in (MACHINE, MISSING):
            return f"the benchmark's scripts ({self.official.outcome}): {self.official.reason}"
        return f"ours: our flow gave no official reading ({self.ours.verdict}: {self.ours.reason[:200]})"

    def _passes(self, reading: dict[str, Any]) -> bool:
        return OFFICIAL_FLOWS[self.answer.problem.flow or ""].reading_passed(reading)

    @property
    def pass_agrees(self) -> bool | None:
        """Pass/fail of the two official readings agree (None when left out)."""
        if self.status == LEFT_OUT:
            return None
        return self._passes(self.ours_reading) == self._passes(self.theirs_reading)

    @property
    def verdict_differs(self) -> bool | None:
        """Our trusted verdict differs from the official pass (None when left out)."""
        if self.status == LEFT_OUT:
            return None
        return self.ours.passed != self._passes(self.theirs_reading)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.answer.problem.id,
            "name": self.answer.name,
            "official_id": self.official.id,
            "category": self.answer.problem.category,
            "status": self.status,
            "ours": self.ours_reading,
            "official": self.theirs_reading,
            "pass_agrees": self.pass_agrees,
            "ours_verdict": self.ours.verdict,
            "ours_reason": self.ours.reason,
            "verdict_differs": self.verdict_differs,
            "ours_s": round(self.ours.wall_s, 3),
            "official_outcome": self.official.outcome,
            "official_reason": self.official.reason,
            "official_logs": self.official.logs,
            "official_s": round(self.official.seconds, 3),
            "defect": self.answer.problem.defect,
        }


def benchmark_summary_json(rows: list[BenchmarkRow], meta: dict[str, Any]) -> dict[str, Any]:
    """``summary_json`` plus, per category, pass/fail agreement and trusted-verdict differences."""
    summary = summary_json(list(rows), meta)
    table: dict[str, dict[str, int]] = {}
    for row in rows:
        if row.status == LEFT_OUT:
            continue
        for key in (row.answer.problem.category, "all"):
            entry = table.setdefault(key, {"compared": 0, "pass_agree": 0, "verdict_differs": 0})
            entry["compared"] += 1
            entry["pass_agree"] += int(bool(row.pass_agrees))
            entry["verdict_differs"] += int(bool(row.verdict_differs))
    ordered = sorted(k for k in table if k != "all")
    summary["pass_fail"] = {k: table[k] for k in [*ordered, "all"] if k in table}
    return summary
