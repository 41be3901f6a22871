"""``rtl-train``: RL, on-policy distillation, SFT, evaluation, plots and export over cvdp_gym.

The training commands' options are generated from ``TrainConfig``'s fields (the help lives
once, on the field: ``config.py``); each command lists the fields it exposes. Any other
field is set with ``--set key=value``. Precedence: field defaults < ``--config FILE`` <
``--set`` < explicit options. Option names follow ``cvdp-gym`` where both name the same
thing (``--sandbox``, ``--toolchain``, ``--executor``, ``--samples/-n``).
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rtl_trainer.config import TrainConfig, field_help, field_types, parse_field_value
from rtl_trainer.errors import ConfigError, InfrastructureError, TrackingError

app = typer.Typer(
    help="Train RTL-writing models with RL and on-policy distillation on CVDP environments.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()

#: TrainConfig fields whose option is not spelled ``--field-name``: the spelling cvdp-gym
#: uses for the same thing (``--sandbox``, ``--toolchain``, ``--executor``), or a short one.
FLAGS = {
    "learning_rate": ("--lr",),
    "grade_sandbox": ("--sandbox",),
    "grade_toolchain": ("--toolchain",),
    "grade_executor": ("--executor",),
    "grade_deadline_s": ("--grade-deadline",),
    "grade_verdict": ("--verdict",),
}
#: Old spellings still accepted (hidden from --help): old flag -> field.
HIDDEN_ALIASES = {"--grade-executor": "grade_executor"}
#: The options of each training command, in --help order (each a TrainConfig field).
GRADING = (
    "grade_sandbox", "grade_toolchain", "grade_executor", "grade_verdict", "grade_deadline_s", "max_infra_frac",
    "quality", "quality_liberty", "quality_clock_ns",
)
COMMON = ("backend", "student", "env", "dataset", "steps")
SAMPLING = ("group_size", "groups_per_step", "learning_rate", "lora_rank", "max_tokens", "temperature")
LOSS = ("loss_fn", "max_steps_off_policy", "num_minibatches", "lr_warmup_steps", "run_dir", "seed")
TRACKING = ("log_to", "wandb_project", "mlflow_tracking_uri", "mlflow_experiment", "log_checkpoints")
RL_OPTIONS = (*COMMON, *SAMPLING, *LOSS, *GRADING, *TRACKING)
DISTILL_OPTIONS = ("backend", "student", "teacher", "env", "dataset", "steps", *SAMPLING, "kl_penalty_coef", "reward_coef", "kl_discount_factor", *LOSS, *GRADING, *TRACKING)
SFT_OPTIONS = (*COMMON, "learning_rate", "lora_rank", "batch_size", "run_dir", "seed", *TRACKING)
EVAL_OPTIONS = ("backend", "env", "dataset", "max_tokens")

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="JSON or YAML file of TrainConfig fields. Precedence: field defaults < --config < --set < the other options.")]
SetOpt = Annotated[list[str] | None, typer.Option("--set", metavar="KEY=VALUE", help=escape("Set any TrainConfig field (repeatable), e.g. --set grade_workers=8 --set 'exclude_simulators=[verilator]'; the value is parsed by the field's type, lists and dicts as JSON or YAML. Overrides --config; an explicit option overrides --set."))]
ResumeOpt = Annotated[bool, typer.Option(help="Continue from the run directory's last checkpoint.")]


def _fail(message: str) -> typer.Exit:
    """Print ``error: message`` as one line; exit 2."""
    console.print(f"[red]error:[/] {escape(message)}", soft_wrap=True)
    return typer.Exit(2)


def _field_option(name: str, flags: tuple[str, ...], *, hidden: bool = False) -> inspect.Parameter:
    """A keyword parameter whose typer option sets TrainConfig field ``name`` (default None:
    not given), with the field's own help."""
    kind = field_types()[name]
    scalar = [a for a in typing.get_args(kind) if a is not type(None)] or [kind]
    option = typer.Option(*flags, help=escape(field_help(name)), hidden=hidden, show_default=False)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[scalar[0] | None, option])


