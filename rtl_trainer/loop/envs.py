"""The trainer's view of CVDP: environments built from a run's config, which problems it
trains on, how simulations are spread (the grading executor), and sampling settings.

Only the environments' public Gymnasium API and documented ``info`` keys are used, and
:mod:`cvdp_gym.decontaminate` to refuse a training set that overlaps the evaluation set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
from tinker import types

from cvdp_gym.execution.executor_factory import executor_besides_threads, parse_executor
from cvdp_gym.execution.executors import GradeExecutor
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
    config: TrainConfig, *, cache: bool | None = None, executor: GradeExecutor | None = None, training: bool = True
) -> Callable[[], gym.Env]:
    """Environments over the configured problems (the trainer's only view of CVDP).

    For a ``training`` run (the default: ``Trainer`` and ``run_sft`` build their environments
    here before they load a model), first ``refuse_overlap``: a training set that overlaps
    ``decontaminate_against`` stops the run before it starts. An evaluation passes False.
    """
    import cvdp_gym  # noqa: F401  (registers the environments)

    if training:
        refuse_overlap(config)

    extra: dict[str, Any] = {}
    if "Refine" in config.env:
        extra = {"max_attempts": config.refine_max_attempts, "feedback": config.refine_feedback,
                 "episode_reward": config.refine_episode_reward}
    if config.task != "design":
        extra["task"] = config.task
    if config.quality is not None or config.chosen_reward == "quality":
        extra["quality"] = {"flow": config.quality or "asic", "liberty": config.quality_liberty, "clock_ns": config.quality_clock_ns}

    def make() -> gym.Env:
        return gym.make(
            config.env,
            dataset=config.dataset,
            benchmark_dir=config.benchmark_dir,
            ids=config.ids,
            categories=config.categories,
            difficulty=config.difficulty,
            reward=config.chosen_reward,
            timeout_s=config.grade_timeout_s,
            cache=config.grade_cache if cache is None else cache,
            sandbox=config.grade_sandbox,
            toolchain=config.grade_toolchain,
            executor=executor,
            verdict=config.grade_verdict,
            harness_seed=config.grade_seed,
            **extra,
        )

    return make


def refuse_overlap(config: TrainConfig) -> None:
    """Raise a one-line ``ConfigError`` naming the training problems that are near-copies of
    problems of ``config.decontaminate_against`` (nothing to check where that is None or empty).

    The training problems are the dataset's after ``ids``, ``categories``, ``difficulty`` and
    ``exclude_simulators`` (a superset of what an environment keeps: it also drops problems of
    the other kind, agentic or not); the test is ``cvdp-gym decontaminate``'s default preset
    with ``decontaminate_rouge_l`` as the specification's ROUGE-L threshold.
    """
    against = config.decontaminate_against
    if not against:
        return
    from cvdp_gym.data import load_dataset
    from cvdp_gym.decontaminate import decontaminate, evaluation_problems, thresholds_for
    from cvdp_gym.errors import CvdpGymError

    try:
        training = load_dataset(config.dataset, ids=config.ids, categories=config.categories,
                                difficulty=config.difficulty, benchmark_dir=config.benchmark_dir).problems
    except CvdpGymError as exc:
        raise ConfigError(str(exc)) from None
    try:
        thresholds = thresholds_for("default", spec_rouge_l=config.decontaminate_rouge_l)
        evaluation = evaluation_problems(against)
    except CvdpGymError as exc:
        raise ConfigError(f"decontaminate_against: {exc}") from None
    training = [p for p in training if not _simulator_excluded(p, config)]
    flagged = [r for r in decontaminate(training, evaluation, thresholds) if r.flagged]
    if not flagged:
        return
    named = ", ".join(f"{r.training_id} ~ {r.nearest[0].evaluation_id}" for r in flagged[:NAMED_OVERLAPS])
    more = f" and {len(flagged) - NAMED_OVERLAPS} more" if len(flagged) > NAMED_OVERLAPS else ""
    raise ConfigError(
        f"the training set {config.dataset} overlaps {', '.join(against)}: {len(flagged)} of {len(training)} "
        f"training problems are near-copies ({thresholds.describe()}): {named}{more}; remove them "
        f"(cvdp-gym decontaminate {config.dataset} {' '.join(f'--against {a}' for a in against)} --out DIR "
        "writes the training set without them) or set decontaminate_against to null"
    )


#: Overlapping training problems named in ``refuse_overlap``'s error (the rest are counted).
NAMED_OVERLAPS = 5


def _simulator_excluded(problem: Any, config: TrainConfig) -> bool:
    env_file = next((t for p, t in problem.harness.items() if p.endswith(".env")), "")
    return any(sim in env_file for sim in config.exclude_simulators)


def problem_ids(env: gym.Env, config: TrainConfig) -> list[str]:
    """The problems a run trains on, minus those whose simulator was excluded."""
    ids = [problem.id for problem in env.unwrapped.problems if not _simulator_excluded(problem, config)]
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
