"""``cvdp-gym doctor`` and ``cvdp-gym toolchain install|pack|path|docker-image``: the
simulation toolchain, checked, built, packed and located.

``doctor`` prints one row per component and exits 1 if any is missing (with the command that
installs it, one an ordinary user can run where there is one), and which sandbox limits hold
here; the ``toolchain`` commands build the pinned root or the host fallback (or install a
root packed elsewhere: ``install --from``), pack the root into one archive, print where it
lives, and import it into Docker as the stand-in image. :mod:`cvdp_gym.cli` wires them into
the app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from cvdp_gym.cli._options import ToolchainOpt, console, fail


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
    if tc.bwrap.ok:
        from cvdp_gym.sandbox.bwrap import limits_in_force

        held, lacking = limits_in_force()
        table.add_row("sandbox limits", "[green]ok[/]", held, "")
        if lacking:
            table.add_row("sandbox limits", "[yellow]partial[/]", lacking, "")
        own_devices, *row = _device_row()
        all_ok &= own_devices
        table.add_row("sandbox /dev", *row)
    for name, state, fix in _repository_rows():
        table.add_row(name, "[green]ok[/]", state, fix)
    from cvdp_gym.toolchain.doctor import optional_rows

    for name, ok, detail, fix in [*optional_rows(), *_podman_rows()]:
        status = "[green]ok[/]" if ok else "[yellow]absent[/]" if ok is None else "[yellow]refused[/]"
        table.add_row(name, status, detail, fix)
    console.print(table)
    if not all_ok:
        from cvdp_gym.toolchain.unprivileged import FROM_ARCHIVE, is_root

        if is_root():
            console.print("Some components are missing: `scripts/setup.sh` installs everything.")
        else:
            console.print(
                "Some components are missing: each row's fix runs without root. Without mmdebstrap (or apt), "
                f"install a packed root: {FROM_ARCHIVE}; see docs/clusters.md.",
                soft_wrap=True,
            )
        raise typer.Exit(1)


def _device_row() -> tuple[bool, str, str, str]:
    """Whether bubblewrap runs get device nodes of their own here (``sandbox/devices.py``)."""
    import tempfile

    from cvdp_gym.sandbox.devices import own_devices

    own = own_devices(Path(tempfile.gettempdir()))
    if own is None:
        from cvdp_gym.sandbox.devices import NODEV_FIX

        return False, "[red]refused[/]", f"runs as root are refused here: {NODEV_FIX}", "TMPDIR=/var/tmp"
    if own:
        return True, "[green]ok[/]", "nodes of each run's own (made per run): nothing done to /dev reaches the host's", ""
    return True, "[green]ok[/]", "the host's nodes, which this ordinary user cannot change", ""


def _podman_rows() -> list[tuple[str, bool | None, str, str]]:
    """The podman backend's rows (optional: they never fail ``doctor``), when the docker
    package it speaks through is installed."""
    try:
        import docker  # noqa: F401
    except ImportError:
        return []
    from cvdp_gym.sandbox.podman import podman_rows

    return podman_rows()


def _repository_rows() -> list[tuple[str, str, str]]:
    """What repository-context problems use here: where their repositories are looked for
    (and cached), and how each episode's copy of a checkout is made."""
    import tempfile
    from pathlib import Path

    from cvdp_gym.data.repos import REPOS_ENV, RepoStore
    from cvdp_gym.sandbox.tree_copy import COPY, OVERLAY, STRATEGY_ENV, strategy_for

    store = RepoStore()
    strategy = strategy_for(Path(tempfile.gettempdir()))
    how = {OVERLAY: "overlay mounts (copy-on-write)", COPY: "plain copies (no right to mount here)"}.get(strategy, f"{strategy} copies")
    return [
        ("repository problems", f"{store.where()}; cache {store.cache_dir}", "" if store.folder else f"--repos DIR or {REPOS_ENV}"),
        ("repository workspaces", how, f"{STRATEGY_ENV} chooses"),
    ]


def toolchain_install(
    toolchain: Annotated[str, typer.Option(help="root: build the pinned simulation root (Icarus 13); host: venvs for the host's simulators.")] = "root",
    generation: Annotated[list[str] | None, typer.Option(help="host only: cocotb2 and/or cocotb1 (default: both).")] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even if installed.")] = False,
    from_archive: Annotated[Path | None, typer.Option("--from", help="Install the root packed in this archive (cvdp-gym toolchain pack) instead of building it: no root, mmdebstrap or apt needed.")] = None,
    sha256: Annotated[str | None, typer.Option(help="--from: the archive's expected SHA-256 (default: ARCHIVE.sha256 beside it, if any).")] = None,
    root: Annotated[Path | None, typer.Option(help="Where the root goes (default: $CVDP_GYM_ROOT, else under the toolchain folder); users of a shared root set CVDP_GYM_ROOT to it.")] = None,
) -> None:
    """Build the simulation toolchain: the pinned root (default) and the quality tools beside it, or the host fallback's environments."""
    import os

    from cvdp_gym.toolchain import GENERATIONS, ROOT_ENV, RootBuildError, install, quality_tools

    if root is not None:
        os.environ[ROOT_ENV] = str(root.resolve())
    try:
        with console.status(f"installing the {toolchain} toolchain"):
            tc = install(
                toolchain, generations=tuple(generation or GENERATIONS), force=force, log=console.print,
                archive=from_archive, sha256=sha256,
            )
        if toolchain == "root":
            with console.status("installing the quality tools (OpenSTA, nextpnr-ice40)"):
                quality_tools.install(log=console.print, force=force)
    except (RootBuildError, ValueError) as exc:
        raise fail(str(exc)) from None
    for key, value in tc.versions().items():
        console.print(f"{key}: {value}")
    lock = quality_tools.lock_entry() if toolchain == "root" else None
    if lock:
        console.print(f"quality tools: {lock['sta_version']}, {lock['nextpnr_version']} (fingerprint {quality_tools.fingerprint()})")


def toolchain_pack(
    archive: Annotated[Path, typer.Argument(help="The archive to write (ARCHIVE.sha256 is written beside it).")],
    compression: Annotated[str, typer.Option(help="gz (gzip level 1: the default), xz (smaller, slower) or none.")] = "gz",
) -> None:
    """Write the built simulation root as one archive that any user installs with `toolchain install --from`."""
    from cvdp_gym.toolchain import RootBuildError, detect
    from cvdp_gym.toolchain.pack import pack

    tc = detect("root")
    if tc.root is None:
        raise fail("no simulation root here; build it first: cvdp-gym toolchain install")
    try:
        with console.status(f"packing {tc.root}"):
            result = pack(tc.root, archive, compression=compression, log=console.print)
    except RootBuildError as exc:
        raise fail(str(exc)) from None
    print(f"{result.archive} sha256 {result.sha256}")


def toolchain_path(toolchain: ToolchainOpt = None) -> None:
    """Print where the simulation root (or the host environments) live."""
    from cvdp_gym.toolchain import detect, toolchain_dir

    tc = detect(toolchain)
    print(tc.root if tc.root is not None else toolchain_dir())


def toolchain_docker_image() -> None:
    """Import the simulation root as the Docker backend's stand-in image (idempotent); print its tag."""
    from cvdp_gym.sandbox.base import SandboxUnavailable
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
