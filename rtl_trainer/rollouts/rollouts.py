"""Rollouts: sample answers from the student and score them through the environments.

Groups of ``group_size`` samples share one problem. Sampling requests for every group are
submitted at once; as each group's samples arrive they are graded on a pool of worker
threads (each with its own environment instance) while the backend keeps sampling the next
groups, so simulation time overlaps sampling time. The trainer only uses the environments'
public Gymnasium API and their documented ``info`` keys.

Infrastructure failures (``info["infra_failure"]``: the grading machinery failed, not the
answer) are re-graded once with the same answer (never resampled); one that fails again
is ``Rollout.infra_failed`` and left out of the group (``excluded``). A late verdict is
not re-graded: ``late_answers`` decides what it becomes.

``on_group`` hands each group over as soon as all of its answers are settled (sampled and
graded, or failed), in the order groups finish, so a trainer can start on them while the
others are still grading (streaming minibatches); ``Group.index`` says where each belongs.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from tinker import types

from rtl_trainer.backends.base import SamplingClient


@dataclass
class Turn:
    """One model call: the prompt it saw and what it sampled (with behaviour log-probs)."""

    prompt_tokens: list[int]
    completion_tokens: list[int]
    completion_logprobs: list[float]
    text: str
    messages: list[dict[str, Any]] = field(default_factory=list)  # chat messages before this turn
    tools: list[dict[str, Any]] | None = None  # tool schemas the prompt was rendered with


@dataclass
class Rollout:
    problem_id: str
    turns: list[Turn]
    reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    #: Graded a second time after an infrastructure failure (``info`` is the second verdict).
    retried: bool = False

    @property
    def infra_failed(self) -> bool:
        """Grading failed for reasons not the answer's (the verdict's ``infra_failure``, even
        after a retry, or grading raised); late verdicts are ``late_answers``'s business."""
        if self.error is not None:
            return self.error.startswith(GRADING_FAILED)
        return bool(self.info.get("infra_failure")) and not self.info.get("late")

    @property
    def excluded(self) -> bool:
        """Leave out of training: an error, an infrastructure failure, or a verdict that is
        not the model's fault."""
        return self.error is not None or self.infra_failed or bool(self.info.get("excluded"))

    @property
    def num_tokens(self) -> int:
        return sum(len(t.completion_tokens) for t in self.turns)

    def summary(self) -> dict[str, Any]:
        """What ``rollouts/step_N.jsonl`` keeps for inspection."""
        return {
            "problem_id": self.problem_id,
            "reward": self.reward,
            "failure_class": self.info.get("failure_class"),
            "reason": self.info.get("reason"),
            "passed": self.info.get("passed"),
            "error": self.error,
            "infra_failed": self.infra_failed,
            "retried": self.retried,
            "turns": [t.text for t in self.turns],
            "tokens": self.num_tokens,
        }


@dataclass
class Group:
    problem_id: str
    rollouts: list[Rollout]
    #: Its place among the groups of one collection (the order of its ``problem_ids``).
    index: int = 0

    @property
    def rewards(self) -> list[float]:
        return [r.reward for r in self.rollouts]


class EnvPool:
    """Environment instances handed to grading threads one at a time."""

    def __init__(self, make_env: Callable[[], gym.Env], size: int) -> None:
        self._envs: queue.Queue[gym.Env] = queue.Queue()
        self._all = []
        for _ in range(max(1, size)):
            env = make_env()
            self._all.append(env)
            self._envs.put(env)

    def score(self, problem_id: str, text: str, deadline: float | None = None) -> tuple[float, dict[str, Any]]:
        """Reset on the problem, answer it, and return the reward and final info.

        ``deadline`` (a ``time.time()``): the env's ``grading_deadline`` option.
        """
        env = self._envs.get()
        try:
            options: dict[str, Any] = {"problem_id": problem_id}
            if deadline is not None:
                options["grading_deadline"] = deadline
            env.reset(options=options)
            _, reward, _, _, info = env.step(text)
            return float(reward), info
        finally:
            self._envs.put(env)

    def score_with_retry(
        self, problem_id: str, text: str, deadline: float | None = None
    ) -> tuple[float, dict[str, Any], bool]:
        """``score``, and once more with the same answer when the first verdict is an
        infrastructure failure (``info["infra_failure"]``, not ``late``) or grading raised.
        Returns the reward, the info of the last try and whether it was retried; a second
        exception propagates."""
        try:
            reward, info = self.score(problem_id, text, deadline)
        except Exception:  # whatever broke, the answer gets a second grading
            return (*self.score(problem_id, text, deadline), True)
        if info.get("infra_failure") and not info.get("late"):
            return (*self.score(problem_id, text, deadline), True)
        return reward, info, False

    def messages(self, problem_id: str) -> list[dict[str, Any]]:
        env = self._envs.get()
        try:
            _, info = env.reset(options={"problem_id": problem_id})
            return info["messages"]
        finally:
            self._envs.put(env)

    def close(self) -> None:
        for env in self._all:
            env.close()


