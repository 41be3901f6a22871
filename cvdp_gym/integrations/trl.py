"""CVDP for TRL's ``GRPOTrainer`` (TRL 1.16): reward functions, prompts, an agentic tool env.

Single-shot::

    from cvdp_gym.integrations.trl import grpo_dataset, reward_function
    trainer = GRPOTrainer(model, reward_funcs=reward_function("shaped"),
                          train_dataset=grpo_dataset("bundled"), args=GRPOConfig(...))

Agentic (TRL's ``environment_factory``: the env's ``execute_bash`` and ``finish`` methods
are the tools; TRL runs the tool-calling loop)::

    trainer = GRPOTrainer(model, reward_funcs=agentic_reward_function(),
                          train_dataset=grpo_dataset("bundled", agentic=True),
                          environment_factory=AgenticToolEnv, args=GRPOConfig(...))

The dataset carries a ``problem_id`` column; TRL passes it to the reward functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from cvdp_gym.envs.agentic import AgenticEnv
from cvdp_gym.envs.single_shot import SingleShotEnv
from cvdp_gym.errors import UnknownProblemError
from cvdp_gym.grading import make_reward
from cvdp_gym.grading.settings import GraderSettings
from cvdp_gym.integrations._shared import answer_text, grade_metrics, problems, shared_grader
from cvdp_gym.parsers import ToolCall, format_tool_call


def grpo_dataset(
    dataset: str = "bundled",
    *,
    agentic: bool = False,
    ids: Iterable[str] | None = None,
    categories: Iterable[str] | None = None,
    difficulty: Iterable[str] | str | None = None,
) -> Any:
    """A ``datasets.Dataset`` with ``prompt`` (chat messages, as the environment's
    ``info["messages"]``) and ``problem_id`` columns."""
    import datasets

    selected = problems(dataset, agentic=agentic, ids=ids, categories=categories, difficulty=difficulty)
    env_cls = AgenticEnv if agentic else SingleShotEnv
    env = env_cls(selected, grader=shared_grader())
    rows: dict[str, list[Any]] = {"prompt": [], "problem_id": []}
    try:
        for problem in selected.problems:
            _, info = env.reset(options={"problem_id": problem.id})
            rows["prompt"].append(info["messages"])
            rows["problem_id"].append(problem.id)
    finally:
        env.close()
    return datasets.Dataset.from_dict(rows)


def reward_function(
    reward: str = "shaped",
    *,
    dataset: str = "bundled",
    concurrency: int = 2,
    interface_credit: float = 0.0,
    sandbox: str = "bubblewrap",
    toolchain: str | None = None,
    timeout_s: float = 300.0,
    cache: bool | str = True,
) -> Callable[..., Any]:
    """A ``GRPOTrainer`` reward function (``shaped`` | ``partial`` | ``binary``).

    It grades the whole batch concurrently (``Grader.grade_many``, at most ``concurrency``
    harness runs at once) and is async, so TRL runs it alongside other async rewards. It
    logs ``cvdp/pass_rate``, ``cvdp/format_rate`` and ``cvdp/syntax_rate`` over the judged
    completions, and ``cvdp/infra_failures``. A completion the grader could not judge
    (``infra_failure``: the sandbox died) gets None, which ``GRPOTrainer`` leaves out of its
    group baseline, its reward statistics and the update (advantage 0). A completion whose
    ``problem_id`` is unknown raises (a wrong dataset, not a bad answer).
    """
    score = make_reward(reward, interface_credit=interface_credit)
    by_id = {p.id: p for p in problems(dataset, agentic=False).problems}

    async def cvdp_reward(
        prompts: Sequence[Any], completions: Sequence[Any], problem_id: Sequence[str], **kwargs: Any
    ) -> list[float | None]:
        unknown = sorted({pid for pid in problem_id if pid not in by_id})
        if unknown:
            raise UnknownProblemError(f"problem_id not in {dataset!r}: {', '.join(unknown)}")
        grader = shared_grader(GraderSettings(sandbox=sandbox, toolchain=toolchain, timeout_s=timeout_s, cache=cache))
        items = [(by_id[pid], answer_text(c)) for pid, c in zip(problem_id, completions, strict=True)]
        results = await grader.grade_many(items, concurrency=concurrency)
        judged = [r for r in results if not r.infra_failure]
        log_metric = kwargs.get("log_metric")
        if log_metric is not None and results:
            log_metric("cvdp/infra_failures", float(len(results) - len(judged)))
            if judged:
                n = len(judged)
                log_metric("cvdp/pass_rate", sum(r.passed for r in judged) / n)
                log_metric("cvdp/format_rate", sum(r.format_ok for r in judged) / n)
                log_metric("cvdp/syntax_rate", sum(r.syntax_ok for r in judged) / n)
        return [None if r.infra_failure else float(score(r)) for r in results]

    cvdp_reward.__name__ = f"cvdp_{reward if isinstance(reward, str) else 'custom'}"
    return cvdp_reward


class AgenticToolEnv:
    """One agentic episode for TRL's ``environment_factory``.

    TRL exposes every public method except ``reset`` as a tool, so this class has exactly
    two: ``execute_bash`` and ``finish``. Each call is one turn of ``CVDP-Agentic-v0``
    (``max_turns`` bounds the calls). ``agentic_reward_function`` ends the episode with the
    model's final text (a unified diff in it is applied) and grades the workspace.
    Constructor arguments go to ``AgenticEnv``; ``dataset`` defaults to the bundled set.
    """

    def __init__(self, dataset: str = "bundled", **env_kwargs: Any) -> None:
        env_kwargs.setdefault("grader", shared_grader())
        self._env = AgenticEnv(problems(dataset, agentic=True), tool_format="qwen", **env_kwargs)
        self._done = True
        self._reward = 0.0
        self._info: dict[str, Any] = {}

    def reset(self, problem_id: str | None = None, **kwargs: Any) -> None:
        """Start the episode for the row's ``problem_id`` (the prompt already holds the task)."""
        options = {"problem_id": problem_id} if problem_id is not None else None
        self._env.reset(options=options)
        self._done = False
        self._reward = 0.0
        self._info = {}

    def execute_bash(self, command: str) -> str:
        """Run a bash command in the problem's workspace (docs/, rtl/, verif/).

        Args:
            command: The bash command to run, e.g. "cat rtl/counter.sv" or "iverilog -g2012 rtl/*.sv".

        Returns:
            The command's exit status and output.
        """
        if self._done:
            return "error: the episode is over"
        observation = self._turn(ToolCall("execute_bash", {"command": command}))
        return observation if not self._done else observation + "\n(the turn limit was reached; the episode is over)"

    def finish(self, message: str = "") -> str:
        """Finish the task: the files in rtl/ are graded as they are now.

        Args:
            message: A short summary of the changes.

        Returns:
            A confirmation.
        """
        if not self._done:
            self._turn(ToolCall("finish", {"message": message}))
        return "finished: the workspace will be graded"

    def _turn(self, call: ToolCall) -> str:
        observation, reward, terminated, truncated, info = self._env.step(format_tool_call(call, "qwen"))
        self._reward += reward
        if terminated or truncated:
            self._done, self._info = True, info
        tool_messages = info.get("tool_messages") or []
        return "\n".join(m["content"] for m in tool_messages) if tool_messages else observation

    def _end(self, final_text: str) -> tuple[float, dict[str, Any]]:
        """End the episode (if still running) with the final text; the return and final info."""
        if not self._done:
            # A turn without a tool call ends the episode; a diff in it is applied first.
            text = final_text if final_text.strip() else "done"
            _, reward, _, _, info = self._env.step(text)
            self._reward += reward
            self._done, self._info = True, info
        return self._reward, self._info


def agentic_reward_function(*, log: bool = True) -> Callable[..., Any]:
    """The reward for ``AgenticToolEnv`` rollouts: ends each episode with the model's last
    assistant message and returns the environment's return (its ``reward`` option); None for
    an episode whose final grade the grader could not judge (``info["infra_failure"]``),
    which ``GRPOTrainer`` leaves out of its statistics and its update."""

    def cvdp_agentic(
        prompts: Sequence[Any], completions: Sequence[Any], environments: Sequence[AgenticToolEnv], **kwargs: Any
    ) -> list[float | None]:
        rewards: list[float | None] = []
        infos = []
        for completion, env in zip(completions, environments, strict=True):
            final = completion[-1] if isinstance(completion, list) and completion else completion
            reward, info = env._end(answer_text(final))
            judged = not info.get("infra_failure")
            rewards.append(float(reward) if judged else None)
            if judged:
                infos.append(grade_metrics(info))
        log_metric = kwargs.get("log_metric")
        if log and log_metric is not None and infos:
            log_metric("cvdp/pass_rate", sum(i["passed"] for i in infos) / len(infos))
        return rewards

    return cvdp_agentic
