"""A design's quality relative to its reference: capped ratios, one index, one bounded score.

Each metric is the candidate's value over the reference's, synthesised the same way, capped
to ``[1/CAP, CAP]`` (TuRTLe caps at 2x) so one blow-up cannot dominate:

- ASIC terms: ``area`` (cell area), ``delay`` (the worst path's data arrival at the clock) and
  ``power`` (what ``AsicMetrics.power_kind`` says it counts), each where both designs have it;
- FPGA terms: ``luts``, ``ffs`` and ``period`` (1 / fmax, where both have one).

``index`` is the geometric mean of the ratios: 1.0 at the reference's quality, below 1
better (for the ASIC terms, a cube root of the area-delay-power product's ratio).
``score = (1 - log2(index)) / 2``, clipped to [0, 1]: 0.5 at the reference's quality, 1.0 at
half of it everywhere, 0.0 at twice. Warnings the reference does not have (latches,
multiple drivers, loops, undriven nets) take ``WARNING_PENALTY`` of the score each. A ratio
with a zero is 1.0 when both are zero, else the cap in the zero's favour.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from cvdp_gym.quality.metrics import AsicMetrics, FpgaMetrics, Measurement

__all__ = ["CAP", "WARNING_PENALTY", "QualityScore", "capped_ratio", "score_measurements"]

CAP = 2.0
WARNING_PENALTY = 0.25


@dataclass(frozen=True)
class QualityScore:
    """A candidate against its reference: the ratios, their index and the score (None and
    ``failure`` when either design could not be measured)."""

    score: float | None
    index: float | None = None
    ratios: dict[str, float] = field(default_factory=dict)
    extra_warnings: int = 0
    failure: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def capped_ratio(candidate: float, reference: float, cap: float = CAP) -> float:
    """``candidate / reference`` within ``[1/cap, cap]`` (zeros as the module doc says)."""
    if reference <= 0:
        return 1.0 if candidate <= 0 else cap
    if candidate <= 0:
        return 1.0 / cap
    return min(cap, max(1.0 / cap, candidate / reference))


def _terms(metrics: AsicMetrics | FpgaMetrics) -> dict[str, float | None]:
    if isinstance(metrics, AsicMetrics):
        return {"area": metrics.area_um2, "delay": metrics.delay_ns, "power": metrics.power_uw}
    period = 1000.0 / metrics.fmax_mhz if metrics.fmax_mhz else None
    return {"luts": float(metrics.luts), "ffs": float(metrics.ffs), "period": period}


def _warnings(metrics: AsicMetrics | FpgaMetrics) -> int:
    return sum(getattr(metrics, "warnings", {}).values())


def score_measurements(candidate: Measurement, reference: Measurement) -> QualityScore:
    """The candidate's ``QualityScore`` against the reference's measurement on the same flow."""
    if not reference.ok:
        return QualityScore(None, failure=f"the reference was not measured: {reference.failure}")
    if not candidate.ok:
        return QualityScore(None, failure=f"the design was not measured: {candidate.failure}")
    assert candidate.metrics is not None and reference.metrics is not None
    ours, theirs = _terms(candidate.metrics), _terms(reference.metrics)
    ratios = {
        name: round(capped_ratio(value, theirs[name]), 6)
        for name, value in ours.items()
        if value is not None and theirs.get(name) is not None
    }
    if not ratios:
        return QualityScore(None, failure="no metric was measured on both designs")
    index = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
    extra = max(0, _warnings(candidate.metrics) - _warnings(reference.metrics))
    score = min(1.0, max(0.0, (1.0 - math.log2(index)) / 2.0)) * max(0.0, 1.0 - WARNING_PENALTY * extra)
    return QualityScore(round(score, 6), round(index, 6), ratios, extra)
