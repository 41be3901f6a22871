"""``cvdp-gym quality list|fetch|measure``: the standard-cell libraries and one design's quality.

``list`` shows the pinned libraries and whether each is here, and whether the quality tools
(OpenSTA, nextpnr) are installed; ``fetch`` brings pinned libraries into the user cache,
verified against their SHA-256; ``measure`` runs a design (Verilog/SystemVerilog files)
through the ASIC or FPGA flow in the sandbox and prints its figures, and with
``--reference`` its score against that design. The logic is :mod:`cvdp_gym.quality` and
:mod:`cvdp_gym.grading.quality`; this module parses options and prints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cvdp_gym.cli._options import SandboxOpt, ToolchainOpt, console, fail
from cvdp_gym.cli.options import Group, QualityOptions, grouped


def quality_list() -> None:
    """The pinned standard-cell libraries, whether each is fetched, and the quality tools."""
    from cvdp_gym.quality.liberty import LIBERTIES, OPENSTA_COMMIT, fetched
    from cvdp_gym.toolchain import quality_tools

    table = Table(title=f"standard-cell libraries (OpenSTA examples @ {OPENSTA_COMMIT[:12]})")
    for column in ("name", "library", "sha256 (pinned)", "here"):
        table.add_column(column, overflow="fold")
    for lib in LIBERTIES.values():
        here = fetched(lib.name)
        where = f"[green]{escape(str(here.path))}[/]" if here else f"[yellow]not here[/]: cvdp-gym quality fetch {lib.name}"
        table.add_row(lib.name, lib.description, lib.sha256[:16], where)
    console.print(table)
    state = "[green]installed[/]" if quality_tools.ready() else "[yellow]absent[/]: cvdp-gym toolchain install"
    console.print(f"quality tools (OpenSTA, nextpnr-ice40) at {escape(str(quality_tools.folder()))}: {state}")


def quality_fetch(
    names: Annotated[list[str], typer.Argument(help="Libraries to fetch: nangate45, sky130hd.")],
    source: Annotated[str | None, typer.Option("--from", help="Fetch from this URL or local copy of the same .lib.gz instead; the SHA-256 still decides (one library at a time).")] = None,
) -> None:
    """Fetch pinned standard-cell libraries into the user cache, verified against their SHA-256."""
    from cvdp_gym.errors import ConfigError
    from cvdp_gym.quality.liberty import fetch_liberty

    if source is not None and len(names) != 1:
        raise fail("--from names one library's file: give one name")
    try:
        for name in names:
            with console.status(f"fetching liberty {name}"):
                lib = fetch_liberty(name, source)
            console.print(f"{name}: {escape(str(lib.path))}")
    except ConfigError as exc:
        raise fail(str(exc)) from None


@grouped
def quality_measure(
    files: Annotated[list[Path], typer.Argument(help="The design's Verilog/SystemVerilog files.")],
    top: Annotated[str, typer.Option(help="The top module.")],
    reference: Annotated[list[Path] | None, typer.Option(help="The reference design's files: score the design against it.")] = None,
    sandbox: SandboxOpt = "bubblewrap",
    toolchain: ToolchainOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the measurements (and score) as JSON.")] = False,
    *,
    options: Annotated[QualityOptions, Group(quality="asic")],
) -> None:
    """Measure one design's area, timing, power and warnings (ASIC) or resources and fmax (FPGA)."""
    from cvdp_gym.cli._options import harness_runner
    from cvdp_gym.errors import ConfigError
    from cvdp_gym.grading.quality import QualityStage
    from cvdp_gym.quality.scores import score_measurements

    def read(paths: list[Path]) -> dict[str, str]:
        try:
            return {p.name: p.read_text() for p in paths}
        except OSError as exc:
            raise fail(f"cannot read {exc.filename}: {exc.strerror}") from None

    try:
        settings = options.settings()
        assert settings is not None
        stage = QualityStage(harness_runner(sandbox, toolchain, 300.0, None).sandbox, settings)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    measured = {"design": stage.measure(read(files), top)}
    if reference:
        measured["reference"] = stage.measure(read(reference), top)
    out = {name: m.to_dict() for name, m in measured.items()}
    if reference:
        out["score"] = score_measurements(measured["design"], measured["reference"]).to_dict()
    if as_json:
        console.print_json(json.dumps(out))
        return
    table = Table(title=f"design quality ({settings.flow}, clock {settings.clock_ns} ns)")
    table.add_column("figure")
    for name in measured:
        table.add_column(name, justify="right", overflow="fold")
    keys = sorted({k for m in out.values() if isinstance(m, dict) and m.get("metrics") for k in m["metrics"]})
    for key in keys:
        table.add_row(key, *(escape(str((out[n].get("metrics") or {}).get(key, "-"))) for n in measured))
    table.add_row("failure", *(escape(str(out[n].get("failure") or "")) for n in measured))
    table.add_row("seconds", *(f"{out[n]['seconds']:.2f}" for n in measured))
    console.print(table)
    if reference:
        score = out["score"]
        console.print(f"score {score['score']} (index {score['index']}; ratios {score['ratios']})" if score["score"] is not None else f"no score: {score['failure']}")
    if any(m.failure for m in measured.values()):
        raise typer.Exit(1)
