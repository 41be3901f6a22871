"""Infrastructure failures: a sandbox that will not start, or is killed from outside in the middle
of a run, grades ``infra_error``, which the
verdict and the environments' ``info`` flag as ``infra_failure`` and the cache never keeps.
A broken harness (``harness_error``) is the problem's defect, not this try's: ``excluded``,
kept by the cache like any verdict."""

from __future__ import annotations

import gymnasium as gym
import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.grading import Grader, GradeResult
from cvdp_gym.harness import HarnessRunner
from tests.support import DyingSandbox, RefusingSandbox, broken_harness

pytestmark = pytest.mark.sandbox

PROBLEM_ID = "cvdp_gym_gray_converter_0001"
MARKER = "// refuse the sandbox for this answer"


@pytest.fixture(scope="module")
def problem():
    return load_dataset("bundled", ids=[PROBLEM_ID]).problems[0]


def marked(problem) -> dict[str, str]:
    """The reference, with the marker the refusing sandbox looks for: it would pass."""
    return {path: text + MARKER + "\n" for path, text in problem.reference.items()}


def fenced(files: dict[str, str]) -> str:
    return "\n".join(f"File `{path}`:\n```systemverilog\n{text}```\n" for path, text in files.items())


def test_a_sandbox_that_will_not_start_is_an_infra_failure_never_cached(sandbox, problem, tmp_path):
    refusing = RefusingSandbox(sandbox, MARKER, times=1)
    grader = Grader(HarnessRunner(refusing), cache=GradeCache(tmp_path / "grades.sqlite"))
    first = grader.grade_response(problem, fenced(marked(problem)))
    assert (first.failure_class, first.infra_failure, first.excluded) == ("infra_error", True, False)
    assert "sandbox did not start" in first.reason and first.stage("format").passed
    assert GradeResult.from_dict(first.to_dict()).infra_failure and first.to_dict()["infra_failure"] is True
    # Not cached: the same answer is really graded again, and the machine now works.
    second = grader.grade_response(problem, fenced(marked(problem)))
    assert (second.passed, second.cached, second.infra_failure, refusing.refused) == (True, False, False, 1)
    assert grader.grade_response(problem, fenced(marked(problem))).cached  # a real verdict is kept


def test_a_sandbox_killed_in_the_middle_of_a_run_is_an_infra_failure_never_cached(sandbox, problem, tmp_path):
    """bubblewrap killed from outside (SIGKILL, as an OOM killer or an operator would) is the
    machine's failure; a command that dies by a signal inside the sandbox is the run's own."""
    dying = DyingSandbox(sandbox, MARKER, times=1)
    grader = Grader(HarnessRunner(dying), cache=GradeCache(tmp_path / "grades.sqlite"))
    killed = grader.grade_response(problem, fenced(marked(problem)))
    assert (killed.failure_class, killed.infra_failure, dying.refused) == ("infra_error", True, 1), killed.reason
    assert "killed by signal 9 in the middle of the run" in killed.reason and killed.stage("format").passed
    again = grader.grade_response(problem, fenced(marked(problem)))
    assert (again.passed, again.cached, again.infra_failure) == (True, False, False)
    inside = sandbox.run(["sh", "-c", "kill -9 $$"], scratch=tmp_path)
    assert (inside.returncode, inside.timed_out) == (137, False)


def test_env_info_says_infra_failure(sandbox, problem):
    env = gym.make(
        "CVDP-SingleShot-v0", ids=[PROBLEM_ID], sandbox=RefusingSandbox(sandbox, MARKER), cache=False
    )
    try:
        env.reset(options={"problem_id": PROBLEM_ID})
        _, _, _, _, refused = env.step(fenced(marked(problem)))
        env.reset(options={"problem_id": PROBLEM_ID})
        _, _, _, _, graded = env.step(fenced(problem.reference))
    finally:
        env.close()
    assert (refused["failure_class"], refused["infra_failure"], refused["passed"]) == ("infra_error", True, False)
    assert (graded["infra_failure"], graded["passed"]) == (False, True)


def test_a_broken_harness_is_excluded_and_cached_not_an_infra_failure(sandbox, problem, tmp_path):
    broken = broken_harness(problem)
    grader = Grader(HarnessRunner(sandbox), cache=GradeCache(tmp_path / "grades.sqlite"))
    first = grader.grade_response(broken, fenced(problem.reference))
    assert (first.failure_class, first.excluded, first.infra_failure, first.cached) == ("harness_error", True, False, False)
    assert "not_a_module_anywhere" in first.reason and first.seed is not None  # the harness really ran
    # The same answer again: the cache's verdict, the harness not run a second time.
    second = grader.grade_response(broken, fenced(problem.reference))
    assert (second.failure_class, second.excluded, second.cached) == ("harness_error", True, True)
    assert len(grader.cache) == 1


def test_a_compile_check_killed_by_a_cancelled_job_is_no_verdict_on_the_answer(sandbox, problem):
    """A job cancelled while its compile-only check runs (a server shutting down): the killed
    compiler says nothing of the answer, so it is a ``timeout`` (never cached), not a build error."""
    from cvdp_gym.grading.stages import run_stages
    from cvdp_gym.sandbox.cancel import CancelToken, cancellable

    token = CancelToken()
    token.cancel()
    with cancellable(token):
        result = run_stages(HarnessRunner(sandbox), problem, dict(problem.reference), lint=True, interface=True)
    assert result.failure_class == "timeout", (result.failure_class, result.reason)
    assert "did not finish" in result.reason
