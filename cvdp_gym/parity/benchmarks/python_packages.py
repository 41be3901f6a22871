"""Third-party modules an official script imports, for the root's ``python3`` (which has none).

Contract: ``missing_modules(sandbox, imports)`` asks the root's ``python3`` (in the sandbox)
which of ``imports`` it cannot import, and its version; ``provide(modules, version)``
returns a folder to put on ``PYTHONPATH`` that holds them: binary wheels for that version
(``pip install --target`` with ``--only-binary=:all:``, the packages this project knows by
module name), built once into the user cache (``$XDG_CACHE_HOME/cvdp-gym/parity-cp3XY``,
built beside it and moved in whole) as ``scripts/nemo_gym_models.py`` does for NeMo-Gym.
RTLLM's ``auto_run.py`` imports ``tqdm`` (its progress bar) and ``scipy.special.comb``
(its pass@k arithmetic): the real packages are installed, not stand-ins, so its arithmetic
is its own.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from cvdp_gym.errors import ConfigError
from cvdp_gym.sandbox.base import Limits, Mount, Sandbox
from cvdp_gym.user_dirs import cache_dir

#: Modules an official script may import, and the package that provides each.
PACKAGES = {"tqdm": "tqdm", "scipy": "scipy", "numpy": "numpy"}
MARKER = ".cvdp-gym-built.json"
_PROBE = (
    "import importlib.util, json, sys\n"
    "names = sys.argv[1:]\n"
    "print(json.dumps({'version': '%d.%d' % sys.version_info[:2], "
    "'missing': [n for n in names if n not in sys.stdlib_module_names and importlib.util.find_spec(n) is None]}))\n"
)


def top_level_imports(source: str) -> list[str]:
    """The top-level module names a Python source imports (``from scipy.special import comb``: scipy)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return sorted(names)


def missing_modules(sandbox: Sandbox, imports: Iterable[str], pythonpath: Path | None = None) -> tuple[str, list[str]]:
    """(the root's Python version, the modules of ``imports`` it cannot import)."""
    scratch = Path(tempfile.mkdtemp(prefix="cvdp-gym-probe-"))
    try:
        mounts = [Mount(pythonpath, "/pylib")] if pythonpath is not None else []
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", **({"PYTHONPATH": "/pylib"} if pythonpath is not None else {})}
        result = sandbox.run(["python3", "-c", _PROBE, *imports], mounts=mounts, scratch=scratch, env=env, limits=Limits(wall_s=60))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    try:
        found = json.loads(result.output.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise ConfigError(f"the root's python3 did not answer: {result.output.strip()[-300:]}") from None
    return str(found["version"]), list(found["missing"])


def target(version: str) -> Path:
    return cache_dir() / f"parity-cp{version.replace('.', '')}"


def provide(modules: Iterable[str], version: str) -> Path:
    """A folder holding ``modules`` for Python ``version`` (built once; see the module doc)."""
    wanted = sorted({PACKAGES[m] for m in modules if m in PACKAGES})
    unknown = sorted(m for m in modules if m not in PACKAGES)
    if unknown:
        raise ConfigError(f"the official script imports {', '.join(unknown)}, which this tool does not know how to provide")
    folder = target(version)
    marker = folder / MARKER
    built = json.loads(marker.read_text()).get("packages", []) if marker.exists() else []
    if set(wanted) <= set(built):
        return folder
    packages = sorted(set(wanted) | set(built))
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        platform = ["--python-version", version, "--only-binary=:all:", "--implementation", "cp"]
        for tag in ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64", "manylinux_2_28_x86_64"):
            platform += ["--platform", tag]
        command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--target", str(staging)]
        done = subprocess.run([*command, *platform, *packages], capture_output=True, text=True)
        if done.returncode != 0:
            raise ConfigError(f"pip could not provide {', '.join(packages)} for Python {version}: {done.stderr.strip()[-400:]}")
        (staging / MARKER).write_text(json.dumps({"packages": packages, "python": version}))
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder
