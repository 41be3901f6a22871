"""Staged grading of answers (one stage sequence: format → syntax → interface → tests → reference →
a plug-in's stages → quality), built from one ``GraderSettings``, and rewards; comprehension
answers scored as the official tool scores them (BLEU/ROUGE-2, an LLM judge). What runs the
stages and keeps their results (executors, the cache) is ``cvdp_gym.execution``."""

from cvdp_gym.grading.grader import Grader
from cvdp_gym.grading.judge import JudgeSettings, LLMJudge
from cvdp_gym.grading.result import FORMAT_ERROR, INTERFACE_ERROR, GradeResult, Stage
from cvdp_gym.grading.rewards import REWARDS, make_reward
from cvdp_gym.grading.settings import GraderSettings

__all__ = [
    "FORMAT_ERROR",
    "INTERFACE_ERROR",
    "REWARDS",
    "GradeResult",
    "Grader",
    "GraderSettings",
    "JudgeSettings",
    "LLMJudge",
    "Stage",
    "make_reward",
]
