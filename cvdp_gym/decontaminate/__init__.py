"""Decontamination: which training items are near-copies of evaluation problems.

For every training item (any dataset ``load_dataset`` reads: its ``prompt`` is the
specification, its reference the code), the nearest evaluation problems by ROUGE-L and word
n-gram overlap, separately on the specification and on the reference code, and whether it
is flagged (:mod:`.search`); the report and the filtered training file (:mod:`.report`).
``cvdp-gym decontaminate`` is the command; ``rtl-train`` can refuse a training set with it.
"""

from cvdp_gym.decontaminate.search import (
    OFF,
    PRESETS,
    EvaluationIndex,
    ItemResult,
    Match,
    Thresholds,
    decontaminate,
    evaluation_problems,
    thresholds_for,
)

__all__ = [
    "OFF",
    "PRESETS",
    "EvaluationIndex",
    "ItemResult",
    "Match",
    "Thresholds",
    "decontaminate",
    "evaluation_problems",
    "thresholds_for",
]
