"""What the ``cvdp-gym`` commands share: the console, option types, errors, runners, datasets.

Every option that more than one command takes is declared here, once, as an ``Annotated``
type, so its flag and help text cannot drift apart between commands (``rtl-train`` may
import them too). The option groups of :mod:`cvdp_gym.cli.options` are made of them and
give their defaults (a command may show a group with its own). An option whose meaning
differs per command (``--out`` is a JSONL file for ``check`` and a folder for ``eval``)
stays with its command.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

if TYPE_CHECKING:
    from cvdp_gym.data import Dataset
    from cvdp_gym.execution.executors import GradeExecutor
    from cvdp_gym.grading.grader import Grader
    from cvdp_gym.grading.settings import GraderSettings
    from cvdp_gym.harness.runner import HarnessRunner
    from cvdp_gym.tasks.posing import TaskOptions

console = Console(width=None if sys.stdout.isatty() else 160)

# ---------------------------------------------------------------- where and how harnesses run

SandboxOpt = Annotated[str, typer.Option(help="Where harnesses run: bubblewrap (no daemon), docker or podman (rootless).")]
ToolchainOpt = Annotated[
    str | None,
    typer.Option(help="root (the pinned Icarus 13 root, default) or host (the machine's own simulators; a fallback)."),
]
ResumeOpt = Annotated[bool, typer.Option(help="Keep what --out already holds; run only the rest.")]
ReposOpt = Annotated[
    Path | None,
    typer.Option(help="Folder of the git repositories (NAME/ or NAME.bundle) that repository-context problems name; default $CVDP_HEAVY_REPOS_PATH."),
]
JudgeBaseUrlOpt = Annotated[
    str | None,
    typer.Option(help="OpenAI-compatible endpoint of the LLM judge of cid009/cid010 answers; key from CVDP_JUDGE_API_KEY, else OPENAI_API_KEY."),
]
JsonOpt = Annotated[
    str | None,
    typer.Option("--json", help="Write the report (every row) as JSON to this file ('-': to standard output, instead of the tables)."),
]

# ---------------------------------------------------------------- which problems

_DATASET_HELP = (
    "'bundled', a CVDP .jsonl file (or a folder of them), 'hf[:PATTERN]' for the Hugging Face dataset, "
    "or a benchmark: NAME[:TASK,...][?OPTION=VALUE&...] (`cvdp-gym benchmarks list` shows each with its tasks and "
    "options: verilog-eval-v2:spec-to-rtl?shots=0, verilog-eval-v1:human, rtllm-v2?rule=open, chipbench:cpu_ip, ...) "
    "or the path of a copy of one."
)
DatasetArg = Annotated[str, typer.Argument(help=_DATASET_HELP)]
DatasetOpt = Annotated[str, typer.Option("--dataset", help=_DATASET_HELP)]
BenchmarkDirOpt = Annotated[
    Path | None,
    typer.Option(help="A copy of the benchmark the dataset names (default: its environment variable, then `cvdp-gym benchmarks fetch`'s copy)."),
]
IdsOpt = Annotated[list[str] | None, typer.Option("--id", help="Only these problem ids.")]
CategoryOpt = Annotated[list[str] | None, typer.Option(help="Only these categories (cid003 or 3).")]
DifficultyOpt = Annotated[list[str] | None, typer.Option(help="Only these difficulties.")]
LenientOpt = Annotated[bool, typer.Option(help="Skip malformed dataset lines with a warning.")]
TaskOpt = Annotated[
    str,
    typer.Option(
        help="What to ask of each problem: 'design' (as its benchmark poses it), 'testbench' (a self-checking "
        "test bench, scored by the seeded bugs it catches; 'testbench-cocotb': in cocotb) or 'assertion' (SVA properties, checked with Yosys's "
        "formal); the tasks take the problems with a reference design. TASK?coverage=0: without a test bench's coverage (on by default here).",
    ),
]


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``error: message`` as one line (no wrapping, no markup from file names); exit 2."""
    console.print(f"[red]error:[/] {escape(message)}", soft_wrap=True)
    return typer.Exit(code)


