"""The mission in miniature, offline: distil a tiny teacher into a weaker tiny student.

1. Build an offline Qwen tokenizer and two tiny models from a config (no download), with a
   compact vocabulary of the tokens the bundled problems and answers use.
2. SFT the teacher (4 layers, width 256) on the bundled reference solutions until it passes
   them.
3. Give the smaller student (2 layers, width 128) a deliberately weak start: SFT on each
   problem's known-wrong ``functional_bug`` candidate three times as often as on the
   reference. It writes plausible but wrong RTL most of the time (a one-line bug: an
   unsigned shift, swapped edge pulses, a wrong ``valid``), and the right design rarely.
   A student that has never seen the right token gives the teacher nothing to work with:
   the reverse KL's gradient vanishes on a saturated softmax.
4. On-policy distillation of the student from the teacher with the environment's reward
   (and, beside it, RL from the same weak start with the reward alone).
5. Measure pass rates with the real simulator before and after, and plot the runs.
6. ``--seeds N``: distillation, RL and SFT on the reference solutions from the same weak
   student, on N seeds each, with the mean and spread of the pass rates and their compute.
7. ``--two-teachers``: one student distilled from two teachers, each SFT'd on half the
   problems, each problem routed to the teacher that knows it.

Every stage writes a run directory; a stage whose outputs exist is not run again, unless
what made them changed (``fingerprint``: its settings, problems, or the models it reads).

Modules: ``settings`` (``DemoSettings``, the base config), ``stages`` (models, SFT,
evaluation and training stages), ``main`` (``run_demo``), ``curriculum``
(``run_curriculum_demo``), ``seeds`` (``run_seeds``) and ``two_teachers``
(``run_two_teachers_demo``); ``fingerprint`` (what a stage's outputs were made from).
"""

from rtl_trainer.demo.curriculum import run_curriculum_demo
from rtl_trainer.demo.main import run_demo
from rtl_trainer.demo.seeds import run_seeds
from rtl_trainer.demo.settings import DemoSettings, base_config
from rtl_trainer.demo.stages import build_models, eval_stage, sft_stage, train_stage
from rtl_trainer.demo.two_teachers import run_two_teachers_demo

__all__ = [
    "DemoSettings", "base_config", "build_models", "eval_stage", "run_curriculum_demo", "run_demo", "run_seeds",
    "run_two_teachers_demo", "sft_stage", "train_stage",
]