@dataclass
class RolloutTiming:
    """When a collection started, its last sample arrived and its last verdict arrived
    (``time.monotonic()``), and the grading work summed over threads."""

    started_at: float
    sampled_at: float = 0.0
    graded_at: float = 0.0
    grade_s: float = 0.0

    @property
    def sample_s(self) -> float:
        """Until the last sample arrived."""
        return self.sampled_at - self.started_at

    def grade_wait_after(self, blocked_from: float) -> float:
        """Time a consumer that blocked from ``blocked_from`` spent waiting on grading
        alone (after every sample had arrived)."""
        return max(0.0, self.graded_at - max(self.sampled_at, blocked_from))


#: Why a rollout left out for being graded after the deadline has no reward.
LATE = "late: not graded by the step's grading deadline"
#: How the error of a rollout whose grading raised (or never answered) starts.
GRADING_FAILED = "grading failed"
#: Called with each sampled turn, and the problem it answers, as soon as it exists (e.g. to
#: start teacher scoring, by that problem's teacher, while grading runs).
OnTurn = Callable[[str, Turn], None]
#: Called (from whichever thread settled its last answer) with each group once every one of
#: its answers is settled; each group exactly once.
OnGroup = Callable[[Group], None]


class _Settler:
    """Records each answer's verdict exactly once (from its grading thread, or as a failure
    from the collecting thread when waiting for it timed out) and calls ``on_group`` when
    the last answer of a group whose sampling is over settles."""

    def __init__(self, on_group: OnGroup | None, late_answers: str) -> None:
        self._on_group = on_group
        self._late_answers = late_answers
        self._lock = threading.Lock()
        self._open: dict[int, int] = {}  # id(group) -> answers unsettled, +1 while sampling
        self._settled: set[int] = set()

    def sampling(self, group: Group) -> None:
        with self._lock:
            self._open[id(group)] = 1

    def expect(self, group: Group) -> None:
        with self._lock:
            self._open[id(group)] += 1

    def sampled(self, group: Group) -> None:
        self._release(group)

    def settle(
        self, group: Group, rollout: Rollout, verdict: tuple[float, dict[str, Any], bool] | None, error: str | None
    ) -> None:
        with self._lock:
            if id(rollout) in self._settled:
                return
            self._settled.add(id(rollout))
            if verdict is None:
                rollout.error = error
            else:
                rollout.reward, rollout.info, rollout.retried = verdict
                if rollout.info.get("late") and self._late_answers == "drop":
                    rollout.error = LATE
        self._release(group)

    def _release(self, group: Group) -> None:
        with self._lock:
            self._open[id(group)] -= 1
            done = self._open[id(group)] == 0
        if done and self._on_group is not None:
            self._on_group(group)


def _truncate(tokens: list[int], limit: int | None) -> list[int]:
    return tokens[-limit:] if limit and len(tokens) > limit else tokens


def collect_single_turn(
    problem_ids: list[str],
    *,
    sampler: SamplingClient,
    renderer: Any,
    pool: EnvPool,
    group_size: int,
    sampling_params: types.SamplingParams,
    grade_workers: int = 2,
    max_prompt_tokens: int | None = None,
    timeout_s: float = 600.0,
    on_turn: OnTurn | None = None,
    grade_deadline_s: float | None = None,
    late_answers: str = "drop",
    on_group: OnGroup | None = None,
) -> tuple[list[Group], RolloutTiming]:
    """Sample ``group_size`` answers per problem and grade them, overlapping the two.

    ``grade_deadline_s``: each answer must be graded within that many seconds of arriving
    (so the step waits at most that long after its last sample); a late one is scored
    ``timeout`` by the env (``info["late"]``) and, with ``late_answers="drop"``, left out.
    An infrastructure failure is graded once more (``EnvPool.score_with_retry``).
    ``on_group``: see ``OnGroup``; the returned groups keep the order of ``problem_ids``.
    """
    timing = RolloutTiming(started_at=time.monotonic())
    lock = threading.Lock()
    settler = _Settler(on_group, late_answers)
    requests = []
    for pid in problem_ids:
        messages = pool.messages(pid)
        prompt = _truncate(renderer.build_generation_prompt(messages), max_prompt_tokens)
        future = sampler.sample(types.ModelInput.from_ints(prompt), group_size, sampling_params)
        requests.append((pid, messages, prompt, future))

    groups: list[Group] = []
    grading: list[tuple[Group, Rollout, Future[None]]] = []

    def grade(group: Group, rollout: Rollout, text: str, deadline: float | None) -> None:
        t0 = time.monotonic()
        verdict, error = None, None
        try:
            verdict = pool.score_with_retry(rollout.problem_id, text, deadline)
        except Exception as exc:  # a second failure: the answer is left out, the run goes on
            error = f"{GRADING_FAILED}: {type(exc).__name__}: {exc}"
        finally:
            with lock:
                timing.grade_s += time.monotonic() - t0
        settler.settle(group, rollout, verdict, error)

    with ThreadPoolExecutor(max_workers=max(1, grade_workers)) as executor:
        for index, (pid, messages, prompt, future) in enumerate(requests):
            group = Group(pid, [], index)
            groups.append(group)
            settler.sampling(group)
            try:
                response = future.result(timeout=timeout_s)
            except (TimeoutError, Exception) as exc:  # a failed request must not end the run
                group.rollouts.append(Rollout(pid, [], error=f"sampling failed: {type(exc).__name__}: {exc}"))
                settler.sampled(group)
                continue
            for sequence in response.sequences:
                tokens = list(sequence.tokens)
                text, _ = renderer.parse_response(tokens)
                turn = Turn(prompt, tokens, list(sequence.logprobs or []), text, messages)
                rollout = Rollout(pid, [turn])
                group.rollouts.append(rollout)
                settler.expect(group)
                deadline = None if grade_deadline_s is None else time.time() + grade_deadline_s
                grading.append((group, rollout, executor.submit(grade, group, rollout, text, deadline)))
                if on_turn is not None:
                    on_turn(pid, turn)
            settler.sampled(group)  # after on_turn: a group handed over has every turn announced
        timing.sampled_at = time.monotonic()
        for group, rollout, future in grading:
            try:
                future.result(timeout=timeout_s)
            except (TimeoutError, Exception) as exc:  # no verdict in time: failed (a late one is ignored)
                settler.settle(group, rollout, None, f"{GRADING_FAILED}: {type(exc).__name__}: {exc}")
    timing.graded_at = time.monotonic()
    return groups, timing


