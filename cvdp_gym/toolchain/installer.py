"""Installing a toolchain: building the root or the host's environments, or unpacking a
root packed elsewhere; then detecting it afresh."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cvdp_gym.errors import ConfigError
from cvdp_gym.toolchain.detection import clear_detected, detect
from cvdp_gym.toolchain.envs import GENERATIONS, host_env, install_host_env
from cvdp_gym.toolchain.pack import read_header, unpack
from cvdp_gym.toolchain.root import build_root, lock_fingerprint, read_lock, root_complete
from cvdp_gym.toolchain.settings import KINDS, root_dir, toolchain_dir
from cvdp_gym.toolchain.toolchain import Toolchain


def install(
    kind: str = "root",
    *,
    generations: tuple[str, ...] = GENERATIONS,
    force: bool = False,
    log: Callable[[str], None] = print,
    archive: Path | None = None,
    sha256: str | None = None,
) -> Toolchain:
    """Build what ``kind`` needs (idempotent), then detect it afresh.

    ``archive``: install the root packed in it (``cvdp-gym toolchain pack``) instead of
    building one, verified against its manifest and ``sha256`` (or ``ARCHIVE.sha256``); a
    root with the same lock already there is kept unless ``force``.
    """
    base = toolchain_dir()
    if kind == "root" and archive is not None:
        _install_archive(archive, root_dir(), sha256=sha256, force=force, log=log)
    elif archive is not None:
        raise ConfigError("--from installs the simulation root (--toolchain root), not the host fallback")
    elif kind == "root":
        build_root(base, force=force, log=log, root=root_dir())
    elif kind == "host":
        for generation in generations:
            install_host_env(host_env(generation, base), force=force)
    else:
        raise ConfigError(f"unknown toolchain {kind!r}; expected one of {KINDS}")
    clear_detected()
    return detect(kind)


def _install_archive(archive: Path, root: Path, *, sha256: str | None, force: bool, log: Callable[[str], None]) -> None:
    header = read_header(archive)
    lock = read_lock(root)
    if not force and lock is not None and root_complete(root) and lock_fingerprint(lock) == header.get("lock_fingerprint"):
        log(f"the root of {archive} is already installed at {root} (root {lock_fingerprint(lock)}); --force installs it again")
        return
    unpack(archive, root, sha256=sha256, log=log)
