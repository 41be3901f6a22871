"""Build (idempotent) the separate venv in which ``tests/cvdp_gym/integrations/test_verl.py``
runs veRL's own code on our reward function and agent loop.

``verl`` 0.9.1 needs ``transformers<5.11`` (and Python < 3.13), and this project's venv has a
newer transformers that must stay; so veRL gets a venv of its own, made with this machine's
Python 3.11: ``torch==2.13.0`` first (pinned: the CPU wheel; an unpinned torch would pull
CUDA builds), then ``verl==0.9.1`` with its declared dependencies (ray, tensordict,
transformers 5.10, hydra, datasets, wandb, tensorboard...: they cost about a minute and
0.1 GB beside torch's 0.75 GB, and keep veRL's import paths as veRL ships them), plus what
its agent and reward loops import without declaring (``cachetools``, ``fastapi``,
``uvicorn``: its ``verl-core`` extra), ``pyarrow``, cvdp-gym's core dependencies and this
project itself (``pip install --no-deps -e``). About 1.9 GB and 2-3 minutes here.

    .venv/bin/python scripts/verl_env.py [--target DIR] [--project DIR] [--force]

Default folder: ``$CVDP_GYM_VERL_VENV``, else ``$XDG_CACHE_HOME/cvdp-gym/verl-venv``. Built
beside that folder and moved in whole (an interrupted build leaves no half venv); its
marker records the spec, so a changed spec rebuilds. Run by ``scripts/test.sh``; nothing
else needs it (the test skips without it).
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
from pathlib import Path

from cvdp_gym.user_dirs import cache_dir

VERL = "verl==0.9.1"
TORCH = "torch==2.13.0"
#: Imported by veRL's agent/reward loops but declared only in its ``verl-core`` extra.
VERL_EXTRAS = ("cachetools", "fastapi", "uvicorn")
#: cvdp-gym's core dependencies (pyproject) and pyarrow (the Parquet writer).
PROJECT_DEPS = ("gymnasium>=1.0", "pyyaml>=6.0", "rich>=13.0", "typer>=0.12", "pyslang>=6.0", "httpx>=0.27", "pyarrow>=14")
MARKER = ".cvdp-gym-built.json"
ROOT = Path(__file__).resolve().parent.parent


def default_target() -> Path:
    if os.environ.get("CVDP_GYM_VERL_VENV"):
        return Path(os.environ["CVDP_GYM_VERL_VENV"])
    return cache_dir() / "verl-venv"


def base_python() -> str:
    """The machine's Python (3.10-3.12) this venv's is made from: this one's base."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    if sys.version_info < (3, 13) and base.exists():
        return str(base)
    found = shutil.which("python3.11") or shutil.which("python3.12")
    if not found:
        raise SystemExit("veRL 0.9.1 needs Python 3.10-3.12: none found")
    return found


def build(target: Path, project: Path = ROOT, *, force: bool = False) -> Path:
    """Build ``target`` unless it holds this very spec already: made beside it, its absolute
    paths (scripts' shebangs, ``pyvenv.cfg``) pointed at ``target``, then renamed in place.
    The checkout installed is not part of the spec: the test puts its own first on
    ``PYTHONPATH``, so checkouts share one venv."""
    spec = {"verl": VERL, "torch": TORCH, "extras": list(VERL_EXTRAS), "deps": list(PROJECT_DEPS)}
    marker = target / MARKER
    if not force and marker.exists() and json.loads(marker.read_text()).get("spec") == spec:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    start = time.monotonic()
    try:
        subprocess.run([base_python(), "-m", "venv", str(staging)], check=True)
        pip = [str(staging / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
        subprocess.run([*pip, "install", TORCH], check=True)
        subprocess.run([*pip, "install", VERL, TORCH, *VERL_EXTRAS, *PROJECT_DEPS], check=True)
        subprocess.run([*pip, "install", "--no-deps", "-e", str(project)], check=True)
        size = sum(p.stat().st_size for p in staging.rglob("*") if p.is_file() and not p.is_symlink())
        # a venv's scripts and pyvenv.cfg name its own folder: point them at the final one
        for path in [staging / "pyvenv.cfg", *(staging / "bin").iterdir()]:
            if path.is_file() and not path.is_symlink():
                text = path.read_bytes()
                if str(staging).encode() in text:
                    path.write_bytes(text.replace(str(staging).encode(), str(target).encode()))
        built = {"spec": spec, "project": str(project), "bytes": size, "seconds": round(time.monotonic() - start, 1)}
        (staging / MARKER).write_text(json.dumps(built))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", type=Path, default=None)
    parser.add_argument("--project", type=Path, default=ROOT, help="the cvdp-gym checkout installed (editable) in the venv")
    parser.add_argument("--force", action="store_true", help="rebuild even if the venv is up to date")
    args = parser.parse_args()
    target = build(args.target or default_target(), args.project.resolve(), force=args.force)
    built = json.loads((target / MARKER).read_text())
    print(f"[verl venv] {target} ({built['bytes'] / 1e9:.1f} GB, built in {built['seconds']} s)")


if __name__ == "__main__":
    main()