def harness_runner(sandbox: str, toolchain: str | None, timeout: float, repos: Path | None = None) -> HarnessRunner:
    """A harness runner for the CLI, or a one-line error and exit 2."""
    from cvdp_gym.data.repos import RepoStore
    from cvdp_gym.harness.runner import HarnessRunner, RunOptions
    from cvdp_gym.sandbox import make_sandbox
    from cvdp_gym.sandbox.base import Limits, SandboxUnavailable

    if repos is not None and not repos.is_dir():
        raise fail(f"--repos {repos}: no such folder")
    try:
        return HarnessRunner(
            make_sandbox(sandbox, toolchain=toolchain), RunOptions(limits=Limits(wall_s=timeout)), repos=RepoStore(repos)
        )
    except (SandboxUnavailable, ValueError) as exc:
        raise fail(str(exc)) from None


def grader_of(settings: GraderSettings) -> Grader:
    """The grader ``settings`` describe (``Grader.from_settings``), or a one-line error and exit 2."""
    from cvdp_gym.errors import ConfigError
    from cvdp_gym.grading.grader import Grader
    from cvdp_gym.sandbox.base import SandboxUnavailable

    repos = settings.repos
    if isinstance(repos, Path) and not repos.is_dir():
        raise fail(f"--repos {repos}: no such folder")
    try:
        return Grader.from_settings(settings)
    except (SandboxUnavailable, ConfigError, ValueError) as exc:
        raise fail(str(exc)) from None


def repos_note(problems: list, runner: HarnessRunner) -> str | None:
    """One line on the repository problems among ``problems``: how many, where their
    repositories are looked for, how many are missing (None when there are none)."""
    heavy = [p for p in problems if p.repo is not None]
    if not heavy:
        return None
    missing = sum(runner.repos.missing(p) is not None for p in heavy)
    found = f"{len(heavy) - missing} found" + (f", {missing} not found (scored unsupported)" if missing else "")
    return f"{len(heavy)} repository problem(s): {runner.repos.where()}; {found}"


def executor_option(spec: str | None, workers: int) -> GradeExecutor | None:
    """The executor a ``--executor`` option names (None: threads in this process)."""
    from cvdp_gym.execution.executor_factory import executor_besides_threads
    from cvdp_gym.execution.jobs import NodeToolchainError

    try:
        return executor_besides_threads(spec, workers=workers)
    except (ValueError, ImportError, NodeToolchainError, ConnectionError, RuntimeError) as exc:
        raise fail(f"--executor {spec}: {exc}") from None


def load_problems(
    dataset: str, ids: list[str] | None, categories: list[str] | None, difficulty: list[str] | None, lenient: bool,
    *, benchmark_dir: Path | None = None, task: str = "design", agentic: bool = False,
) -> Dataset:
    """The selected problems (posed as ``task``: :func:`task_options`); a dataset that cannot be
    read is a one-line error."""
    from cvdp_gym.data import DatasetError, load_dataset
    from cvdp_gym.data.hub import HubUnavailable
    from cvdp_gym.errors import MissingDependencyError
    from cvdp_gym.tasks.names import DESIGN
    from cvdp_gym.tasks.posing import pose

    posing = task_options(task, agentic=agentic)
    try:
        data = load_dataset(
            dataset, ids=ids, categories=categories, difficulty=difficulty, lenient=lenient, benchmark_dir=benchmark_dir,
        )
    except (DatasetError, HubUnavailable, MissingDependencyError) as exc:
        raise fail(str(exc)) from None
    for skipped in data.skipped:
        console.print(f"[yellow]skipped[/] {skipped.id}: {skipped.reason}")
    if posing.task != DESIGN:
        posed = pose(data.problems, posing)
        if not posed:
            raise fail(f"no problem of {dataset} has a reference design, so none can be posed as --task {posing.task}")
        data = dataclasses.replace(data, problems=posed)
    return data


def task_options(task: str, *, agentic: bool = False) -> TaskOptions:
    """``--task TASK[?agentic=1&coverage=1]`` as the tasks read it: a test bench's coverage on unless
    it says ``coverage=0``, ``agentic`` as the command plays; a one-line error when unknown."""
    from cvdp_gym.tasks.names import TASKS
    from cvdp_gym.tasks.posing import TaskOptions

    try:
        return TaskOptions.parse(task, agentic=agentic, coverage=True)
    except ValueError as exc:  # ConfigError, or DatasetError for an option's value
        name = task.partition("?")[0]
        raise fail(f"unknown --task {name!r}; expected one of {', '.join(TASKS)}" if name not in TASKS else f"--task {task}: {exc}") from None


def progress_bar(label: str) -> Progress:
    """The progress bar of a long command: count, elapsed time and the last item done."""
    return Progress(
        TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=console, transient=not sys.stdout.isatty(),
    )
