"""An infrastructure failure is graded once more with the same answer: a sandbox that
refuses once gives a normal verdict the second time, and the step's counters show it. A
broken harness is not: its verdict is the same on every try (excluded, and cached)."""

from __future__ import annotations

import gymnasium as gym
import pytest

from cvdp_gym.data import Dataset, load_dataset
from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.grading import Grader
from cvdp_gym.harness import HarnessRunner
from rtl_trainer.loop.metrics import infra_metrics, rollout_metrics
from rtl_trainer.rollouts import EnvPool, Group, Rollout, Turn
from tests.support import RefusingSandbox, broken_harness

pytestmark = pytest.mark.sandbox

PROBLEM_ID = "cvdp_gym_gray_converter_0001"
MARKER = "// refuse the sandbox for this answer"


def answer(files: dict[str, str], marker: str = "") -> str:
    return "\n".join(f"```systemverilog\n{text}{marker}\n```" for text in files.values())


def graded(pool: EnvPool, text: str) -> Rollout:
    """A rollout of ``text`` graded as ``collect_single_turn`` grades it."""
    rollout = Rollout(PROBLEM_ID, [Turn([1], [2], [-0.5], text)])
    rollout.reward, rollout.info, rollout.retried = pool.score_with_retry(PROBLEM_ID, text)
    return rollout


@pytest.mark.parametrize(("times", "passes"), [(1, True), (2, False)], ids=["refused-once", "refused-twice"])
def test_an_infra_failure_is_regraded_once(sandbox, times, passes):
    reference = load_dataset("bundled", ids=[PROBLEM_ID]).problems[0].reference
    refusing = RefusingSandbox(sandbox, MARKER, times=times)
    pool = EnvPool(lambda: gym.make("CVDP-SingleShot-v0", ids=[PROBLEM_ID], sandbox=refusing, cache=False), 1)
    try:
        rollout = graded(pool, answer(reference, MARKER))
        plain = graded(pool, answer(reference))
    finally:
        pool.close()
    assert refusing.refused == times  # never a third try
    assert (rollout.retried, plain.retried) == (True, False)
    assert rollout.info["passed"] is passes and rollout.infra_failed is not passes
    assert rollout.excluded is not passes and not plain.excluded
    metrics = infra_metrics([Group(PROBLEM_ID, [rollout, plain])])
    assert metrics == {
        "grade/infra_failed": 0 if passes else 1,
        "grade/infra_frac": 0.0 if passes else 0.5,
        "grade/infra_retried": 1,
    }
    # The failed answer does not drag the step's reward down: only the real verdict counts.
    assert rollout_metrics([Group(PROBLEM_ID, [rollout, plain])])["env/all/pass_rate"] == 1.0


def test_a_broken_harness_is_left_out_without_a_regrade(sandbox, tmp_path):
    broken = broken_harness(load_dataset("bundled", ids=[PROBLEM_ID]).problems[0])
    grader = Grader(HarnessRunner(sandbox), cache=GradeCache(tmp_path / "grades.sqlite"))
    envs: list[gym.Env] = []

    def make_env() -> gym.Env:
        envs.append(gym.make("CVDP-SingleShot-v0", dataset=Dataset([broken]), grader=grader))
        return envs[-1]

    pool = EnvPool(make_env, 1)
    text = answer(broken.reference)
    try:
        rollout = Rollout(broken.id, [Turn([1], [2], [-0.5], text)])
        rollout.reward, rollout.info, rollout.retried = pool.score_with_retry(broken.id, text)
        graded_once = envs[0].unwrapped.last_grade
        _, _, retried_again = pool.score_with_retry(broken.id, text)
        cached = envs[0].unwrapped.last_grade
    finally:
        pool.close()
    # Graded once (a fresh run, no re-grade), left out of its group, not counted as infrastructure.
    assert (rollout.info["failure_class"], rollout.retried, graded_once.cached) == ("harness_error", False, False)
    assert (rollout.excluded, rollout.infra_failed, rollout.info["infra_failure"]) == (True, False, False)
    assert infra_metrics([Group(broken.id, [rollout])]) == {
        "grade/infra_failed": 0, "grade/infra_frac": 0.0, "grade/infra_retried": 0,
    }
    # The same answer again: the cache's verdict, no run and no re-grade.
    assert (retried_again, cached.cached, cached.failure_class) == (False, True, "harness_error")