def run_episode(
    problem_id: str,
    env: gym.Env,
    *,
    sampler: SamplingClient,
    renderer: Any,
    sampling_params: types.SamplingParams,
    max_prompt_tokens: int | None = None,
    timeout_s: float = 600.0,
    on_turn: OnTurn | None = None,
) -> Rollout:
    """One multi-turn (agentic) episode: sample, act, observe, until the env ends it."""
    _, info = env.reset(options={"problem_id": problem_id})
    messages = list(info["messages"])
    tools = info.get("tools")
    rollout = Rollout(problem_id, [])
    deadline = time.monotonic() + timeout_s
    while True:
        prompt = _truncate(renderer.build_generation_prompt(messages, tools=tools), max_prompt_tokens)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            rollout.error = f"episode exceeded the {timeout_s:.0f} s rollout timeout"
            return rollout
        response = sampler.sample(types.ModelInput.from_ints(prompt), 1, sampling_params).result(timeout=remaining)
        sequence = response.sequences[0]
        tokens = list(sequence.tokens)
        text, _ = renderer.parse_response(tokens)
        turn = Turn(prompt, tokens, list(sequence.logprobs or []), text, list(messages), tools)
        rollout.turns.append(turn)
        if on_turn is not None:
            on_turn(problem_id, turn)
        _, reward, terminated, truncated, info = env.step(text)
        messages.append({"role": "assistant", "content": text})
        messages.extend(info.get("tool_messages", []))
        if terminated or truncated:
            rollout.reward, rollout.info = float(reward), info
            return rollout


def collect_multi_turn(
    problem_ids: list[str],
    *,
    make_env: Callable[[], gym.Env],
    sampler: SamplingClient,
    renderer: Any,
    group_size: int,
    sampling_params: types.SamplingParams,
    workers: int = 2,
    max_prompt_tokens: int | None = None,
    timeout_s: float = 600.0,
    on_turn: OnTurn | None = None,
    on_group: OnGroup | None = None,
) -> tuple[list[Group], RolloutTiming]:
    """Agentic episodes, ``group_size`` per problem, run on ``workers`` threads; a group is
    complete (and handed to ``on_group``) when its last episode ends."""
    start = time.monotonic()

    def episode(pid: str, index: int) -> Rollout:
        # One sample per request: with the step's seed as it is, every episode of a group
        # would draw the same first answer (no advantage to learn from).
        params = sampling_params
        if params.seed is not None:
            params = params.model_copy(update={"seed": params.seed * 1009 + index})
        env = make_env()
        try:
            return run_episode(
                pid, env, sampler=sampler, renderer=renderer, sampling_params=params,
                max_prompt_tokens=max_prompt_tokens, timeout_s=timeout_s, on_turn=on_turn,
            )
        except Exception as exc:  # one broken episode must not end the run
            return Rollout(pid, [], error=f"episode failed: {type(exc).__name__}: {exc}")
        finally:
            env.close()

    groups = [Group(pid, [], index) for index, pid in enumerate(problem_ids)]
    lock = threading.Lock()
    unfinished = {id(group): group_size for group in groups}

    def finished(group: Group, futures: list[Future[Rollout]]) -> None:
        with lock:
            unfinished[id(group)] -= 1
            if unfinished[id(group)]:
                return
        group.rollouts = [f.result() for f in futures]  # episode() never raises
        if on_group is not None:
            on_group(group)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as executor:
        for group in groups:
            futures = [executor.submit(episode, group.problem_id, i) for i in range(group_size)]
            for future in futures:
                future.add_done_callback(lambda _, group=group, futures=futures: finished(group, futures))
    end = time.monotonic()
    return groups, RolloutTiming(started_at=start, sampled_at=end, graded_at=end)
