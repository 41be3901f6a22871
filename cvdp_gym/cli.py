"""``cvdp-gym``: check harnesses, diagnose the toolchain, and (later) evaluate models."""

from __future__ import annotations

import os
import shlex
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

if TYPE_CHECKING:
    from cvdp_gym.check import CheckInterrupted
    from cvdp_gym.data import Problem
    from cvdp_gym.eval import ChatSettings
    from cvdp_gym.grading import Grader

app = typer.Typer(
    help="CVDP for RL: run harnesses on the pinned simulation root or in Docker, check datasets, evaluate models.",
    no_args_is_help=True,
    add_completion=False,
)
toolchain_app = typer.Typer(help="Install and inspect the local simulation toolchain.", no_args_is_help=True)
app.add_typer(toolchain_app, name="toolchain")
console = Console(width=None if sys.stdout.isatty() else 160)

SandboxOpt = Annotated[str, typer.Option(help="Where harnesses run: bubblewrap (no daemon) or docker.")]
ToolchainOpt = Annotated[
    str | None,
    typer.Option(help="root (the pinned Icarus 13 root, default) or host (the machine's own simulators; a fallback)."),
]

DatasetArg = Annotated[
    str,
    typer.Argument(help="'bundled', a CVDP .jsonl file (or a folder of them), or 'hf[:PATTERN]' for the Hugging Face dataset."),
]


def _toolchain_fail(exc: Exception) -> typer.Exit:
    console.print(f"[red]error:[/] {exc}")
    return typer.Exit(2)


@app.command()
def doctor(toolchain: ToolchainOpt = None) -> None:
    """Print each tool and its version; for anything missing, the command that installs it."""
    from cvdp_gym.toolchain import detect, doctor_rows

    try:
        tc = detect(toolchain)
    except ValueError as exc:
        raise _toolchain_fail(exc) from None
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
        raise _toolchain_fail(exc) from None
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
        raise _toolchain_fail(RuntimeError("the simulation root is not built; run: cvdp-gym toolchain install"))
    try:
        with console.status("importing the simulation root into Docker"):
            tag = DockerSandbox(tc).ensure_standin()
    except SandboxUnavailable as exc:
        raise _toolchain_fail(exc) from None
    print(tag)


def _runner(sandbox: str, toolchain: str | None, timeout: float):
    """A harness runner for the CLI, or a one-line error and exit 2."""
    from cvdp_gym.harness.runner import HarnessRunner, RunOptions
    from cvdp_gym.sandbox import make_sandbox
    from cvdp_gym.sandbox.bwrap import Limits, SandboxUnavailable

    try:
        return HarnessRunner(make_sandbox(sandbox, toolchain=toolchain), RunOptions(limits=Limits(wall_s=timeout)))
    except (SandboxUnavailable, ValueError) as exc:
        raise _toolchain_fail(exc) from None


def _fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``error: message`` as one line (no wrapping, no markup from file names); exit 2."""
    console.print(f"[red]error:[/] {escape(message)}", soft_wrap=True)
    return typer.Exit(code)


def _load(dataset: str, ids: list[str] | None, categories: list[str] | None, difficulty: list[str] | None, lenient: bool):
    from cvdp_gym.data import DatasetError, load_dataset
    from cvdp_gym.data.hub import HubUnavailable

    try:
        return load_dataset(dataset, ids=ids, categories=categories, difficulty=difficulty, lenient=lenient)
    except (DatasetError, HubUnavailable) as exc:
        raise _fail(str(exc)) from None


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
) -> None:
    """Run every problem's reference solution (and candidates) and report the verdicts."""
    from cvdp_gym.check import CheckInterrupted, build_jobs, load_candidates, run_jobs
    from cvdp_gym.data import DatasetError
    from cvdp_gym.data.bundle import bundled_candidates
    from cvdp_gym.jsonl import JsonlError

    data = _load(dataset, ids, category, difficulty, lenient)
    extra: list = []
    if dataset == "bundled" and with_bundled_candidates:
        extra.extend(bundled_candidates())
    if candidates is not None:
        try:
            extra.extend(load_candidates(candidates))
        except DatasetError as exc:
            raise _fail(str(exc)) from None
    job_list = build_jobs(data, extra)
    for skipped in data.skipped:
        console.print(f"[yellow]skipped[/] {skipped.id}: {skipped.reason}")
    runner = _runner(sandbox, toolchain, timeout)

    progress = Progress(
        TextColumn("[bold]check"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=console,
        transient=not sys.stdout.isatty(),
    )
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
            )
    except CheckInterrupted as stop:
        _check_interrupted(stop, out, _resume_command(ctx))
    except JsonlError as exc:  # --resume with a results file we cannot read
        raise _fail(str(exc)) from None

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