def config_options(names: Sequence[str]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command ``--config``, ``--set`` and one option per TrainConfig field in
    ``names`` (``--field-name`` or its ``FLAGS`` spelling). The command is called with
    ``config_file``, ``settings`` and ``overrides`` (field -> value given on the command
    line, None when not) plus its own parameters."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        own = [p for p in inspect.signature(command, eval_str=True).parameters.values()
               if p.name not in ("config_file", "settings", "overrides")]
        arguments = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own if _is_argument(p)]
        options = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own if not _is_argument(p)]
        generated = [_field_option(n, FLAGS.get(n, (f"--{n.replace('_', '-')}",))) for n in names]
        aliases = [_field_option(n, (flag,), hidden=True).replace(name=_alias_param(flag))
                   for flag, n in HIDDEN_ALIASES.items() if n in names]
        config_params = [
            inspect.Parameter("config_file", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ConfigOpt),
            inspect.Parameter("settings", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=SetOpt),
        ]
        params = [*arguments, *config_params, *generated, *aliases, *options]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            overrides = {n: kwargs.pop(n) for n in names}
            for flag, n in HIDDEN_ALIASES.items():
                if n in names and overrides[n] is None:  # the current spelling wins
                    overrides[n] = kwargs.pop(_alias_param(flag))
                kwargs.pop(_alias_param(flag), None)
            return command(overrides=overrides, **kwargs)

        wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate


def _is_argument(param: inspect.Parameter) -> bool:
    return any(isinstance(meta, typer.models.ArgumentInfo) for meta in getattr(param.annotation, "__metadata__", ()))


def _alias_param(flag: str) -> str:
    return "alias_" + flag.lstrip("-").replace("-", "_")


def _config(config_file: Path | None, settings: list[str] | None, mode: str, overrides: dict[str, Any]) -> TrainConfig:
    """The run's config: field defaults < ``--config`` < ``--set`` < explicit options; the
    command sets ``mode``. Any error is one line and exit 2."""
    assigned: dict[str, Any] = {}
    for assignment in settings or []:
        key, sep, text = assignment.partition("=")
        name = key.strip().replace("-", "_")
        if not sep or not name:
            raise _fail(f"--set {assignment}: expected KEY=VALUE")
        if name == "mode":
            raise _fail(f"--set {assignment}: the command sets the mode (rl, distill, sft)")
        try:
            assigned[name] = parse_field_value(name, text)
        except ConfigError as exc:
            raise _fail(f"--set {assignment}: {exc}") from None
    try:
        base = TrainConfig.from_file(config_file) if config_file else TrainConfig()
    except (ConfigError, OSError) as exc:
        raise _fail(f"--config {config_file}: {exc}") from None
    explicit = {k for k, v in overrides.items() if v is not None}
    config = replace(base, **assigned).merged({"mode": mode, **overrides})
    if mode == "distill" and "kl_penalty_coef" not in explicit | set(assigned) and not config.kl_penalty_coef:
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


def _train(mode: str, config_file: Path | None, settings: list[str] | None, resume: bool, overrides: dict[str, Any]) -> None:
    from rtl_trainer.loop.train import Trainer

    config = _config(config_file, settings, mode, overrides)
    service = _service(config)
    status = "errored"
    try:
        Trainer(config, service, console=console).run(resume=resume)
        status = "success"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except (TrackingError, InfrastructureError) as exc:  # tracking: before training starts; infrastructure: a step over max_infra_frac
        raise _fail(str(exc)) from None
    finally:
        if config.backend == "tinker":  # the Tinker session ends with how the run ended
            try:
                service.close(status)
            except Exception as exc:  # the run's own outcome matters more than the goodbye
                console.print(f"[yellow]could not close the Tinker session ({status}): {exc}[/]")
    console.print(f"run directory: {config.run_dir}")


@app.command()
@config_options(RL_OPTIONS)
def rl(config_file: Path | None, settings: list[str] | None, overrides: dict[str, Any], resume: ResumeOpt = False) -> None:
    """Reinforcement learning on the environment's reward (no teacher)."""
    _train("rl", config_file, settings, resume, overrides)


@app.command()
@config_options(DISTILL_OPTIONS)
def distill(config_file: Path | None, settings: list[str] | None, overrides: dict[str, Any], resume: ResumeOpt = False) -> None:
    """On-policy distillation: the environment's reward plus the teacher's per-token reverse KL."""
    _train("distill", config_file, settings, resume, overrides)


@app.command()
@config_options(SFT_OPTIONS)
def sft(config_file: Path | None, settings: list[str] | None, overrides: dict[str, Any], resume: ResumeOpt = False) -> None:
    """Supervised warm start on the problems' reference solutions."""
    from rtl_trainer.loop.sft import run_sft

    cfg = _config(config_file, settings, "sft", overrides)
    try:
        run_sft(cfg, _service(cfg), console=console, resume=resume)
    except TrackingError as exc:  # raised before training starts
        raise _fail(str(exc)) from None
    console.print(f"run directory: {cfg.run_dir}")


