"""``cvdp-gym debug``: one problem's grading workspace in a folder, its sandbox command lines,
a regrade of the folder as edited (``--rerun``) and a shell in the same sandbox (``--shell``).

The library logic is :mod:`cvdp_gym.debug`; this module reads the options and prints.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from cvdp_gym.cli._options import DatasetOpt, console, fail, grader_of
from cvdp_gym.cli.options import AnswerOptions, Group, HarnessOptions, ProblemOptions, grouped

if TYPE_CHECKING:
    from cvdp_gym.debug import DebugFolder
    from cvdp_gym.grading.grader import Grader

#: Characters of the log tail ``--rerun`` prints.
TAIL_CHARS = 2000


@grouped
def debug_command(
    problem_id: Annotated[str, typer.Argument(help="The problem to debug.")],
    dataset: DatasetOpt = "bundled",
    *,
    problems: Annotated[ProblemOptions, Group(only=("benchmark_dir",))],
    source: AnswerOptions,
    out: Annotated[Path | None, typer.Option(help="The debug folder (default: debug/PROBLEM_ID).")] = None,
    force: Annotated[bool, typer.Option(help="Replace a non-empty --out folder.")] = False,
    rerun: Annotated[bool, typer.Option(help="Grade the folder as it now is; print verdict, failure class, tests and log tail.")] = False,
    shell: Annotated[bool, typer.Option(help="Open an interactive shell in the same sandbox as the first harness service.")] = False,
    service: Annotated[str | None, typer.Option(help="With --shell: the harness service whose sandbox to open (default: the first).")] = None,
    harness: Annotated[HarnessOptions, Group(only=("sandbox", "toolchain", "timeout", "repos"))],
) -> None:
    """Lay out a problem's workspace (context, the answer's files, harness) in a folder, print
    the sandbox commands grading runs, and regrade it (--rerun) or open a shell in it (--shell).

    Without --answer or --run the answer is the problem's reference solution. An existing
    debug folder is used as it is with --rerun or --shell alone.
    """
    from cvdp_gym.debug import (
        Answer,
        answer_from_file,
        answer_from_run,
        materialise,
        open_folder,
        write_commands,
    )
    from cvdp_gym.errors import ConfigError, CvdpGymError

    try:
        source.validate()
    except ConfigError as exc:
        raise fail(str(exc)) from None
    data = replace(problems, ids=[problem_id]).load(dataset)
    try:
        problem = data[problem_id]
    except KeyError:
        raise fail(f"no problem {problem_id!r} in {dataset}") from None
    folder_path = out if out is not None else Path("debug") / problem_id
    grader = grader_of(harness.grader_settings(cache=False))
    runner = grader.runner
    reuse = not source.named and (rerun or shell) and not force and folder_path.is_dir() and any(folder_path.iterdir())
    try:
        if reuse:
            folder = open_folder(problem, folder_path)
            lines = write_commands(folder, runner)  # this sandbox's lines, for the folder as it is
        else:
            if source.answer is not None:
                chosen = answer_from_file(problem, source.answer)
            elif source.run is not None:
                chosen = answer_from_run(problem, source.run, source.sample)
            elif problem.reference is not None:
                chosen = Answer(dict(problem.reference), "the reference solution")
            else:
                chosen = Answer({}, "no answer (the dataset has no reference solution)")
            folder = materialise(problem, chosen, folder_path, runner, force=force)
            lines = write_commands(folder, runner)
            console.print(f"[bold]{escape(problem.id)}[/]: {escape(str(folder.root))} ({escape(chosen.source)}; files: {escape(', '.join(folder.manifest['files']) or 'none')})", soft_wrap=True)
            if not (rerun or shell):
                for label, line in lines:
                    console.print(f"[dim]# {escape(label)}[/]", soft_wrap=True)
                    console.print(escape(shlex.join(line)) if isinstance(line, list) else f"# cannot run here: {escape(line)}", soft_wrap=True, highlight=False)
                console.print(f"[dim]# also in {escape(str(folder.root / 'commands.sh'))}; regrade with --rerun, open a shell with --shell[/]", soft_wrap=True)
        if rerun:
            _rerun(folder, grader)
        if shell:
            from cvdp_gym.debug import shell as open_shell

            raise typer.Exit(open_shell(folder, runner, service))
    except CvdpGymError as exc:
        raise fail(str(exc)) from None


def _rerun(folder: DebugFolder, grader: Grader) -> None:
    """Grade the folder and print what eval prints about a sample, and the log tail."""
    from cvdp_gym.debug import rerun

    result = rerun(folder, grader)
    verdict = "passed" if result.passed else (result.failure_class or "failed")
    colour = "green" if result.passed else "red"
    console.print(f"verdict: [{colour}]{escape(verdict)}[/]", soft_wrap=True)
    console.print(f"failure class: {escape(result.failure_class or '-')}", soft_wrap=True)
    console.print(f"tests: {result.tests.passed} passed, {result.tests.failed} failed, {result.tests.total} total", soft_wrap=True)
    console.print("stages: " + ", ".join(f"{s.name} {'ok' if s.passed else '-' if s.passed is None else 'FAILED'}" for s in result.stages), soft_wrap=True)
    if result.reason:
        console.print(f"reason: {escape(result.reason)}", soft_wrap=True)
    recorded = folder.manifest.get("recorded") or {}
    if recorded.get("verdict"):
        same = "same" if recorded["verdict"] == verdict else "DIFFERENT"
        console.print(f"eval recorded: {escape(str(recorded['verdict']))} ({same})", soft_wrap=True)
    if result.log_tail.strip():
        console.print("log tail:", soft_wrap=True)
        console.print(escape(result.log_tail[-TAIL_CHARS:]), soft_wrap=True, highlight=False)