def _eval_fail(message: str) -> typer.Exit:
    return _fail(message)


def _eval_grader(timeout: float, cache: Path | None, sandbox: str, toolchain: str | None) -> Grader:
    """One grader for the whole run (no cache unless asked: a cache would hide re-grading)."""
    from cvdp_gym.grading import Grader

    return Grader(_runner(sandbox, toolchain, timeout), cache=cache)


def _eval_file_plan(path: Path, problems: list[Problem]) -> tuple[list[tuple[str, int]], Callable, list[str]]:
    """Samples to grade, the coroutine that grades them, and notes (unknown ids, unanswered)."""
    from cvdp_gym.eval import ResponsesFileError, eval_responses, read_responses

    try:
        answers = read_responses(path)
    except ResponsesFileError as exc:
        raise _eval_fail(str(exc)) from None
    by_id = {p.id: p for p in problems}
    unknown = sorted({a.id for a in answers if a.id not in by_id})
    notes = []
    if unknown:
        shown = ", ".join(unknown[:10]) + (", ..." if len(unknown) > 10 else "")
        notes.append(f"skipped answers to {len(unknown)} id(s) not among the selected problems: {shown}")
    unanswered = set(by_id) - {a.id for a in answers}
    if unanswered:
        notes.append(f"{len(unanswered)} selected problem(s) have no answer in {path}")
    answers = [a for a in answers if a.id in by_id]
    return [(a.id, a.sample) for a in answers], lambda ev: eval_responses(ev, by_id, answers), notes


def _eval_endpoint_plan(problems: list[Problem], settings: ChatSettings, samples: int) -> tuple[list[tuple[str, int]], Callable, list[str]]:
    """Samples to fetch and grade, the coroutine that does it, and notes."""
    from cvdp_gym.eval import eval_endpoint

    answerable = [p for p in problems if p.targets]
    notes = []
    if len(answerable) < len(problems):
        notes.append(f"left out {len(problems) - len(answerable)} problem(s) with no target files to answer")
    keys = [(p.id, s) for p in answerable for s in range(samples)]
    return keys, lambda ev: eval_endpoint(ev, answerable, settings, samples), notes


def _eval_run(make_evaluator: Callable, keys: list[tuple[str, int]], start: Callable) -> tuple[list[dict], Path]:
    """Run the evaluation under a progress bar; rows in key order and the results path."""
    import asyncio

    progress = Progress(
        TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=console, transient=not sys.stdout.isatty(),
    )
    with progress:
        task = progress.add_task("eval", total=len(keys), last="")
        ev = make_evaluator(lambda r: progress.update(task, advance=1, last=f"{r['id']}#{r['sample']}: {r['verdict']}"))
        progress.update(task, completed=sum(ev.is_done(pid, s) for pid, s in keys))
        try:
            return asyncio.run(start(ev)), ev.results_path
        except KeyboardInterrupt:
            console.print(f"[yellow]interrupted:[/] finished samples are in {ev.results_path}; rerun with --resume")
            raise typer.Exit(130) from None


def _eval_report(rows: list[dict], k: list[int] | None, meta: dict, out: Path) -> None:
    """Choose the k values, then write and print the report."""
    from cvdp_gym.eval import build_report, default_ks, print_report, write_report
    from cvdp_gym.eval.report import choose_ks
    from cvdp_gym.eval.run import RETRIED

    counts: dict[str, int] = {}
    for row in rows:
        counts[row["id"]] = counts.get(row["id"], 0) + 1
    most = max(counts.values(), default=0)
    ks, dropped = choose_ks(k, most, default_ks(most))
    if dropped:
        meta["notes"].append(f"pass@k not reported for k = {', '.join(map(str, dropped))}: no problem has that many samples")
    retried = sum(r["verdict"] in RETRIED for r in rows)
    if retried:
        meta["notes"].append(f"{retried} sample(s) could not be fetched or graded and count as failures; --resume tries them again")
    report = build_report(rows, ks, meta)
    png_skipped = write_report(report, out)
    print_report(report, console)
    if png_skipped:
        console.print(f"[yellow]note:[/] {png_skipped}")


def _eval_mark_run(out: Path, meta: dict, resume: bool) -> None:
    """Record what this run scores, and warn when --resume would mix in another source's samples."""
    import json

    path, mark = out / "run.json", {key: meta[key] for key in ("source", "dataset")}
    if resume and path.exists():
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            before = {}
        for key, value in mark.items():
            if before.get(key, value) != value:
                console.print(f"[yellow]warning:[/] resuming a run whose {key} was {before[key]!r}, now {value!r}")
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(mark) + "\n", encoding="utf-8")