@app.command("eval")
@config_options(EVAL_OPTIONS)
def evaluate_cmd(
    model: Annotated[str, typer.Argument(help="Model name, model directory or saved state to evaluate.")],
    config_file: Path | None,
    settings: list[str] | None,
    overrides: dict[str, Any],
    samples: Annotated[int, typer.Option("--samples", "-n", help="Samples per problem.")] = 4,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 1.0,
    out: Annotated[Path | None, typer.Option(help="Write the report here as JSON.")] = None,
) -> None:
    """Pass@k of a model through the environments (real grading)."""
    from rtl_trainer.loop.evaluate import evaluate
    from rtl_trainer.rendering import get_renderer

    cfg = _config(config_file, settings, "rl", {**overrides, "student": model})
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


@app.command("export")
def export_cmd(
    run_dir: Annotated[Path, typer.Argument(help="Run directory (config.json, checkpoints.jsonl).")],
    out: Annotated[Path, typer.Argument(help="Folder to write: new, or empty.")],
    fmt: Annotated[str, typer.Option("--format", help="merged (a Hugging Face model, LoRA folded in) or peft (the adapter, for peft.PeftModel on the base).")],
    step: Annotated[int | None, typer.Option(help="Export the checkpoint of this step (default: the latest).")] = None,
    dtype: Annotated[str, typer.Option(help="merged: weight dtype, auto (the base's), float32, bfloat16 or float16.")] = "auto",
) -> None:
    """Write a run's checkpoint as a model that can leave the run directory (see export.json in OUT)."""
    from rtl_trainer.errors import RtlTrainerError
    from rtl_trainer.export import export_run

    try:
        record = export_run(run_dir, out, format=fmt, step=step, dtype=dtype)
    except RtlTrainerError as exc:
        raise _fail(str(exc)) from None
    console.print(f"wrote {out} ({fmt}, step {record['step']}); tokenizer: {record['tokenizer']}", soft_wrap=True)


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="Run directory of the whole demo (every stage resumes from it).")] = Path("runs/demo"),
    rl: Annotated[bool, typer.Option(help="Also run RL (reward only, no teacher) from the same weak student.")] = True,
    with_curriculum: Annotated[bool, typer.Option(help="Then also compare adaptive vs uniform problem sampling and evaluate refinement with grader feedback (opt-in, several more minutes).")] = False,
    seeds: Annotated[int, typer.Option(min=1, help="With N >= 2: then run distillation, RL and SFT from the same weak student on N seeds each (the demo's own runs are seed 0) and report the mean and spread (seeds.json, seeds.png; opt-in, several more minutes per seed).")] = 1,
    two_teachers: Annotated[bool, typer.Option(help="Then also distil the weak student from two teachers, each SFT'd on half the problems, with teachers rules sending each problem to its own (two_teachers.json, two_teachers.png; opt-in, about 7 more minutes).")] = False,
    kl_only: Annotated[bool, typer.Option(help="With --seeds: also pure on-policy distillation on every seed (the teacher's KL alone, no reward; method distill-kl-only).")] = False,
    kl_coef: Annotated[list[float] | None, typer.Option(help="With --seeds: also distil at this λ (kl_penalty_coef; repeatable) on every seed, as method distill-klλ (the demo's is 1).")] = None,
) -> None:
    """The mission in miniature, offline: tiny teacher SFT, weak student, on-policy
    distillation (and RL beside it), pass rates measured by the real simulator, and a plot."""
    from dataclasses import replace

    from rtl_trainer.demo import (
        DemoSettings,
        run_curriculum_demo,
        run_demo,
        run_seeds,
        run_two_teachers_demo,
    )

    settings = DemoSettings() if rl else replace(DemoSettings(), rl_steps=0)
    summary = run_demo(out, settings, console=console)
    settings = replace(settings, seeds_kl_coefs=tuple(kl_coef or ()), seeds_kl_only=kl_only)
    console.print(f"summary: {out / 'summary.json'}; plot: {summary['plot']}")
    if seeds > 1:
        run_seeds(out, seeds, settings, console=console)  # prints its tables and where seeds.json is
    if two_teachers:
        pair = run_two_teachers_demo(out, settings, console=console)
        console.print(f"two teachers: {out / 'two_teachers.json'}; plot: {pair['plot']}")
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
