"""Where the toolchain lives and which kind runs, as the environment says.

``CVDP_GYM_TOOLCHAIN`` moves the toolchain folder, ``CVDP_GYM_ROOT`` points at a site's
shared root, ``CVDP_GYM_TOOLCHAIN_KIND=host`` asks for the host fallback; read on every
call, so a test or a command line can set them late.
"""

from __future__ import annotations

import os
from pathlib import Path

from cvdp_gym.errors import ConfigError

#: The pinned simulation root (the default), and the host's own tools (a fallback).
KINDS = ("root", "host")
#: The simulation root itself, when it is not ``toolchain_dir()/root`` (a site's shared root).
ROOT_ENV = "CVDP_GYM_ROOT"


def toolchain_dir() -> Path:
    """Where the simulation root and environments live (``CVDP_GYM_TOOLCHAIN`` overrides)."""
    override = os.environ.get("CVDP_GYM_TOOLCHAIN")
    if override:
        return Path(override).expanduser()
    data_home = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share"))
    return data_home / "cvdp-gym" / "toolchain"


def root_dir() -> Path:
    """The simulation root: ``CVDP_GYM_ROOT`` (a site's shared root), else ``toolchain_dir()/root``."""
    override = os.environ.get(ROOT_ENV)
    return Path(override).expanduser() if override else toolchain_dir() / "root"


def default_kind() -> str:
    """``root`` unless ``CVDP_GYM_TOOLCHAIN_KIND=host`` asks for the host fallback."""
    kind = os.environ.get("CVDP_GYM_TOOLCHAIN_KIND", "root")
    if kind not in KINDS:
        raise ConfigError(f"CVDP_GYM_TOOLCHAIN_KIND={kind!r}; expected one of {KINDS}")
    return kind
