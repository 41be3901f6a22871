"""``rtl-train``: RL, on-policy distillation, SFT, evaluation and plots over cvdp_gym."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from rtl_trainer.config import TrainConfig

app = typer.Typer(
    help="Train RTL-writing models with RL and on-policy distillation on CVDP environments.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="JSON or YAML file of TrainConfig fields; command-line options override it.")]
BackendOpt = Annotated[str | None, typer.Option(help="'local' (transformers + peft, in process) or 'tinker' (the hosted service).")]
StudentOpt = Annotated[str | None, typer.Option(help="Model to train: a Tinker model name, a local model directory, or a saved state.")]
TeacherOpt = Annotated[str | None, typer.Option(help="Teacher for distillation: a model name, a model directory or a saved state.")]
EnvOpt = Annotated[str | None, typer.Option(help="CVDP-SingleShot-v0, CVDP-Refine-v0 (answers with grader feedback) or CVDP-Agentic-v0.")]
DatasetOpt = Annotated[str | None, typer.Option(help="'bundled', a CVDP JSONL path, or 'hf[:PATTERN]'.")]
StepsOpt = Annotated[int | None, typer.Option(help="Optimiser steps.")]
GroupSizeOpt = Annotated[int | None, typer.Option(help="Samples per problem; a group shares one problem.")]
GroupsOpt = Annotated[int | None, typer.Option(help="Problems (groups) per step.")]
LrOpt = Annotated[float | None, typer.Option("--lr", help="Adam learning rate.")]
RankOpt = Annotated[int | None, typer.Option(help="LoRA rank.")]
MaxTokensOpt = Annotated[int | None, typer.Option(help="Most tokens sampled per turn.")]
TempOpt = Annotated[float | None, typer.Option(help="Sampling temperature (1.0 keeps the behaviour log-probs exact).")]
KlOpt = Annotated[float | None, typer.Option(help="λ of the reverse-KL penalty −λ·(log p_student − log p_teacher) per token.")]
KlDiscountOpt = Annotated[float | None, typer.Option(help="Discount for summing future KL terms (0: per-token only).")]
LossOpt = Annotated[str | None, typer.Option(help="auto (default: importance_sampling on-policy, ppo off-policy), importance_sampling or ppo.")]
OffPolicyOpt = Annotated[int | None, typer.Option(help="Sample the next N steps' rollouts while this step trains (0: strictly on-policy).")]
WarmupOpt = Annotated[int | None, typer.Option(help="Steps of linear learning-rate warm-up.")]
RunDirOpt = Annotated[str | None, typer.Option(help="Run directory (config.json, metrics.jsonl, checkpoints.jsonl, rollouts/).")]
ResumeOpt = Annotated[bool, typer.Option(help="Continue from the run directory's last checkpoint.")]
SeedOpt = Annotated[int | None, typer.Option(help="Seed for problem order and sampling.")]
SandboxOpt = Annotated[str | None, typer.Option("--sandbox", help="Where answers are graded: bubblewrap (default) or docker.")]
ToolchainOpt = Annotated[str | None, typer.Option("--toolchain", help="root (the pinned Icarus 13 root, default) or host.")]
ExecutorOpt = Annotated[str | None, typer.Option("--grade-executor", help="Where simulations run: threads, processes[:N] or ray[:ADDRESS].")]
DeadlineOpt = Annotated[float | None, typer.Option("--grade-deadline", help="Seconds an answer may take to be graded after it is sampled; late ones are dropped (see late_answers).")]


def _config(config_file: Path | None, mode: str, **overrides: Any) -> TrainConfig:
    base = TrainConfig.from_file(config_file) if config_file else TrainConfig()
    config = base.merged({"mode": mode, **overrides})
    if mode == "distill" and "kl_penalty_coef" not in {k for k, v in overrides.items() if v is not None} and not config.kl_penalty_coef:
        config = config.merged({"kl_penalty_coef": 1.0})
    try:
        config.validate()
    except ValueError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    return config


def _service(config: TrainConfig):
    from rtl_trainer.backends import make_service

    try:
        return make_service(config)
    except (ValueError, RuntimeError, OSError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None


def _train(mode: str, config_file, resume: bool, **overrides: Any) -> None:
    from rtl_trainer.loop.train import Trainer

    config = _config(config_file, mode, **overrides)
    Trainer(config, _service(config), console=console).run(resume=resume)
    console.print(f"run directory: {config.run_dir}")


@app.command()
def rl(
    config: ConfigOpt = None, backend: BackendOpt = None, student: StudentOpt = None, env: EnvOpt = None,
    dataset: DatasetOpt = None, steps: StepsOpt = None, group_size: GroupSizeOpt = None, groups_per_step: GroupsOpt = None,
    lr: LrOpt = None, lora_rank: RankOpt = None, max_tokens: MaxTokensOpt = None, temperature: TempOpt = None,
    loss_fn: LossOpt = None, max_steps_off_policy: OffPolicyOpt = None, lr_warmup_steps: WarmupOpt = None,
    run_dir: RunDirOpt = None, resume: ResumeOpt = False, seed: SeedOpt = None,
    sandbox: SandboxOpt = None, toolchain: ToolchainOpt = None, grade_executor: ExecutorOpt = None,
    grade_deadline: DeadlineOpt = None,
) -> None:
    """Reinforcement learning on the environment's reward (no teacher)."""
    _train("rl", config, resume, backend=backend, student=student, env=env, dataset=dataset, steps=steps,
           group_size=group_size, groups_per_step=groups_per_step, learning_rate=lr, lora_rank=lora_rank,
           max_tokens=max_tokens, temperature=temperature, loss_fn=loss_fn, max_steps_off_policy=max_steps_off_policy,
           lr_warmup_steps=lr_warmup_steps, run_dir=run_dir, seed=seed, grade_sandbox=sandbox,
           grade_toolchain=toolchain, grade_executor=grade_executor, grade_deadline_s=grade_deadline)


