"""``cvdp-gym benchmarks list|fetch|path``: the benchmarks beside CVDP and where their files are.

``list`` prints each benchmark (tasks, grader, simulator, pinned upstream commit) and where
its files would be read from here; ``fetch`` brings the pinned commit into the user cache,
verified against its checksum; ``path`` prints the folder a dataset spec would read. The
logic is :mod:`cvdp_gym.data.benchmarks`; this module parses options and prints.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cvdp_gym.cli._options import BenchmarkDirOpt, console, fail


def benchmarks_list() -> None:
    """Every benchmark beside CVDP: its tasks, grader, simulator, upstream, and its files here."""
    from cvdp_gym.data.benchmarks import BENCHMARKS, locate
    from cvdp_gym.errors import DatasetError

    table = Table(title="benchmarks beside CVDP")
    for column in ("name", "tasks", "grader", "simulator", "upstream (pinned)", "files here"):
        table.add_column(column, overflow="fold")
    for bench in BENCHMARKS.values():
        try:
            where = f"[green]{escape(str(locate(bench)))}[/]"
        except DatasetError:
            fetchable = getattr(bench, "hub_repo", True)  # a training set downloads only from its hub dataset
            how = f"cvdp-gym benchmarks fetch {bench.name}" if fetchable else f"{bench.name}?path=FILE"
            where = f"[yellow]not here[/]: {how}, or set {bench.env_var}"
        upstream = f"{bench.pin.url} @ {bench.pin.commit[:12]} ({bench.pin.ref})"
        table.add_row(bench.name, ", ".join(bench.tasks) or "-", bench.grader, bench.toolchain, upstream, where)
    console.print(table)


def benchmarks_fetch(
    names: Annotated[list[str], typer.Argument(help="Benchmarks to fetch, by name (`cvdp-gym benchmarks list` shows them).")],
    url: Annotated[str | None, typer.Option(help="Fetch the pinned commit from this mirror instead (git or a .tar.gz archive); the checksum still decides.")] = None,
    force: Annotated[bool, typer.Option(help="Fetch again even if the cache holds it.")] = False,
) -> None:
    """Fetch each benchmark's pinned commit into the user cache, verified against its checksum."""
    from cvdp_gym.data.benchmarks import benchmark, fetch
    from cvdp_gym.errors import DatasetError

    try:
        chosen = [benchmark(name) for name in names]
        for bench in chosen:
            with console.status(f"fetching {bench.title} ({bench.pin.commit[:12]})"):
                fetch(bench, url=url, force=force, log=lambda line: console.print(escape(line)))
    except DatasetError as exc:
        raise fail(str(exc)) from None


def benchmarks_path(
    spec: Annotated[str, typer.Argument(help="A benchmark or dataset spec (verilog-eval-v2:spec-to-rtl).")],
    benchmark_dir: BenchmarkDirOpt = None,
) -> None:
    """Print the folder a benchmark's files are read from (exit 2 with how to get them when absent)."""
    from cvdp_gym.data.benchmarks import benchmark, locate, parse_spec
    from cvdp_gym.errors import DatasetError

    try:
        print(locate(benchmark(parse_spec(spec).name), benchmark_dir))
    except DatasetError as exc:
        raise fail(str(exc)) from None
