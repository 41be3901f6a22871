"""Build (idempotent) the folder that lets the sandbox's Python import Harbor's task loader and verifier.

``harbor`` needs Python >= 3.12, and this project's venv may be older; the simulation
root's ``python3`` (3.14) is new enough. So ``tests/cvdp_gym/integrations/test_harbor.py``
loads the exported task folders with Harbor's own ``Task`` and reads their reward files with
Harbor's own ``Verifier`` there, in the sandbox, with this folder on ``PYTHONPATH``:
``harbor/`` (the package alone, from the ``harbor`` wheel) and what its task and verifier
models are built from, as cp314 wheels (pydantic, toml, pathspec, pyyaml, about 10 MB). The
rest of Harbor's dependencies (litellm, supabase, fastapi...) are not installed: its
task loader and verifier do not import them (``tests/cvdp_gym/integrations/harbor_check.py``).
The same builder as NeMo-Gym's folder (``scripts/nemo_gym_models.py``).

    .venv/bin/python scripts/harbor_models.py [--target DIR] [--force]

Default folder: ``$CVDP_GYM_HARBOR_MODELS``, else ``$XDG_CACHE_HOME/cvdp-gym/harbor-cp314``.
Run by ``scripts/test.sh``; nothing else needs it (the test skips without it).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from nemo_gym_models import PYTHON_VERSION, build_folder, cached_target, folder_main

HARBOR = "harbor==0.25.0"
#: What Harbor's task config, task loader and verifier import (versions as harbor 0.25.0 asks).
HARBOR_NEEDS = ("pydantic>=2.12", "toml>=0.10.2", "pathspec>=1.0.3", "pyyaml>=6.0.2", "shortuuid>=1.0.13", "platformdirs>=4.10.0")
#: cvdp-gym's own dependencies (pyproject.toml), so that an exported task's tests/test.sh can
#: grade with this checkout in the stand-in image, whose Python is the root's 3.14.
CVDP_GYM_NEEDS = ("gymnasium>=1.0", "pyyaml>=6.0", "rich>=13.0", "typer>=0.12", "pyslang>=6.0", "httpx>=0.27")
PACKAGES = HARBOR_NEEDS + CVDP_GYM_NEEDS
#: pyslang's wheels are manylinux_2_28 only; the root's glibc is newer.
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64")
KEEP = ("harbor/", "harbor-0.25.0.dist-info/")


def default_target(version: str = PYTHON_VERSION) -> Path:
    return cached_target("CVDP_GYM_HARBOR_MODELS", "harbor", version)


def build(target: Path, version: str = PYTHON_VERSION, *, force: bool = False) -> Path:
    return build_folder(target, HARBOR, PACKAGES, KEEP, version, force=force, label="harbor", platforms=PLATFORMS)


def main() -> None:
    folder_main(__doc__, build, default_target, "harbor models")


if __name__ == "__main__":
    main()
