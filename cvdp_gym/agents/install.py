"""Installing agents once, for the sandbox, into the host's cache.

An agent runs on the sandbox's own system (the pinned simulation root's Python, not the
host's), so a Python agent is installed with the host's ``pip`` for the sandbox's Python
version and platform (``pip install --target``, wheels only), and an npm agent with
``npm install``, from which the recipe keeps its native binary. Each installation goes
into ``<cache>/agents/<key>`` (``CVDP_GYM_AGENTS`` overrides the folder), built in a
temporary folder beside it and renamed when complete, so an interrupted install is never
mistaken for a finished one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cvdp_gym.agents.base import AgentRecipe, CommandAgent
from cvdp_gym.errors import AgentInstallError
from cvdp_gym.sandbox.base import Limits, Sandbox
from cvdp_gym.user_dirs import cache_dir

__all__ = ["agents_dir", "ensure_installed", "npm_install", "pip_install_target", "sandbox_python"]

#: Platforms whose wheels run on the sandbox's glibc (x86_64 Linux).
_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "linux_x86_64")


def agents_dir() -> Path:
    """Where installed agents are kept."""
    override = os.environ.get("CVDP_GYM_AGENTS")
    if override:
        return Path(override)
    return cache_dir() / "agents"


_PYTHONS: dict[str, str] = {}


def _python_of(sandbox: Sandbox) -> str:
    with tempfile.TemporaryDirectory(prefix="cvdp-gym-py-") as scratch:
        result = sandbox.run(
            ["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            scratch=Path(scratch), limits=Limits(wall_s=60),
        )
    version = result.output.strip().splitlines()[-1] if result.output.strip() else ""
    if result.returncode != 0 or not version.replace(".", "").isdigit():
        raise AgentInstallError(f"the sandbox has no python3 to run agents with: {result.output.strip()[-500:]}")
    return version


def sandbox_python(sandbox: Sandbox) -> str:
    """The sandbox's Python version (``"3.14"``), asked of the sandbox once per toolchain."""
    key = f"{sandbox.name}:{getattr(sandbox.toolchain, 'root', None)}"
    if key not in _PYTHONS:
        _PYTHONS[key] = _python_of(sandbox)
    return _PYTHONS[key]


def ensure_installed(recipe: AgentRecipe, sandbox: Sandbox, *, quiet: bool = False) -> Path | None:
    """The folder ``recipe``'s agent is installed in, installing it first if needed (None:
    a ``CommandAgent`` without a folder)."""
    if isinstance(recipe, CommandAgent):
        return recipe.install_dir
    python = sandbox_python(sandbox)
    dest = agents_dir() / recipe.install_key(python)
    if dest.is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        if not quiet:
            print(f"installing {recipe.name} {recipe.version} into {dest} (once)", file=sys.stderr)
        recipe.install(partial, python, sandbox)
        try:
            partial.rename(dest)
        except OSError:  # another process finished the same install first
            if not dest.is_dir():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return dest


def _run_installer(argv: list[str], what: str, timeout_s: float = 900) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError as exc:
        raise AgentInstallError(f"cannot install {what}: {exc.filename} is not installed") from None
    except subprocess.TimeoutExpired:
        raise AgentInstallError(f"installing {what} took over {timeout_s:.0f} s") from None
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip()[-2000:]
        raise AgentInstallError(f"installing {what} failed ({' '.join(argv[:6])} ...):\n{tail}")


def pip_install_target(dest: Path, python: str, requirements: list[str]) -> None:
    """``pip install --target dest`` of ``requirements`` as wheels for CPython ``python``."""
    platforms = [arg for p in _PLATFORMS for arg in ("--platform", p)]
    _run_installer(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
         "--target", str(dest), "--python-version", python, "--implementation", "cp", "--only-binary=:all:",
         *platforms, *requirements],
        " ".join(requirements),
    )


def npm_install(dest: Path, spec: str) -> None:
    """``npm install`` of ``spec`` into ``dest/node_modules`` (no audit, no funding notes)."""
    npm = shutil.which("npm")
    if npm is None:
        raise AgentInstallError(f"cannot install {spec}: npm is not installed (apt-get install npm)")
    _run_installer([npm, "install", "--prefix", str(dest), "--no-audit", "--no-fund", "--loglevel", "error", spec], spec)
