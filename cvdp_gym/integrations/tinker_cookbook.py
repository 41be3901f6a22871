"""CVDP for tinker-cookbook 0.6.1: ``Env``, ``EnvGroupBuilder``, ``RLDataset`` and a
``RLDatasetBuilder`` over ``CVDP-SingleShot-v0`` and ``CVDP-Agentic-v0``.

``tinker_cookbook.rl.train`` trains on CVDP unchanged::

    from cvdp_gym.integrations.tinker_cookbook import CVDPDatasetBuilder
    config = train.Config(
        dataset_builder=CVDPDatasetBuilder(model_name_for_tokenizer="Qwen/Qwen3-8B",
                                           renderer_name="qwen3", batch_size=8, group_size=4),
        model_name="Qwen/Qwen3-8B", renderer_name="qwen3", recipe_name="cvdp",
        learning_rate=4e-5, max_tokens=4096, log_path="runs/cvdp")
    asyncio.run(train.main(config))

Prompts are rendered and answers parsed by the cookbook renderer. Single-shot: the
answer's text (thinking removed by the renderer) is graded. Agentic: the renderer parses
the turn's tool calls (any renderer with tool support: Qwen3, Qwen3.5, gpt-oss, ...); each
call is handed to the environment in one canonical text form, and the tool results come
back as ``tool`` messages rendered by the same renderer. Grading runs on worker threads
(``asyncio.to_thread``) so a group's episodes are graded concurrently. An answer the
grader could not judge fails its trajectory (``GradingError``), never a reward of 0.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import chz
import tinker
from tinker_cookbook import renderers
from tinker_cookbook.completers import StopCondition
from tinker_cookbook.rl.types import (
    Action,
    ActionExtra,
    Env,
    EnvGroupBuilder,
    RLDataset,
    RLDatasetBuilder,
    StepResult,
    StopReason,
)
from tinker_cookbook.tokenizer_utils import get_tokenizer

from cvdp_gym.envs.agentic import AgenticEnv
from cvdp_gym.envs.single_shot import SingleShotEnv
from cvdp_gym.envs.tools import EXECUTE_BASH_TOOL, FINISH_TOOL
from cvdp_gym.errors import ConfigError, GradingError
from cvdp_gym.grading.settings import GraderSettings
from cvdp_gym.integrations._shared import grade_metrics, problems, shared_grader
from cvdp_gym.parsers import ToolCall, format_tool_call

_TOOL_SPECS: list[renderers.ToolSpec] = [
    renderers.ToolSpec(**tool["function"]) for tool in (EXECUTE_BASH_TOOL, FINISH_TOOL)
]


@dataclass(frozen=True)
class EnvOptions:
    """Environment options a builder carries (picklable: no live objects)."""

    dataset: str = "bundled"
    reward: str = "shaped"
    sandbox: str = "bubblewrap"
    toolchain: str | None = None
    timeout_s: float = 300.0
    cache: bool | str = True
    max_turns: int = 20
    command_timeout_s: float = 60.0
    #: The grader's reward in the episode's return is ``reward_coef * reward`` (0: the
    #: return is 0, as in on-policy distillation from a teacher alone; the grade is still
    #: in the metrics).
    reward_coef: float = 1.0

    def make(self, agentic: bool) -> SingleShotEnv | AgenticEnv:
        grader = shared_grader(
            GraderSettings(sandbox=self.sandbox, toolchain=self.toolchain, timeout_s=self.timeout_s, cache=self.cache)
        )
        selected = problems(self.dataset, agentic=agentic)
        if agentic:
            return AgenticEnv(
                selected, grader=grader, reward=self.reward, tool_format="qwen",
                max_turns=self.max_turns, command_timeout_s=self.command_timeout_s,
            )
        return SingleShotEnv(selected, grader=grader, reward=self.reward)


class CVDPSingleShotEnv(Env):
    """One answer to one non-agentic problem, graded by its harness."""

    def __init__(self, problem_id: str, renderer: renderers.Renderer, options: EnvOptions) -> None:
        self.problem_id = problem_id
        self.renderer = renderer
        self.options = options
        self._env: SingleShotEnv | None = None

    async def initial_observation(self) -> tuple[tinker.ModelInput, StopCondition]:
        self._env = self.options.make(agentic=False)  # type: ignore[assignment]
        _, info = self._env.reset(options={"problem_id": self.problem_id})
        messages = [renderers.Message(role=m["role"], content=m["content"]) for m in info["messages"]]
        return self.renderer.build_generation_prompt(messages), self.renderer.get_stop_sequences()

    async def step(self, action: Action, *, extra: ActionExtra | None = None) -> StepResult:
        assert self._env is not None, "initial_observation() first"
        message, _ = self.renderer.parse_response(action)
        answer = renderers.get_text_content(message)
        _, reward, _, _, info = await asyncio.to_thread(self._env.step, answer)
        not_judged(info)
        return StepResult(
            reward=self.options.reward_coef * reward,
            episode_done=True,
            next_observation=tinker.ModelInput.empty(),
            next_stop_condition=self.renderer.get_stop_sequences(),
            metrics={**grade_metrics(info), f"stop/{StopReason.COMPLETED.value}": 1.0},
            logs={"problem_id": self.problem_id, "failure_class": str(info["failure_class"]), "reason": info["reason"][:200]},
        )


class CVDPAgenticEnv(Env):
    """A multi-turn episode of ``CVDP-Agentic-v0``: bash in a sandboxed workspace, then graded.

    Each step is one assistant turn. The episode ends when the model calls ``finish``,
    answers without a tool call (a unified diff in that answer is applied), reaches
    ``max_turns``, or when the next prompt would exceed ``max_trajectory_tokens`` (the
    workspace is then graded as it is).
    """

    def __init__(
        self,
        problem_id: str,
        renderer: renderers.Renderer,
        options: EnvOptions,
        max_trajectory_tokens: int | None = None,
    ) -> None:
        self.problem_id = problem_id
        self.renderer = renderer
        self.options = options
        self.max_trajectory_tokens = max_trajectory_tokens
        self._env: AgenticEnv | None = None
        self._messages: list[renderers.Message] = []

    async def initial_observation(self) -> tuple[tinker.ModelInput, StopCondition]:
        self._env = self.options.make(agentic=True)  # type: ignore[assignment]
        _, info = await asyncio.to_thread(self._env.reset, options={"problem_id": self.problem_id})
        system, user = info["messages"][0]["content"], info["messages"][1]["content"]
        self._messages = [
            *self.renderer.create_conversation_prefix_with_tools(_TOOL_SPECS, system_prompt=system),
            renderers.Message(role="user", content=user),
        ]
        return self.renderer.build_generation_prompt(self._messages), self.renderer.get_stop_sequences()

    async def step(self, action: Action, *, extra: ActionExtra | None = None) -> StepResult:
        assert self._env is not None, "initial_observation() first"
        message, _ = self.renderer.parse_response(action)
        _, reward, terminated, truncated, info = await asyncio.to_thread(self._env.step, turn_text(message))
        self._messages.append(message)
        calls = message.get("tool_calls") or []
        for i, tool_message in enumerate(info["tool_messages"]):
            result = renderers.Message(role="tool", content=tool_message["content"], name=tool_message["name"])
            if len(calls) == len(info["tool_messages"]) and calls[i].id:
                result["tool_call_id"] = calls[i].id
            self._messages.append(result)
        next_prompt = tinker.ModelInput.empty()
        stop_reason = StopReason.COMPLETED if terminated else StopReason.MAX_TURNS
        if not (terminated or truncated):
            next_prompt = self.renderer.build_generation_prompt(self._messages)
            if self.max_trajectory_tokens is not None and next_prompt.length > self.max_trajectory_tokens:
                # Out of context: end with no tool call, which grades the workspace as it is.
                _, final_reward, _, _, info = await asyncio.to_thread(self._env.step, "")
                reward += final_reward
                terminated, stop_reason = True, StopReason.CONTEXT_OVERFLOW
                next_prompt = tinker.ModelInput.empty()
        done = terminated or truncated
        if done and info.get("infra_failure"):
            self._env.close()  # its workspace: the trajectory fails here
            not_judged(info)
        metrics: dict[str, float] = {"turn": float(info["turn"]), "malformed_calls": float(info["malformed_calls"])}
        logs: dict[str, str | int | float] = {"problem_id": self.problem_id}
        if done:
            metrics |= grade_metrics(info) | {f"stop/{stop_reason.value}": 1.0, "commands_run": float(info["commands_run"])}
            logs |= {"failure_class": str(info["failure_class"]), "end_reason": info["end_reason"]}
            self._env.close()
        return StepResult(
            reward=self.options.reward_coef * reward,
            episode_done=done,
            next_observation=next_prompt,
            next_stop_condition=self.renderer.get_stop_sequences(),
            metrics=metrics,
            logs=logs,
        )


def not_judged(info: dict[str, Any]) -> None:
    """Raise ``GradingError`` when the grader could not judge the answer (``infra_failure``:
    the sandbox died, a lost worker): the cookbook's way to fail a trajectory. Its
    ``RetryOnFailure`` (``rollout_error_tolerance=True``) records a ``RolloutError`` and plays
    the episode again in a fresh env, so no reward of 0 enters the group's advantages;
    ``FailFast`` stops the run."""
    if info.get("infra_failure"):
        raise GradingError(f"the grader could not judge the answer ({info['failure_class']}): {info['reason']}")


def turn_text(message: renderers.Message) -> str:
    """A parsed assistant turn in the environment's canonical tool-call text (``qwen``).

    The renderer has already parsed the model's own format; calls it could not parse are
    passed on raw, so the environment counts them as malformed and tells the model why.
    """
    parts = [renderers.get_text_content(message)]
    for call in message.get("tool_calls") or []:
        try:
            arguments = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError:
            arguments = {"_unparsable": call.function.arguments}
        if not isinstance(arguments, dict):
            arguments = {"_unparsable": call.function.arguments}
        parts.append(format_tool_call(ToolCall(call.function.name, arguments), "qwen"))
    parts.extend(u.raw_text for u in message.get("unparsed_tool_calls") or [])
    return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class CVDPEnvGroupBuilder(EnvGroupBuilder):
    """``group_size`` episodes of one problem (GRPO centres rewards within the group)."""

    problem_id: str
    renderer: renderers.Renderer
    group_size: int
    agentic: bool = False
    options: EnvOptions = field(default_factory=EnvOptions)
    max_trajectory_tokens: int | None = None

    async def make_envs(self) -> Sequence[Env]:
        if self.agentic:
            return [
                CVDPAgenticEnv(self.problem_id, self.renderer, self.options, self.max_trajectory_tokens)
                for _ in range(self.group_size)
            ]
        return [CVDPSingleShotEnv(self.problem_id, self.renderer, self.options) for _ in range(self.group_size)]

    def logging_tags(self) -> list[str]:
        return ["cvdp", "cvdp_agentic" if self.agentic else "cvdp_single_shot"]


class CVDPDataset(RLDataset):
    """Batches of ``batch_size`` problems (shuffled once by ``seed``), one group each."""

    def __init__(
        self,
        problem_ids: Sequence[str],
        renderer: renderers.Renderer,
        *,
        batch_size: int,
        group_size: int,
        agentic: bool = False,
        options: EnvOptions | None = None,
        max_trajectory_tokens: int | None = None,
        seed: int = 0,
    ) -> None:
        if batch_size < 1 or group_size < 1:
            raise ConfigError("batch_size and group_size must be at least 1")
        if not problem_ids:
            raise ConfigError("no problems to train on")
        self.problem_ids = list(problem_ids)
        random.Random(seed).shuffle(self.problem_ids)
        self.renderer = renderer
        self.batch_size = batch_size
        self.group_size = group_size
        self.agentic = agentic
        self.options = options or EnvOptions()
        self.max_trajectory_tokens = max_trajectory_tokens

    def get_batch(self, index: int) -> Sequence[EnvGroupBuilder]:
        n = len(self.problem_ids)
        ids = [self.problem_ids[(index * self.batch_size + i) % n] for i in range(self.batch_size)]
        return [
            CVDPEnvGroupBuilder(pid, self.renderer, self.group_size, self.agentic, self.options, self.max_trajectory_tokens)
            for pid in ids
        ]

    def __len__(self) -> int:
        """Batches per epoch (a last partial batch wraps around to the first problems)."""
        return -(-len(self.problem_ids) // self.batch_size)


@chz.chz
class CVDPDatasetBuilder(RLDatasetBuilder):
    """The ``dataset_builder`` for ``tinker_cookbook.rl.train.Config``."""

    model_name_for_tokenizer: str
    renderer_name: str
    batch_size: int
    group_size: int
    agentic: bool = False
    dataset: str = "bundled"
    ids: tuple[str, ...] | None = None
    categories: tuple[str, ...] | None = None
    difficulty: tuple[str, ...] | None = None
    reward: str = "shaped"
    reward_coef: float = 1.0
    sandbox: str = "bubblewrap"
    toolchain: str | None = None
    timeout_s: float = 300.0
    max_turns: int = 20
    max_trajectory_tokens: int | None = None
    seed: int = 0

    async def __call__(self) -> tuple[RLDataset, RLDataset | None]:
        renderer = renderers.get_renderer(self.renderer_name, get_tokenizer(self.model_name_for_tokenizer))
        selected = problems(
            self.dataset, agentic=self.agentic, ids=self.ids, categories=self.categories, difficulty=self.difficulty
        )
        options = EnvOptions(
            dataset=self.dataset, reward=self.reward, sandbox=self.sandbox, toolchain=self.toolchain,
            timeout_s=self.timeout_s, max_turns=self.max_turns, reward_coef=self.reward_coef,
        )
        dataset = CVDPDataset(
            selected.ids, renderer, batch_size=self.batch_size, group_size=self.group_size,
            agentic=self.agentic, options=options, max_trajectory_tokens=self.max_trajectory_tokens, seed=self.seed,
        )
        return dataset, None

