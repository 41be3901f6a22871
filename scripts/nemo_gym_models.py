"""Build (idempotent) the folder that lets the sandbox's Python import NeMo-Gym's own models.

``nemo-gym`` needs Python >= 3.13, and this project's venv may be older; the simulation
root's ``python3`` (3.14) is new enough. So ``tests/cvdp_gym/service/test_nemo_gym_models.py``
validates the service's traffic with NeMo-Gym's pydantic models there, in the sandbox, with
this folder on ``PYTHONPATH``: ``nemo_gym/`` (the package alone, from the ``nemo-gym``
wheel: 3.4 MB of its 43; and the example rows of its CVDP resources server) and the packages its models are built from, as cp314 wheels
(8 MB of wheels, 48 MB installed; with the 43 MB nemo-gym wheel, about 6 s here). The server machinery the module
also imports (aiohttp, hydra, pandas, scipy, wandb, ray...) is not installed: the check
script stands it in (``tests/cvdp_gym/service/nemo_gym_check.py``).

    .venv/bin/python scripts/nemo_gym_models.py [--target DIR] [--force]

Default folder: ``$CVDP_GYM_NEMO_GYM_MODELS``, else ``$XDG_CACHE_HOME/cvdp-gym/nemo-gym-cp314``.
Run by ``scripts/test.sh``; nothing else needs it (the test skips without it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from cvdp_gym.user_dirs import cache_dir

NEMO_GYM = "nemo-gym==0.7.0"
#: What ``nemo_gym.base_resources_server``'s models are built from (openai pinned as
#: nemo-gym 0.7.0 pins it); their own dependencies come along.
PACKAGES = ("openai==2.44.0", "pydantic", "fastapi", "rich", "omegaconf")
#: What is kept of the wheel: the package, and NeMo-Gym's own CVDP resources server's example
#: rows and rollouts (``test_nemo_gym_cvdp_rows`` grades them through the service).
KEEP = ("nemo_gym/", "resources_servers/cvdp/data/example", "resources_servers/cvdp/scripts/", "resources_servers/cvdp/cvdp_lib/")
PYTHON_VERSION = "3.14"
MARKER = ".cvdp-gym-built.json"


def cached_target(variable: str, name: str, version: str = PYTHON_VERSION) -> Path:
    """``$variable`` if set, else ``<user cache>/<name>-cp<version>`` (e.g. ``nemo-gym-cp314``)."""
    if os.environ.get(variable):
        return Path(os.environ[variable])
    return cache_dir() / f"{name}-cp{version.replace('.', '')}"


def default_target(version: str = PYTHON_VERSION) -> Path:
    return cached_target("CVDP_GYM_NEMO_GYM_MODELS", "nemo-gym", version)


def build(target: Path, version: str = PYTHON_VERSION, *, force: bool = False) -> Path:
    """Build NeMo-Gym's folder at ``target`` (see ``build_folder``)."""
    return build_folder(target, NEMO_GYM, PACKAGES, KEEP, version, force=force, label="nemo_gym")


def build_folder(
    target: Path,
    wheel: str,
    packages: tuple[str, ...],
    keep: tuple[str, ...],
    version: str = PYTHON_VERSION,
    *,
    force: bool = False,
    label: str = "wheel",
    platforms: tuple[str, ...] = ("manylinux2014_x86_64",),
) -> Path:
    """Build ``target`` unless it holds this very spec already: ``packages`` installed for
    CPython ``version`` (cp wheels, with their dependencies), and the members of ``wheel``
    (``name==version``, downloaded without its dependencies) under the prefixes ``keep``;
    ``platforms``: the wheel platform tags accepted.
    Built beside it and moved in whole, so an interrupted build leaves no half folder.
    ``scripts/harbor_models.py`` builds Harbor's folder with it too."""
    spec: dict[str, object] = {label: wheel, "packages": list(packages), "python": version, "keep": list(keep)}
    if platforms != ("manylinux2014_x86_64",):
        spec["platforms"] = list(platforms)
    marker = target / MARKER
    if not force and marker.exists() and json.loads(marker.read_text()).get("spec") == spec:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    start = time.monotonic()
    try:
        platform = ["--python-version", version, "--only-binary=:all:", "--implementation", "cp"]
        platform += [arg for tag in platforms for arg in ("--platform", tag)]
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
        subprocess.run([*pip, "install", "--target", str(staging), *platform, *packages], check=True)
        wheels = staging / ".wheels"
        subprocess.run([*pip, "download", "--no-deps", "-d", str(wheels), *platform, wheel], check=True)
        for archive_path in wheels.glob("*.whl"):
            with zipfile.ZipFile(archive_path) as archive:
                archive.extractall(staging, [n for n in archive.namelist() if n.startswith(keep)])
        shutil.rmtree(wheels)
        size = sum(p.stat().st_size for p in staging.rglob("*") if p.is_file())
        (staging / MARKER).write_text(json.dumps({"spec": spec, "bytes": size, "seconds": round(time.monotonic() - start, 1)}))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def folder_main(doc: str, build: Callable[..., Path], default_target: Callable[[str], Path], label: str) -> None:
    """A folder builder's command line (``--target``, ``--python-version``, ``--force``):
    build, then print where, how big and how long it took."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--target", type=Path, default=None)
    parser.add_argument("--python-version", default=PYTHON_VERSION)
    parser.add_argument("--force", action="store_true", help="rebuild even if the folder is up to date")
    args = parser.parse_args()
    target = build(args.target or default_target(args.python_version), args.python_version, force=args.force)
    built = json.loads((target / MARKER).read_text())
    print(f"[{label}] {target} ({built['bytes'] / 1e6:.0f} MB, built in {built['seconds']} s)")


def main() -> None:
    folder_main(__doc__, build, default_target, "nemo-gym models")


if __name__ == "__main__":
    main()