@app.command("eval")
def eval_command(
    dataset: DatasetArg = "bundled",
    responses: Annotated[Path | None, typer.Option(help="JSONL of answers: {id, response, sample?}.")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1.")] = None,
    model: Annotated[str | None, typer.Option(help="Model name sent to --base-url.")] = None,
    samples: Annotated[int, typer.Option("--samples", "-n", help="Answers per problem from --base-url.")] = 1,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.2,
    max_tokens: Annotated[int, typer.Option(help="max_tokens per answer.")] = 4096,
    concurrency: Annotated[int, typer.Option(help="Chat requests in flight at once.")] = 8,
    api_key: Annotated[str | None, typer.Option(envvar="OPENAI_API_KEY", show_default=False, help="Bearer token for --base-url.")] = None,
    retries: Annotated[int, typer.Option(help="Retries of a request after 429/5xx/connection errors.")] = 5,
    retry_wait: Annotated[float, typer.Option(help="First backoff wait, seconds (doubles each retry).")] = 1.0,
    request_timeout: Annotated[float, typer.Option(help="Timeout of one chat request, seconds.")] = 600.0,
    ids: Annotated[list[str] | None, typer.Option("--id", help="Only these problem ids.")] = None,
    category: Annotated[list[str] | None, typer.Option(help="Only these categories (cid003 or 3).")] = None,
    difficulty: Annotated[list[str] | None, typer.Option(help="Only these difficulties.")] = None,
    reward: Annotated[str, typer.Option(help="Reward in results and report: shaped, partial or binary.")] = "shaped",
    k: Annotated[list[int] | None, typer.Option("-k", help="k values for pass@k (default: 1, 2, 5, 10, ... up to n, and n).")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Answers graded in parallel.")] = 2,
    cache: Annotated[Path | None, typer.Option(help="SQLite grade cache (default: none).")] = None,
    out: Annotated[Path, typer.Option(help="Folder for results.jsonl and report.{json,md,png}.")] = Path("runs/eval"),
    resume: Annotated[bool, typer.Option(help="Keep finished samples in --out; grade (or fetch) only the rest.")] = False,
    timeout: Annotated[float, typer.Option(help="Wall-time limit per harness service, seconds.")] = 300.0,
    lenient: Annotated[bool, typer.Option(help="Skip malformed dataset lines with a warning.")] = False,
    sandbox: SandboxOpt = "bubblewrap",
    toolchain: ToolchainOpt = None,
) -> None:
    """Score answers (a responses file, or a model behind an OpenAI-compatible endpoint) and report pass@k."""
    import time

    from cvdp_gym.eval import ChatSettings, Evaluator
    from cvdp_gym.grading import REWARDS, make_reward

    if (responses is None) == (base_url is None):
        raise _eval_fail("give either --responses FILE or --base-url URL --model NAME")
    if base_url is not None and not model:
        raise _eval_fail("--base-url needs --model")
    if reward not in REWARDS:
        raise _eval_fail(f"unknown reward {reward!r}; expected one of {', '.join(sorted(REWARDS))}")
    if samples < 1 or any(v < 1 for v in k or []):
        raise _eval_fail("-n and -k must be at least 1")
    data = _load(dataset, ids, category, difficulty, lenient)
    for skipped in data.skipped:
        console.print(f"[yellow]skipped[/] {skipped.id}: {skipped.reason}")
    meta: dict = {"source": f"responses {responses}", "dataset": data.source, "reward": reward}
    if responses is not None:
        keys, start, notes = _eval_file_plan(responses, data.problems)
    else:
        settings = ChatSettings(
            base_url=base_url or "", model=model or "", api_key=api_key, temperature=temperature,
            max_tokens=max_tokens, concurrency=concurrency, timeout_s=request_timeout,
            retries=retries, retry_wait_s=retry_wait,
        )
        keys, start, notes = _eval_endpoint_plan(data.problems, settings, samples)
        meta.update(source=f"{model} at {base_url}", samples_per_problem=samples, temperature=temperature, max_tokens=max_tokens)
    for note in notes:
        console.print(f"[yellow]note:[/] {note}")
    grader = _eval_grader(timeout, cache, sandbox, toolchain)
    _eval_mark_run(out, meta, resume)
    began = time.monotonic()
    rows, results_path = _eval_run(
        lambda on_done: Evaluator(grader, make_reward(reward), out, jobs=jobs, resume=resume, on_done=on_done), keys, start
    )
    meta.update(graded=len(rows), wall_s=round(time.monotonic() - began, 1), notes=notes)
    _eval_report(rows, k, meta, out)
    console.print(f"results in {results_path}; report in {out / 'report.md'}")

if __name__ == "__main__":
    app()