@app.command()
def distill(
    config: ConfigOpt = None, backend: BackendOpt = None, student: StudentOpt = None, teacher: TeacherOpt = None,
    env: EnvOpt = None, dataset: DatasetOpt = None, steps: StepsOpt = None, group_size: GroupSizeOpt = None,
    groups_per_step: GroupsOpt = None, lr: LrOpt = None, lora_rank: RankOpt = None, max_tokens: MaxTokensOpt = None,
    temperature: TempOpt = None, kl_penalty_coef: KlOpt = None, kl_discount_factor: KlDiscountOpt = None,
    loss_fn: LossOpt = None, max_steps_off_policy: OffPolicyOpt = None, lr_warmup_steps: WarmupOpt = None,
    run_dir: RunDirOpt = None, resume: ResumeOpt = False, seed: SeedOpt = None,
    sandbox: SandboxOpt = None, toolchain: ToolchainOpt = None, grade_executor: ExecutorOpt = None,
    grade_deadline: DeadlineOpt = None,
) -> None:
    """On-policy distillation: the environment's reward plus the teacher's per-token reverse KL."""
    _train("distill", config, resume, backend=backend, student=student, teacher=teacher, env=env, dataset=dataset,
           steps=steps, group_size=group_size, groups_per_step=groups_per_step, learning_rate=lr, lora_rank=lora_rank,
           max_tokens=max_tokens, temperature=temperature, kl_penalty_coef=kl_penalty_coef,
           kl_discount_factor=kl_discount_factor, loss_fn=loss_fn, max_steps_off_policy=max_steps_off_policy,
           lr_warmup_steps=lr_warmup_steps, run_dir=run_dir, seed=seed, grade_sandbox=sandbox,
           grade_toolchain=toolchain, grade_executor=grade_executor, grade_deadline_s=grade_deadline)


@app.command()
def sft(
    config: ConfigOpt = None, backend: BackendOpt = None, student: StudentOpt = None, env: EnvOpt = None,
    dataset: DatasetOpt = None, steps: StepsOpt = None, lr: LrOpt = None, lora_rank: RankOpt = None,
    batch_size: Annotated[int | None, typer.Option(help="Examples per step.")] = None,
    run_dir: RunDirOpt = None, resume: ResumeOpt = False, seed: SeedOpt = None,
) -> None:
    """Supervised warm start on the problems' reference solutions."""
    from rtl_trainer.loop.sft import run_sft

    cfg = _config(config, "sft", backend=backend, student=student, env=env, dataset=dataset, steps=steps,
                  learning_rate=lr, lora_rank=lora_rank, batch_size=batch_size, run_dir=run_dir, seed=seed)
    run_sft(cfg, _service(cfg), console=console, resume=resume)
    console.print(f"run directory: {cfg.run_dir}")


