"""``cvdp-gym``: check harnesses, diagnose the toolchain, and (later) evaluate models."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

app = typer.Typer(
    help="CVDP for RL: run harnesses without Docker, check datasets, diagnose the toolchain.",
    no_args_is_help=True,
    add_completion=False,
)
toolchain_app = typer.Typer(help="Install and inspect the local simulation toolchain.", no_args_is_help=True)
app.add_typer(toolchain_app, name="toolchain")
console = Console(width=None if sys.stdout.isatty() else 160)

DatasetArg = Annotated[
    str,
    typer.Argument(help="'bundled', a CVDP .jsonl file (or a folder of them), or 'hf[:PATTERN]' for the Hugging Face dataset."),
]


@app.command()
def doctor() -> None:
    """Print each tool and its version; for anything missing, the command that installs it."""
    from cvdp_gym.toolchain import doctor_rows

    table = Table(title="cvdp-gym toolchain")
    table.add_column("component")
    table.add_column("status")
    table.add_column("version / location")
    table.add_column("fix")
    all_ok = True
    for name, ok, version, fix in doctor_rows():
        all_ok &= ok
        table.add_row(name, "[green]ok[/]" if ok else "[red]missing[/]", version, fix)
    console.print(table)
    if not all_ok:
        console.print("Some components are missing: `scripts/setup.sh` installs everything.")
        raise typer.Exit(1)


@toolchain_app.command("install")
def toolchain_install(
    generation: Annotated[list[str] | None, typer.Option(help="cocotb2 and/or cocotb1 (default: both).")] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even if installed.")] = False,
) -> None:
    """Create the pinned simulation environments (cocotb 2.0.1 like the official image, and cocotb 1.9)."""
    from cvdp_gym.toolchain import GENERATIONS, install_env

    for gen in generation or list(GENERATIONS):
        with console.status(f"installing {gen} environment"):
            env = install_env(gen, force=force)
        console.print(f"{gen}: cocotb {env.package_version('cocotb')} at {env.prefix}")


@toolchain_app.command("path")
def toolchain_path() -> None:
    """Print where the simulation environments live."""
    from cvdp_gym.toolchain import toolchain_dir

    print(toolchain_dir())


def _load(dataset: str, ids: list[str] | None, categories: list[str] | None, difficulty: list[str] | None, lenient: bool):
    from cvdp_gym.data import DatasetError, load_dataset
    from cvdp_gym.data.hub import HubUnavailable

    try:
        return load_dataset(dataset, ids=ids, categories=categories, difficulty=difficulty, lenient=lenient)
    except (DatasetError, HubUnavailable) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None


@app.command()
def check(
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
) -> None:
    """Run every problem's reference solution (and candidates) and report the verdicts."""
    from cvdp_gym.check import build_jobs, load_candidates, run_jobs
    from cvdp_gym.data.bundle import bundled_candidates
    from cvdp_gym.harness.runner import HarnessRunner, RunOptions
    from cvdp_gym.sandbox.bwrap import Limits, SandboxUnavailable

    data = _load(dataset, ids, category, difficulty, lenient)
    extra: list = []
    if dataset == "bundled" and with_bundled_candidates:
        extra.extend(bundled_candidates())
    if candidates is not None:
        extra.extend(load_candidates(candidates))
    job_list = build_jobs(data, extra)
    for skipped in data.skipped:
        console.print(f"[yellow]skipped[/] {skipped.id}: {skipped.reason}")
    try:
        runner = HarnessRunner(options=RunOptions(limits=Limits(wall_s=timeout)))
    except SandboxUnavailable as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None

    progress = Progress(
        TextColumn("[bold]check"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=console,
        transient=not sys.stdout.isatty(),
    )
    with progress:
        task = progress.add_task("check", total=len(job_list), last="")
        outcomes = run_jobs(
            job_list,
            runner,
            jobs_parallel=jobs,
            out_path=out,
            resume=resume,
            on_done=lambda o: progress.update(task, advance=1, last=f"{o.problem_id}/{o.name}: {o.result.verdict}"),
        )

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


@app.command("export-bundled")
def export_bundled(out: Annotated[Path, typer.Argument(help="Where to write the JSONL.")]) -> None:
    """Write the bundled problems as a CVDP JSONL file (official record shapes)."""
    from cvdp_gym.data.bundle import export_jsonl

    console.print(f"wrote {export_jsonl(out)} problems to {out}")


if __name__ == "__main__":
    app()
