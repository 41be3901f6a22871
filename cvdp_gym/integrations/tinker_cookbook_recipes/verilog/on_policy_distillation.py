"""On-policy distillation on CVDP problems with ``tinker_cookbook.distillation.train_on_policy``.

The student answers CVDP problems (the adapter's environments, graded by the simulator);
the teacher scores the student's own tokens, and each token's advantage is the negative
reverse KL, ``-kl_penalty_coef * (log p_student - log p_teacher)``, as the cookbook's
distillation recipes do. ``reward_coef`` adds the grader's reward (group-centred) on top;
at 0, the default, the teacher alone trains the student and the grade is only logged
(``env/all/passed``, ``env/all/format_ok``, ...). The teacher must share the student's
tokenizer (the same model family).

Example usage (needs ``TINKER_API_KEY``)::

    python -m cvdp_gym.integrations.tinker_cookbook_recipes.verilog.on_policy_distillation \\
        model_name=Qwen/Qwen3-8B teacher_model=Qwen/Qwen3-32B groups_per_batch=8 learning_rate=1e-4
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

import chz
from tinker.types import LossFnType
from tinker_cookbook import checkpoint_utils, cli_utils
from tinker_cookbook.distillation import train_on_policy
from tinker_cookbook.distillation.datasets import DistillationDatasetConfig, TeacherConfig

from cvdp_gym.integrations.tinker_cookbook_recipes.verilog.builder import dataset_builder


@chz.chz
class CLIConfig:
    """Command-line configuration for on-policy distillation on CVDP."""

    # Student
    model_name: str = "Qwen/Qwen3-8B"
    lora_rank: int = 32
    renderer_name: str | None = None  # None: the student's recommended renderer
    load_checkpoint_path: str | None = None

    # Teacher (same tokenizer as the student)
    teacher_model: str = "Qwen/Qwen3-32B"
    teacher_checkpoint: str | None = None

    # Problems and environment (cvdp_gym.integrations.tinker_cookbook.CVDPDatasetBuilder)
    dataset: str = "bundled"
    ids: tuple[str, ...] | None = None
    categories: tuple[str, ...] | None = None
    difficulty: tuple[str, ...] | None = None
    agentic: bool = False
    reward: str = "shaped"
    reward_coef: float = 0.0  # the grader's reward next to the KL (0: logged only)
    sandbox: str = "bubblewrap"
    toolchain: str | None = None
    timeout_s: float = 300.0
    max_turns: int = 20
    max_trajectory_tokens: int | None = None
    seed: int = 0

    # Training
    group_size: int = 4
    groups_per_batch: int = 8
    learning_rate: float = 1e-4
    max_tokens: int = 4096
    temperature: float = 1.0
    kl_penalty_coef: float = 1.0
    kl_discount_factor: float = 0.0
    num_substeps: int = 1
    loss_fn: LossFnType = "importance_sampling"
    loss_fn_config: dict[str, Any] | None = None
    compute_post_kl: bool = False
    max_steps: int | None = None

    # Logging and checkpoints
    log_path: str | None = None
    wandb_project: str | None = None
    wandb_name: str | None = None
    session_name: str | None = None
    eval_every: int = 0
    save_every: int = 20
    behavior_if_log_dir_exists: cli_utils.LogdirBehavior = "ask"

    # Service
    base_url: str | None = None


def build_config(cli: CLIConfig, renderer_name: str, log_path: str) -> train_on_policy.Config:
    """The cookbook's ``distillation.train_on_policy.Config`` of this recipe."""
    builder = dataset_builder(cli, renderer_name)
    teacher = TeacherConfig(base_model=cli.teacher_model, load_checkpoint_path=cli.teacher_checkpoint)
    wandb_name = cli.wandb_name or Path(log_path).name
    return train_on_policy.Config(
        learning_rate=cli.learning_rate,
        dataset_configs=[
            DistillationDatasetConfig(dataset_builder=builder, teacher_config=teacher, groups_per_batch=cli.groups_per_batch)
        ],
        model_name=cli.model_name,
        recipe_name="recipe_cvdp_verilog_distillation_on_policy",
        renderer_name=renderer_name,
        lora_rank=cli.lora_rank,
        max_tokens=cli.max_tokens,
        temperature=cli.temperature,
        kl_penalty_coef=cli.kl_penalty_coef,
        kl_discount_factor=cli.kl_discount_factor,
        num_substeps=cli.num_substeps,
        loss_fn=cli.loss_fn,
        loss_fn_config=cli.loss_fn_config,
        compute_post_kl=cli.compute_post_kl,
        max_steps=cli.max_steps,
        log_path=log_path,
        wandb_project=cli.wandb_project,
        wandb_name=wandb_name,
        session_name=cli.session_name or wandb_name,
        eval_every=cli.eval_every,
        save_every=cli.save_every,
        base_url=cli.base_url,
        load_checkpoint_path=cli.load_checkpoint_path,
    )


async def cli_main(cli: CLIConfig) -> None:
    """Resolve the renderer and log folder, then run ``distillation.train_on_policy.main``."""
    renderer_name = await checkpoint_utils.resolve_renderer_name_from_checkpoint_or_default_async(
        model_name=cli.model_name,
        explicit_renderer_name=cli.renderer_name,
        load_checkpoint_path=cli.load_checkpoint_path,
        base_url=cli.base_url,
    )
    run_name = (
        f"cvdp-distill-{cli.model_name.replace('/', '-')}-from-{cli.teacher_model.replace('/', '-')}-"
        f"{cli.learning_rate}lr-{cli.groups_per_batch}batch-{datetime.now():%Y-%m-%d-%H-%M}"
    )
    log_path = cli.log_path or cli_utils.runs_path("verilog_distillation", run_name)
    cli_utils.check_log_dir(log_path, behavior_if_exists=cli.behavior_if_log_dir_exists)
    await train_on_policy.main(build_config(cli, renderer_name, log_path))


if __name__ == "__main__":
    asyncio.run(cli_main(chz.entrypoint(CLIConfig)))
