"""RL on CVDP problems with ``tinker_cookbook.rl.train``: rewards from the simulator.

The environments are the adapter's (``cvdp_gym.integrations.tinker_cookbook``):
``CVDP-SingleShot-v0`` (one answer per episode) or, with ``agentic=True``,
``CVDP-Agentic-v0`` (bash turns in a sandboxed workspace), graded by each problem's
harness in the sandbox.

Example usage (needs ``TINKER_API_KEY``)::

    python -m cvdp_gym.integrations.tinker_cookbook_recipes.verilog.train \\
        model_name=Qwen/Qwen3-8B groups_per_batch=8 group_size=4 learning_rate=4e-5
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

import chz
from tinker.types import LossFnType
from tinker_cookbook import checkpoint_utils, cli_utils
from tinker_cookbook.rl import train

from cvdp_gym.integrations.tinker_cookbook_recipes.verilog.builder import dataset_builder


@chz.chz
class CLIConfig:
    """Command-line configuration for RL on CVDP."""

    # Model
    model_name: str = "Qwen/Qwen3-8B"
    lora_rank: int = 32
    renderer_name: str | None = None  # None: the model's recommended renderer
    load_checkpoint_path: str | None = None

    # Problems and environment (cvdp_gym.integrations.tinker_cookbook.CVDPDatasetBuilder)
    dataset: str = "bundled"  # bundled, a JSONL path, hf[:PATTERN[@REV]], ...
    ids: tuple[str, ...] | None = None
    categories: tuple[str, ...] | None = None
    difficulty: tuple[str, ...] | None = None
    agentic: bool = False  # True: CVDP-Agentic-v0 (multi-turn, tool calls)
    reward: str = "shaped"  # shaped, partial, binary, quality
    reward_coef: float = 1.0  # the grader's reward in the return
    sandbox: str = "bubblewrap"
    toolchain: str | None = None
    timeout_s: float = 300.0
    max_turns: int = 20
    max_trajectory_tokens: int | None = None
    seed: int = 0

    # Training
    group_size: int = 4
    groups_per_batch: int = 8
    learning_rate: float = 4e-5
    max_tokens: int = 4096
    temperature: float = 1.0
    num_substeps: int = 1
    loss_fn: LossFnType = "importance_sampling"
    num_epochs: int = 1
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


def build_config(cli: CLIConfig, renderer_name: str, log_path: str) -> train.Config:
    """The cookbook's ``rl.train.Config`` of this recipe."""
    builder = dataset_builder(cli, renderer_name)
    wandb_name = cli.wandb_name or Path(log_path).name
    return train.Config(
        learning_rate=cli.learning_rate,
        dataset_builder=builder,
        model_name=cli.model_name,
        recipe_name="recipe_cvdp_verilog_rl",
        renderer_name=renderer_name,
        lora_rank=cli.lora_rank,
        max_tokens=cli.max_tokens,
        temperature=cli.temperature,
        num_substeps=cli.num_substeps,
        loss_fn=cli.loss_fn,
        num_epochs=cli.num_epochs,
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
    """Resolve the renderer and log folder, then run ``rl.train.main``."""
    renderer_name = await checkpoint_utils.resolve_renderer_name_from_checkpoint_or_default_async(
        model_name=cli.model_name,
        explicit_renderer_name=cli.renderer_name,
        load_checkpoint_path=cli.load_checkpoint_path,
        base_url=cli.base_url,
    )
    kind = "agentic" if cli.agentic else "single-shot"
    run_name = (
        f"cvdp-{kind}-{cli.model_name.replace('/', '-')}-{cli.learning_rate}lr-"
        f"{cli.group_size}group-{cli.groups_per_batch}batch-{datetime.now():%Y-%m-%d-%H-%M}"
    )
    log_path = cli.log_path or cli_utils.runs_path("verilog_rl", run_name)
    cli_utils.check_log_dir(log_path, behavior_if_exists=cli.behavior_if_log_dir_exists)
    await train.main(build_config(cli, renderer_name, log_path))


if __name__ == "__main__":
    asyncio.run(cli_main(chz.entrypoint(CLIConfig)))
