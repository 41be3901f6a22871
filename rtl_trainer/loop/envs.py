"""The trainer's view of CVDP: environments built from a run's config, which problems it
trains on, how simulations are spread (the grading executor), and sampling settings.

Only the environments' public Gymnasium API and documented ``info`` keys are used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
from tinker import types

from cvdp_gym.grading.executor_factory import executor_besides_threads, parse_executor
from cvdp_gym.grading.executors import GradeExecutor
from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import ConfigError


def is_multi_turn(env_id: str) -> bool:
    """Environments whose episodes take several model turns (tools, or grader feedback)."""
    return "Agentic" in env_id or "Refine" in env_id


def grade_executor_for(config: TrainConfig) -> GradeExecutor | None:
    """The executor every environment of a run shares; ``None`` for ``threads`` (each
    grading thread simulates in place)."""
    return executor_besides_threads(config.grade_executor, workers=config.grade_workers)


def grading_threads(config: TrainConfig, executor: GradeExecutor | None) -> int:
    """Threads that hand answers to the environments: enough to keep the executor busy."""
    name, count = parse_executor(config.grade_executor)
    if executor is None:
        return int(count) if name == "threads" and count else config.grade_workers
    return max(config.grade_workers, executor.capacity)


def make_env_factory(
    config: TrainConfig, *, cache: bool | None = None, executor: GradeExecutor | None = None
) -> Callable[[], gym.Env]:
    """Environments over the configured problems (the trainer's only view of CVDP)."""
    import cvdp_gym  # noqa: F401  (registers the environments)

    extra: dict[str, Any] = {}
    if "Refine" in config.env:
        extra = {"max_attempts": config.refine_max_attempts, "feedback": config.refine_feedback,
                 "episode_reward": config.refine_episode_reward}

    def make() -> gym.Env:
        return gym.make(
            config.env,
            dataset=config.dataset,
            benchmark_dir=config.benchmark_dir,
            ids=config.ids,
            categories=config.categories,
            difficulty=config.difficulty,
            reward=config.reward,
            timeout_s=config.grade_timeout_s,
            cache=config.grade_cache if cache is None else cache,
            sandbox=config.grade_sandbox,
            toolchain=config.grade_toolchain,
            executor=executor,
            **extra,
        )

    return make


def problem_ids(env: gym.Env, config: TrainConfig) -> list[str]:
    """The problems a run trains on, minus those whose simulator was excluded."""
    ids = []
    for problem in env.unwrapped.problems:
        env_file = next((t for p, t in problem.harness.items() if p.endswith(".env")), "")
        if any(sim in env_file for sim in config.exclude_simulators):
            continue
        ids.append(problem.id)
    if not ids:
        raise ConfigError("no problems left to train on after the filters")
    return ids


def sampling_params(config: TrainConfig, renderer: Any, seed: int | None = None) -> types.SamplingParams:
    return types.SamplingParams(
        max_tokens=config.max_tokens,
        temperature=config.temperature,
        stop=renderer.stop_sequences(),
        seed=seed,
    )
