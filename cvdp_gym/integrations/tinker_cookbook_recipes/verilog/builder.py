"""The environments' dataset builder from a recipe's settings: both recipes name the problems,
the episode and the grader with the same fields, read here once."""

from __future__ import annotations

from typing import Protocol

from cvdp_gym.integrations.tinker_cookbook import CVDPDatasetBuilder


class ProblemSettings(Protocol):
    """The fields of a recipe's ``CLIConfig`` the dataset builder reads."""

    model_name: str
    groups_per_batch: int
    group_size: int
    agentic: bool
    dataset: str
    ids: tuple[str, ...] | None
    categories: tuple[str, ...] | None
    difficulty: tuple[str, ...] | None
    reward: str
    reward_coef: float
    sandbox: str
    toolchain: str | None
    timeout_s: float
    max_turns: int
    max_trajectory_tokens: int | None
    seed: int


def dataset_builder(cli: ProblemSettings, renderer_name: str) -> CVDPDatasetBuilder:
    """The adapter's :class:`CVDPDatasetBuilder` over the recipe's problems and grader."""
    return CVDPDatasetBuilder(
        model_name_for_tokenizer=cli.model_name, renderer_name=renderer_name,
        batch_size=cli.groups_per_batch, group_size=cli.group_size, agentic=cli.agentic,
        dataset=cli.dataset, ids=cli.ids, categories=cli.categories, difficulty=cli.difficulty,
        reward=cli.reward, reward_coef=cli.reward_coef, sandbox=cli.sandbox, toolchain=cli.toolchain,
        timeout_s=cli.timeout_s, max_turns=cli.max_turns, max_trajectory_tokens=cli.max_trajectory_tokens,
        seed=cli.seed,
    )
