"""``cvdp-gym``: check harnesses, diagnose the toolchain, evaluate models (``eval``: :mod:`cvdp_gym.cli_eval`)."""

from __future__ import annotations

import os
import shlex
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cvdp_gym.cli_common import (
    DatasetArg,
    ExecutorOpt,
    SandboxOpt,
    ToolchainOpt,
    console,
    executor_option,
    fail,
    harness_runner,
    load_problems,
    progress_bar,
)
from cvdp_gym.cli_eval import eval_command

if TYPE_CHECKING:
    from cvdp_gym.check import CheckInterrupted

app = typer.Typer(
    help="CVDP for RL: run harnesses on the pinned simulation root or in Docker, check datasets, evaluate models.",
    no_args_is_help=True,
    add_completion=False,
)
toolchain_app = typer.Typer(help="Install and inspect the local simulation toolchain.", no_args_is_help=True)
app.add_typer(toolchain_app, name="toolchain")


@app.command()
def doctor(toolchain: ToolchainOpt = None) -> None:
    """Print each tool and its version; for anything missing, the command that installs it."""
    from cvdp_gym.toolchain import detect, doctor_rows

    try:
        tc = detect(toolchain)
    except ValueError as exc:
        raise fail(str(exc)) from None
    table = Table(title=f"cvdp-gym toolchain ({tc.kind})")
    table.add_column("component")
    table.add_column("status")
    table.add_column("version / location")
    table.add_column("fix")
    all_ok = True
    for name, ok, version, fix in doctor_rows(tc):
        all_ok &= ok
        table.add_row(name, "[green]ok[/]" if ok else "[red]missing[/]", version, fix)
    console.print(table)
    if not all_ok:
        console.print("Some components are missing: `scripts/setup.sh` installs everything.")
        raise typer.Exit(1)


@toolchain_app.command("install")
def toolchain_install(
    toolchain: Annotated[str, typer.Option(help="root: build the pinned simulation root (Icarus 13); host: venvs for the host's simulators.")] = "root",
    generation: Annotated[list[str] | None, typer.Option(help="host only: cocotb2 and/or cocotb1 (default: both).")] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even if installed.")] = False,
) -> None:
    """Build the simulation toolchain: the pinned root (default) or the host fallback's environments."""
    from cvdp_gym.toolchain import GENERATIONS, RootBuildError, install

    try:
        with console.status(f"installing the {toolchain} toolchain"):
            tc = install(toolchain, generations=tuple(generation or GENERATIONS), force=force, log=console.print)
    except (RootBuildError, ValueError) as exc:
        raise fail(str(exc)) from None
    for key, value in tc.versions().items():
        console.print(f"{key}: {value}")


@toolchain_app.command("path")
def toolchain_path(toolchain: ToolchainOpt = None) -> None:
    """Print where the simulation root (or the host environments) live."""
    from cvdp_gym.toolchain import detect, toolchain_dir

    tc = detect(toolchain)
    print(tc.root if tc.root is not None else toolchain_dir())


@toolchain_app.command("docker-image")
def toolchain_docker_image() -> None:
    """Import the simulation root as the Docker backend's stand-in image (idempotent); print its tag."""
    from cvdp_gym.sandbox.bwrap import SandboxUnavailable
    from cvdp_gym.sandbox.docker import DockerSandbox
    from cvdp_gym.toolchain import detect

    tc = detect("root")
    if tc.root is None or tc.lock is None:
        raise fail("the simulation root is not built; run: cvdp-gym toolchain install")
    try:
        with console.status("importing the simulation root into Docker"):
            tag = DockerSandbox(tc).ensure_standin()
    except SandboxUnavailable as exc:
        raise fail(str(exc)) from None
    print(tag)


def _resume_command(ctx: typer.Context) -> str:
    """The command that continues this run: every option given (or not at its default), then --resume.

    Built from the parsed parameters rather than ``sys.argv``, so it is the same however
    the command was started (console script, ``python -m``, a test runner). Parameters
    are read by duck typing: typer ships its own copy of click's classes.
    """
    words = ["cvdp-gym", ctx.info_name or "check"]
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        kind = getattr(param, "param_type_name", "")
        if kind == "argument":
            words.append(str(value))
            continue
        if kind != "option" or param.name == "resume" or value is None:
            continue
        if value == param.default and param.name != "out":
            continue
        flag = max(param.opts, key=len)
        if getattr(param, "is_flag", False):
            words.append(flag if value else max(param.secondary_opts, key=len))
        elif param.multiple:
            for item in value:
                words += [flag, str(item)]
        else:
            words += [flag, str(value)]
    return shlex.join([*words, "--resume"])