@app.command("eval")
def evaluate_cmd(
    model: Annotated[str, typer.Argument(help="Model name, model directory or saved state to evaluate.")],
    config: ConfigOpt = None, backend: BackendOpt = None, env: EnvOpt = None, dataset: DatasetOpt = None,
    samples: Annotated[int, typer.Option("-n", help="Samples per problem.")] = 4,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 1.0,
    max_tokens: MaxTokensOpt = None,
    out: Annotated[Path | None, typer.Option(help="Write the report here as JSON.")] = None,
) -> None:
    """Pass@k of a model through the environments (real grading)."""
    from rtl_trainer.loop.evaluate import evaluate
    from rtl_trainer.rendering import get_renderer

    cfg = _config(config, "rl", backend=backend, student=model, env=env, dataset=dataset, max_tokens=max_tokens)
    service = _service(cfg)
    sampler = service.create_sampling_client(model_path=model) if Path(model).exists() else service.create_sampling_client(base_model=model)
    renderer = get_renderer(cfg.renderer or model, sampler.get_tokenizer())
    ks = tuple(k for k in (1, 2, 4, 8, 16) if k <= samples)
    report = evaluate(cfg, sampler, renderer, samples=samples, temperature=temperature, ks=ks)
    table = Table(title=f"rtl-train eval: {model}")
    table.add_column("measure")
    table.add_column("value")
    for key in ("problems", "samples", "pass_rate", "mean_reward", *[f"pass@{k}" for k in ks]):
        if key in report:
            value = report[key]
            table.add_row(key, f"{value:.3f}" if isinstance(value, float) else str(value))
    for attempt, rate in enumerate(report.get("pass_after_attempt", []), start=1):  # CVDP-Refine-v0
        table.add_row(f"pass rate within {attempt} answer(s)", f"{rate:.3f}")
    table.add_row("failure classes", json.dumps(report["failure_classes"]))
    console.print(table)
    if out:
        out.write_text(json.dumps(report, indent=2))


@app.command()
def plot(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories to draw (one line each).")],
    out: Annotated[Path, typer.Option(help="PNG file to write.")] = Path("runs/metrics.png"),
    metric: Annotated[list[str] | None, typer.Option(help="Metrics to draw (default: pass rate, reward, teacher KL, entropy).")] = None,
) -> None:
    """Draw metrics.jsonl of one or more runs as a PNG."""
    from rtl_trainer.plot import DEFAULT_METRICS, plot_runs

    try:
        path = plot_runs(run_dirs, out, metric or DEFAULT_METRICS)
    except ValueError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    console.print(f"wrote {path}")


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="Run directory of the whole demo (every stage resumes from it).")] = Path("runs/demo"),
    rl: Annotated[bool, typer.Option(help="Also run RL (reward only, no teacher) from the same weak student.")] = True,
    with_curriculum: Annotated[bool, typer.Option(help="Then also compare adaptive vs uniform problem sampling and evaluate refinement with grader feedback (opt-in, several more minutes).")] = False,
) -> None:
    """The mission in miniature, offline: tiny teacher SFT, weak student, on-policy
    distillation (and RL beside it), pass rates measured by the real simulator, and a plot."""
    from dataclasses import replace

    from rtl_trainer.demo import DemoSettings, run_curriculum_demo, run_demo

    settings = DemoSettings() if rl else replace(DemoSettings(), rl_steps=0)
    summary = run_demo(out, settings, console=console)
    console.print(f"summary: {out / 'summary.json'}; plot: {summary['plot']}")
    if with_curriculum:
        curriculum = run_curriculum_demo(out, settings, console=console)
        console.print(f"curriculum: {out / 'curriculum.json'}; plot: {curriculum['plot']}")


@app.command()
def models() -> None:
    """List the models the Tinker service offers (needs TINKER_API_KEY)."""
    from rtl_trainer.backends.tinker_backend import TinkerService

    try:
        offered = TinkerService().available_models()
    except (ValueError, RuntimeError, OSError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    table = Table(title="Tinker models")
    for column in ("model", "max context", "trainable", "sampleable"):
        table.add_column(column)

    def flag(value: bool | None) -> str:
        return "?" if value is None else ("yes" if value else "no")

    for m in offered:
        table.add_row(m.model_name or "?", str(m.max_context_length or "?"), flag(m.trainable), flag(m.sampleable))
    console.print(table)


if __name__ == "__main__":
    app()
