"""``CVDP-Refine-v0``: answer, read the grader's feedback, answer again (no bash)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cvdp_gym.data import Dataset
from cvdp_gym.envs.base import CVDPEnvBase
from cvdp_gym.envs.prompts import single_shot_messages
from cvdp_gym.errors import ArgumentTypeError, ConfigError, UsageError
from cvdp_gym.grading.feedback import (
    DEFAULT_FEEDBACK,
    FEEDBACK_MODES,
    MAX_FEEDBACK_CHARS,
    feedback_text,
)
from cvdp_gym.grading.result import GradeResult

#: How the episode's reward is made from its attempts' rewards.
EPISODE_REWARDS = ("final", "best", "final_minus_cost")


class RefineEnv(CVDPEnvBase):
    """
    ## Description

    A multi-turn text environment over non-agentic CVDP problems, with grader feedback.
    The model answers as in ``CVDP-SingleShot-v0``. Each answer is graded by the staged
    grader; unless it passed, the environment replies with feedback and the model answers
    again, up to ``max_attempts`` answers. No bash: the model sees only what the feedback
    mode shows (:mod:`cvdp_gym.grading.feedback`). An answer identical to an earlier one
    is not graded again (``repeat`` in its attempt record).

    ## Action Space

    The model's whole answer, a ``str`` of up to ``MAX_ACTION_CHARS`` characters, as in
    ``CVDP-SingleShot-v0``.

    ## Observation Space

    Any Unicode string up to ``MAX_OBSERVATION_CHARS`` characters. ``reset``: the user
    prompt, as in single-shot; ``step``: the feedback the model is to read next (``""``
    once the episode is over).

    ## Rewards

    0.0 on every step but the last, which returns the episode's reward (so the return is
    the episode reward), made from the attempts' rewards (each: ``reward`` applied to the
    grade, see :class:`~cvdp_gym.envs.base.CVDPEnvBase`) as ``episode_reward`` says:
    ``final``: the last attempt's reward; ``best``: the best attempt's;
    ``final_minus_cost``: the last attempt's minus ``attempt_cost`` for each answer after
    the first.

    ## Starting State

    The problem named by ``options["problem_id"]``, else a seeded draw (see
    :class:`~cvdp_gym.envs.base.CVDPEnvBase`); no attempts yet.

    ## Episode End

    The episode ends if any one of the following occurs:

    1. Termination: an answer passes (``end_reason`` ``passed``).
    2. Termination: a verdict is not the answer's fault (``excluded``: a toolchain gap, an
       unsupported harness; ``end_reason`` ``excluded``).
    3. Termination: ``max_attempts`` answers were given (``end_reason`` ``max_attempts``).

    ``truncated`` is always False. ``step`` after the end raises ``RuntimeError`` until
    ``reset``.

    ## Info

    | Key | Type | When | Description |
    |-----|------|------|-------------|
    | `messages` | **list[dict[str, str]]** | reset | System and user chat messages, as in single-shot. |
    | `problem` | **dict** | reset, step | id, category, difficulty, agentic, targets, context file names, has_reference, unsupported, source, scoring, benchmark, task, grader, toolchain, defect (a known defect of the benchmark: a failure there is `excluded`). |
    | `attempt` | **int** | step | Answers given so far (this one included). |
    | `passed` | **bool** | step | This attempt passed every harness test. |
    | `failure_class` | **str or None** | step | This attempt's failure class, as in `CVDP-SingleShot-v0`. |
    | `reason` | **str** | step | One line saying why. |
    | `stages` | **dict[str, dict]** | step | This attempt's stages, as in `CVDP-SingleShot-v0`. |
    | `tests` | **dict[str, int]** | step | cocotb test counts `{total, passed, failed}`; VerilogEval: the test bench's samples, matched and mismatched (partial credit 1 − mismatches/samples); RTLLM: one test. |
    | `official` | **dict** | step | The benchmark's own verdict by its own rule over the whole log (VerilogEval v2: its `class`; v1: its `result`; RTLLM: `auto_run` and `open`), which an answer's own printing can sway; `passed` reads only the test bench's lines. Empty for CVDP. |
    | `reference_check` | **dict** | step | `verdict='testbench+reference'`: the check against the problem's reference of an answer its test bench passed (`verdict`: `equivalent`, `different`, `undecided` or `no_reference`; `reason`, `formal`, `seconds`...); empty when none ran. |
    | `quality` | **dict** | step | With `quality` on, a passing answer's design quality against the reference (:mod:`cvdp_gym.grading.quality`): `flow`, `score` (0.5 at the reference's quality, 1.0 at half its area-delay-power, 0.0 at twice; None with `failure` when a design could not be measured), `index`, `ratios`, `extra_warnings`, `candidate` and `reference` measurements; empty when it did not run. |
    | `extraction` | **dict** | step | How the code was found, as in `CVDP-SingleShot-v0`. |
    | `log_tail` | **str** | step | The end of the compiler or simulator output (bounded). |
    | `excluded` | **bool** | step | This verdict is not the answer's fault. |
    | `late` | **bool** | step | Always False here (no grading deadline). |
    | `infra_failure` | **bool** | step | The grading machinery failed on this attempt, not the answer (`infra_error`). |
    | `attempt_reward` | **float** | step | This attempt's reward under `reward`. |
    | `reward` | **float** | step | The reward this step returns. |
    | `attempts` | **list[dict]** | step | Every attempt's grade so far, `{attempt, passed, failure_class, reason, reward, tests, failures, repeat}` (`repeat`: the same answer text as an earlier attempt, graded once). |
    | `feedback` | **str** | step | The feedback on this attempt (`""` when the episode ended). |
    | `tool_messages` | **list[dict[str, str]]** | step | The messages to append after the assistant's answer: one `{"role": "user", "content": feedback}`, or none once the episode ended (the key a trainer's multi-turn loop already reads for agentic tool results). |
    | `end_reason` | **str** | last step | `passed`, `max_attempts` or `excluded`. |
    | `best_attempt` | **int** | last step | Number of the attempt with the highest reward. |

    ``env.unwrapped.last_grade`` holds the last attempt's full ``GradeResult``.

    ## Arguments

    ```python
    >>> import gymnasium as gym
    >>> import cvdp_gym  # registers the environments
    >>> env = gym.make("CVDP-Refine-v0", max_attempts=2, cache=False)
    >>> env
    <OrderEnforcing<RefineEnv<CVDP-Refine-v0>>>
    >>> observation, info = env.reset(seed=0)
    >>> observation, reward, terminated, truncated, info = env.step("I would use a state machine.")
    >>> print(observation)
    No code could be taken from the answer: no code found for rtl/traffic_light.sv. Put each file in a fenced code block.
    Fix the design and answer again with the complete corrected file(s).
    >>> reward, terminated, info["attempt"], info["failure_class"]
    (0.0, False, 1, 'format_error')
    >>> observation, reward, terminated, truncated, info = env.step("I would use a state machine.")
    >>> reward, terminated, truncated, info["end_reason"], info["attempts"][-1]["repeat"]
    (0.0, True, False, 'max_attempts', True)
    >>> env.close()

    ```

    Its own arguments; it also takes every argument of
    :class:`~cvdp_gym.envs.base.CVDPEnvBase` (dataset, filters, sandbox, toolchain,
    reward, timeouts, cache, lint, interface_check, grader, executor, render_mode).

    | Parameter | Type | Default | Description |
    |-----------|------|---------|-------------|
    | `max_attempts` | **int** | `3` | Answers per episode, at least 1. |
    | `feedback` | **str** | `'interface'` | `compile`, `interface` or `tests`, see :mod:`cvdp_gym.grading.feedback`; `tests` shows the hidden tests' names and assertion messages, so an evaluation with it is not comparable to the official one-shot benchmark. |
    | `episode_reward` | **str** | `'final'` | `final`, `best` or `final_minus_cost` (see Rewards). |
    | `attempt_cost` | **float** | `0.1` | What `final_minus_cost` takes off for each answer after the first. |
    | `max_feedback_chars` | **int** | `3000` | Longest feedback text, in characters. |

    ## Vectorized environment

    As for ``CVDP-SingleShot-v0``: ``gym.make_vec("CVDP-Refine-v0", num_envs=N,
    vectorization_mode="async")``. A
    sub-environment whose episode ended is reset on the next ``step`` (Gymnasium's
    next-step autoreset), which ignores its action.

    ## Version History

    * v0: Initial version release.
    * v0 (issue 35): the `verdict` argument (`'testbench+reference'`) and the `reference_check` info key; with the default verdict nothing else changes.
    """

    agentic = False

    def __init__(
        self,
        dataset: str | Path | Dataset | None = None,
        *,
        max_attempts: int = 3,
        feedback: str = DEFAULT_FEEDBACK,
        episode_reward: str = "final",
        attempt_cost: float = 0.1,
        max_feedback_chars: int = MAX_FEEDBACK_CHARS,
        **kwargs: Any,
    ) -> None:
        if max_attempts < 1:
            raise ConfigError("max_attempts must be at least 1")
        if feedback not in FEEDBACK_MODES:
            raise ConfigError(f"unknown feedback {feedback!r}; expected one of {FEEDBACK_MODES}")
        if episode_reward not in EPISODE_REWARDS:
            raise ConfigError(f"unknown episode_reward {episode_reward!r}; expected one of {EPISODE_REWARDS}")
        super().__init__(dataset, **kwargs)
        self.max_attempts = max_attempts
        self.feedback = feedback
        self.episode_reward = episode_reward
        self.attempt_cost = attempt_cost
        self.max_feedback_chars = max_feedback_chars
        self._done = True
        self._attempts: list[dict[str, Any]] = []
        self._graded: dict[str, GradeResult] = {}
        self._last_observation = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.problem = self._choose(options)
        messages = single_shot_messages(self.problem)
        self._done = False
        self._attempts = []
        self._graded = {}
        self._last_observation = messages[-1]["content"]
        return self._last_observation, {"messages": messages, "problem": self.problem.metadata()}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.problem is None or self._done:
            raise UsageError("call reset() before step(): the episode is over or not started")
        if not isinstance(action, str):
            raise ArgumentTypeError(f"the action must be the answer text (str), got {type(action).__name__}")
        repeat = action in self._graded
        result = self._graded.get(action) or self.grader.grade_response(self.problem, action)
        self._graded[action] = result
        attempt_reward = self._reward(result)
        self._attempts.append({
            "attempt": len(self._attempts) + 1,
            "passed": result.passed,
            "failure_class": result.failure_class,
            "reason": result.reason,
            "reward": attempt_reward,
            "tests": {"total": result.tests.total, "passed": result.tests.passed, "failed": result.tests.failed},
            "failures": list(result.failures),
            "repeat": repeat,
        })
        end_reason = "passed" if result.passed else "excluded" if result.excluded else None
        if end_reason is None and len(self._attempts) >= self.max_attempts:
            end_reason = "max_attempts"
        self._done = end_reason is not None
        reward = self._episode_reward() if self._done else 0.0
        feedback = "" if self._done else feedback_text(result, self.problem, self.feedback, max_chars=self.max_feedback_chars)
        info = self._grade_info(result, reward)
        info.update(
            attempt=len(self._attempts),
            attempt_reward=attempt_reward,
            attempts=[dict(a) for a in self._attempts],
            feedback=feedback,
            tool_messages=[{"role": "user", "content": feedback}] if feedback else [],
        )
        if self._done:
            info["end_reason"] = end_reason
            info["best_attempt"] = max(self._attempts, key=lambda a: a["reward"])["attempt"]
        self._last_observation = feedback
        return feedback, reward, self._done, False, info

    def _episode_reward(self) -> float:
        rewards = [a["reward"] for a in self._attempts]
        if self.episode_reward == "best":
            return max(rewards)
        if self.episode_reward == "final_minus_cost":
            return rewards[-1] - self.attempt_cost * (len(rewards) - 1)
        return rewards[-1]

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._last_observation
        return None
