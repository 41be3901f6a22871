"""Icarus Verilog 12 beside the root's Icarus 13: the simulator VerilogEval requires.

VerilogEval's README requires Icarus 12 and says 13 is not supported: its test benches name
``tb_mismatch`` in ``$dumpvars`` before declaring it, which Icarus 13 rejects. Debian's
stable suite (trixie) carries Icarus 12.0; its package is pinned here by file name and
SHA-256 and unpacked (``dpkg-deb -x``, by the root's own dpkg) into
``/opt/cvdp/icarus12`` of the simulation root. Nothing of it is installed over the root's
Icarus 13: a run that needs Icarus 12 has the package's three pieces bound over the root's
at their own paths (``overlay``): ``/usr/bin/iverilog``, ``/usr/bin/vvp`` and the
compiler's library folder (``/usr/lib/<triplet>/ivl``: ``ivlpp``, ``ivl``, the code
generators and VPI modules). Inside that run everything is where an ordinary Icarus 12
installation has it (the paths compiled into the binaries included), so the benchmark's
own commands run unchanged: ``iverilog ...`` and ``./X`` (whose ``#!`` line is
``/usr/bin/vvp``).

The stage is idempotent like the root's others: its marker records the package's hash, and
the lock records the package and the version line, so the root's fingerprint (part of every
cache key) changes with it.
"""

from __future__ import annotations

import platform
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from cvdp_gym.errors import RootBuildError
from cvdp_gym.toolchain.downloads import download_pinned

#: The Debian suite the package comes from, and where it lives inside the root.
SUITE = "trixie"
PREFIX = PurePosixPath("/opt/cvdp/icarus12")
#: The first words of ``iverilog -V`` for this version.
VERSION_PREFIX = "Icarus Verilog version 12."
_MARKER = ".cvdp-gym-icarus12"
#: Archives that keep every package ever published, tried after the caller's mirror.
_SNAPSHOT = "https://snapshot.debian.org/archive/debian/20250801T000000Z"


@dataclass(frozen=True)
class Package:
    """One architecture's pinned ``iverilog`` package of Debian trixie."""

    version: str
    filename: str  # path in the archive's pool
    sha256: str
    triplet: str  # the multiarch folder of its libraries


#: ``dpkg --print-architecture`` -> the pinned package (Debian's Packages index for trixie).
PACKAGES = {
    "amd64": Package(
        "12.0-2+b1", "pool/main/i/iverilog/iverilog_12.0-2+b1_amd64.deb",
        "febe027d2d3f5a7e570844d55758339ab5490acc09f404f214a8719d89d07056", "x86_64-linux-gnu",
    ),
    "arm64": Package(
        "12.0-2+b2", "pool/main/i/iverilog/iverilog_12.0-2+b2_arm64.deb",
        "b138de4f2e5ffc50dd598696124427a5313da503a03f8c761c29326868a974e7", "aarch64-linux-gnu",
    ),
}
_MACHINES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def package() -> Package:
    """This machine's pinned package (``RootBuildError`` on another architecture)."""
    arch = _MACHINES.get(platform.machine().lower())
    if arch is None:
        raise RootBuildError(f"no pinned Icarus 12 package for this machine ({platform.machine()}); pinned: {sorted(PACKAGES)}")
    return PACKAGES[arch]


def _inside(root: Path, path: PurePosixPath) -> Path:
    return root / str(path).lstrip("/")


def overlay(root: Path) -> list[tuple[Path, str]]:
    """``(host path, path in the sandbox)`` pairs that make a run of ``root`` see Icarus 12."""
    triplet = package().triplet
    base = _inside(root, PREFIX)
    pieces = ("usr/bin/iverilog", "usr/bin/vvp", f"usr/lib/{triplet}/ivl")
    return [(base / piece, "/" + piece) for piece in pieces]


def ready(root: Path) -> bool:
    """The root holds the pinned Icarus 12, unpacked from the pinned package."""
    try:
        pinned = package()
    except RootBuildError:
        return False
    marker = _inside(root, PREFIX) / _MARKER
    try:
        return marker.read_text().strip() == pinned.sha256 and all(src.exists() for src, _ in overlay(root))
    except OSError:
        return False


def lock_entry(root: Path) -> dict[str, str] | None:
    """What the lock records of the installed package (None when it is not installed)."""
    if not ready(root):
        return None
    pinned = package()
    return {"suite": SUITE, "version": pinned.version, "deb": pinned.filename.rsplit("/", 1)[-1], "sha256": pinned.sha256}


def install(
    root: Path,
    mirror: str,
    run_in_root: Callable[..., str],
    log: Callable[[str], None] = print,
) -> str:
    """Unpack the pinned package into ``root``'s ``/opt/cvdp/icarus12``; returns its ``iverilog -V`` line.

    ``run_in_root(root, argv, binds=...)`` runs a trusted step with ``root`` as ``/`` (the
    root builder's own runner).
    """
    pinned = package()
    base = _inside(root, PREFIX)
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    deb = root / "tmp" / pinned.filename.rsplit("/", 1)[-1]
    deb.parent.mkdir(parents=True, exist_ok=True)
    log(f"installing Icarus Verilog 12 (Debian {SUITE} {pinned.version}) beside the root's Icarus 13")
    urls = [f"{mirror.rstrip('/')}/{pinned.filename}", f"{_SNAPSHOT}/{pinned.filename}"]
    try:
        download_pinned(urls, pinned.sha256, deb, "the pinned Icarus 12 package")
        run_in_root(root, ["dpkg-deb", "-x", f"/tmp/{deb.name}", str(PREFIX)])
    finally:
        deb.unlink(missing_ok=True)
    missing = [str(src) for src, _ in overlay(root) if not src.exists()]
    if missing:
        raise RootBuildError(f"the Icarus 12 package lacks {', '.join(missing)}")
    line = run_in_root(root, ["iverilog", "-V"], binds=overlay(root)).strip().splitlines()
    if not line or not line[0].startswith(VERSION_PREFIX):
        raise RootBuildError(f"the unpacked package is not Icarus 12: {line[:1]}")
    (base / _MARKER).write_text(pinned.sha256 + "\n")
    return line[0].strip()
