"""Rollouts: sample answers from the student and score them through the environments.

Everything lives in ``rollouts.rollouts`` (re-exported here, so ``from rtl_trainer.rollouts
import collect_single_turn`` is the short path and the long one keeps working). A package
rather than one ``rtl_trainer/rollouts.py`` so the existing path stays a real module, not a
``sys.modules`` alias.
"""

from rtl_trainer.rollouts.rollouts import (
    GRADING_FAILED,
    LATE,
    EnvPool,
    Group,
    Rollout,
    RolloutTiming,
    Turn,
    collect_multi_turn,
    collect_single_turn,
    run_episode,
)

__all__ = [
    "GRADING_FAILED",
    "LATE",
    "EnvPool",
    "Group",
    "Rollout",
    "RolloutTiming",
    "Turn",
    "collect_multi_turn",
    "collect_single_turn",
    "run_episode",
]
