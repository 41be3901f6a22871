"""Pass@k of a model (a checkpoint's sampler) through the environments, with real grading."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from rtl_trainer.backends.base import SamplingClient
from rtl_trainer.config import TrainConfig
from rtl_trainer.loop.envs import is_multi_turn, make_env_factory, problem_ids, sampling_params
from rtl_trainer.rollouts import EnvPool, collect_multi_turn, collect_single_turn


def evaluate(
    config: TrainConfig,
    sampler: SamplingClient,
    renderer: Any,
    *,
    samples: int = 1,
    temperature: float | None = None,
    ks: tuple[int, ...] = (1,),
    make_env: Callable[[], gym.Env] | None = None,
) -> dict[str, Any]:
    """Sample ``samples`` answers per problem and report pass@k (unbiased) and rates.

    ``make_env``: the environments to grade in (a training run's own, sharing its grading
    executor, for its periodic eval); None builds them from ``config``.
    """
    from cvdp_gym.eval.passk import pass_after_attempts, pass_at_k

    eval_config = config.merged({"temperature": temperature if temperature is not None else config.temperature})
    make_env = make_env or make_env_factory(eval_config, training=False)
    probe = make_env()
    ids = problem_ids(probe, eval_config)
    probe.close()
    params = sampling_params(eval_config, renderer, seed=config.seed)
    if is_multi_turn(config.env):
        groups, _ = collect_multi_turn(
            ids, make_env=make_env, sampler=sampler, renderer=renderer, group_size=samples,
            sampling_params=params, workers=config.grade_workers,
            max_prompt_tokens=config.max_prompt_tokens, timeout_s=config.rollout_timeout_s,
        )
    else:
        pool = EnvPool(make_env, config.grade_workers)
        try:
            groups, _ = collect_single_turn(
                ids, sampler=sampler, renderer=renderer, pool=pool, group_size=samples,
                sampling_params=params, grade_workers=config.grade_workers,
                max_prompt_tokens=config.max_prompt_tokens, timeout_s=config.rollout_timeout_s,
            )
        finally:
            pool.close()
    per_problem: dict[str, list[bool]] = defaultdict(list)
    for group in groups:
        for rollout in group.rollouts:
            per_problem[group.problem_id].append(bool(rollout.info.get("passed")))
    rollouts = [r for g in groups for r in g.rollouts]
    report: dict[str, Any] = {
        "problems": len(per_problem),
        "samples": len(rollouts),
        "pass_rate": sum(bool(r.info.get("passed")) for r in rollouts) / max(1, len(rollouts)),
        "mean_reward": sum(r.reward for r in rollouts) / max(1, len(rollouts)),
        "per_problem": {pid: sum(v) / len(v) for pid, v in per_problem.items()},
        "failure_classes": _count(r.info.get("failure_class") or "passed" for r in rollouts),
    }
    attempts = [r.info["attempts"] for r in rollouts if r.info.get("attempts")]
    if attempts:  # CVDP-Refine-v0: pass@1 counting only the first i answers of each episode
        firsts = [
            next((i for i, a in enumerate(r.info.get("attempts") or [], 1) if a["passed"]), None) for r in rollouts
        ]
        report["pass_after_attempt"] = pass_after_attempts(firsts, max(len(a) for a in attempts))
    for k in ks:
        eligible = [v for v in per_problem.values() if len(v) >= k]
        if eligible:
            report[f"pass@{k}"] = sum(pass_at_k(len(v), sum(v), k) for v in eligible) / len(eligible)
    return report


def _count(values) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for value in values:
        counts[value] += 1
    return dict(counts)