@app.command()
def check(
    ctx: typer.Context,
    dataset: DatasetArg = "bundled",
    candidates: Annotated[Path | None, typer.Option(help="JSONL of extra candidates: {id, name, files, expected}.")] = None,
    with_bundled_candidates: Annotated[bool, typer.Option("--bundled-candidates/--no-bundled-candidates", help="For the bundled set, also run its known-wrong candidates.")] = True,
    ids: Annotated[list[str] | None, typer.Option("--id", help="Only these problem ids.")] = None,
    category: Annotated[list[str] | None, typer.Option(help="Only these categories (cid003 or 3).")] = None,
    difficulty: Annotated[list[str] | None, typer.Option(help="Only these difficulties.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Harness runs in parallel.")] = 1,
    out: Annotated[Path, typer.Option(help="Results JSONL, written as runs finish.")] = Path("runs/check.jsonl"),
    resume: Annotated[bool, typer.Option(help="Skip jobs already in --out.")] = False,
    timeout: Annotated[float, typer.Option(help="Wall-time limit per service, seconds.")] = 300.0,
    lenient: Annotated[bool, typer.Option(help="Skip malformed dataset lines with a warning.")] = False,
    sandbox: SandboxOpt = "bubblewrap",
    toolchain: ToolchainOpt = None,
    executor: ExecutorOpt = None,
) -> None:
    """Run every problem's reference solution (and candidates) and report the verdicts."""
    from cvdp_gym.check import CheckInterrupted, build_jobs, load_candidates, run_jobs
    from cvdp_gym.data import DatasetError
    from cvdp_gym.data.bundle import bundled_candidates
    from cvdp_gym.jsonl import JsonlError

    data = load_problems(dataset, ids, category, difficulty, lenient)
    extra: list = []
    if dataset == "bundled" and with_bundled_candidates:
        extra.extend(bundled_candidates())
    if candidates is not None:
        try:
            extra.extend(load_candidates(candidates))
        except DatasetError as exc:
            raise fail(str(exc)) from None
    job_list = build_jobs(data, extra)
    runner = harness_runner(sandbox, toolchain, timeout)
    pool = executor_option(executor, jobs)
    if pool is not None:
        jobs = max(jobs, pool.capacity)

    progress = progress_bar("check")
    try:
        with progress:
            task = progress.add_task("check", total=len(job_list), last="")
            outcomes = run_jobs(
                job_list,
                runner,
                jobs_parallel=jobs,
                out_path=out,
                resume=resume,
                on_done=lambda o: progress.update(task, advance=1, last=escape(f"{o.problem_id}/{o.name}: {o.result.verdict}")),
                executor=pool,
            )
    except CheckInterrupted as stop:
        _check_interrupted(stop, out, _resume_command(ctx))
    except JsonlError as exc:  # --resume with a results file we cannot read
        raise fail(str(exc)) from None
    finally:
        if pool is not None:
            pool.close()

    table = Table(title=f"cvdp-gym check: {data.source} ({len(outcomes)} runs)")
    for column in ("problem", "candidate", "verdict", "expected", "tests", "time (s)", "reason"):
        table.add_column(column, overflow="fold")
    for o in outcomes:
        r = o.result
        tests = f"{r.tests.passed}/{r.tests.total}" if r.tests.total else "-"
        style = "green" if o.matches else "red"
        table.add_row(
            o.problem_id, o.name, f"[{style}]{r.verdict}[/]", o.expected, tests, f"{r.wall_s:.2f}", r.reason[:120]
        )
    console.print(table)
    mismatches = [o for o in outcomes if not o.matches]
    refs = [o for o in outcomes if o.name == "reference"]
    times = [o.result.wall_s for o in refs if o.result.passed]
    console.print(
        f"references passed: {sum(o.result.passed for o in refs)}/{len(refs)}; "
        f"verdicts as expected: {len(outcomes) - len(mismatches)}/{len(outcomes)}"
        + (f"; median reference time {statistics.median(times):.2f} s" if times else "")
        + f"; results in {out}"
    )
    if mismatches:
        raise typer.Exit(1)


#: After Ctrl-C, how long a run whose sandbox is killed may take to clean up before we exit anyway.
CLEANUP_GRACE_S = 5.0


def _check_interrupted(stop: CheckInterrupted, out: Path, command: str) -> None:
    """Say what was kept and how to go on, then exit 130 (the shell's code for Ctrl-C)."""
    console.print(
        f"[yellow]interrupted:[/] {len(stop.finished)} run(s) finished and are in {escape(str(out))}; "
        f"{stop.unfinished} cancelled or killed",
        soft_wrap=True,
    )
    console.print(f"resume with: {escape(command)}", soft_wrap=True, highlight=False)
    # Normally every run has stopped by now. One still cleaning up (its sandbox is already
    # killed) would hold the exit, as the pool joins its threads: give it a few seconds to
    # remove its run folder and cgroups, then leave without it.
    if stop.stuck and stop.settle(CLEANUP_GRACE_S):
        console.print(f"[yellow]note:[/] {stop.stuck} run(s) still cleaning up; exiting without them")
        console.file.flush()
        sys.stderr.flush()
        os._exit(130)
    raise typer.Exit(130)


@app.command("export-bundled")
def export_bundled(out: Annotated[Path, typer.Argument(help="Where to write the JSONL.")]) -> None:
    """Write the bundled problems as a CVDP JSONL file (official record shapes)."""
    from cvdp_gym.data.bundle import export_jsonl

    console.print(f"wrote {export_jsonl(out)} problems to {out}")


app.command("eval")(eval_command)


if __name__ == "__main__":
    app()
