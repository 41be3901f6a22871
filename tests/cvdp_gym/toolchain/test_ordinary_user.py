"""An ordinary user (no root, no sudo, no apt) installs cvdp-gym from its wheel, the root from
an archive, and grades the bundled set: every verdict as expected (issue 31).

Runs where the test runs as root with ``useradd`` and a built root (CI, after setup.sh):
the root is packed (``cvdp-gym toolchain pack``, uncompressed: the fastest to make and to
install), the project is built into a wheel, and a throwaway user is made. As that user,
with the system's Python and nothing of this machine's environment: a venv, ``pip install``
of the wheel (its dependencies from the package index), ``cvdp-gym toolchain install --from
ARCHIVE``, ``cvdp-gym doctor``, then the installed root made read-only (as a site's shared
root is: nothing may write into it) and ``cvdp-gym check bundled``. The user, its home and
the temporary folders are removed afterwards; only what this test made.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from cvdp_gym.toolchain import detect
from cvdp_gym.toolchain.pack import pack
from tests.support import REPO, missing

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]

SYSTEM_PYTHON = "/usr/bin/python3"
#: Variables the user's commands keep (the package index and proxies); nothing else of ours.
_PASSED = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")


def _needs_root_and_useradd() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to create a throwaway user (runs in CI, as root)")
    lacking = [tool for tool in ("useradd", "userdel", "runuser") if shutil.which(tool) is None]
    if lacking or not Path(SYSTEM_PYTHON).exists():
        missing(f"cannot play an ordinary user here: no {', '.join(lacking) or SYSTEM_PYTHON}")


@pytest.fixture(scope="session")
def shared_dir():
    """A folder every user can read (pytest's own temporary folders are root's only)."""
    folder = Path(tempfile.mkdtemp(prefix="cvdp-gym-user-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def root_archive(shared_dir, toolchain):
    """The installed root, packed once per session (uncompressed: pack and install are fastest)."""
    if toolchain.root is None or toolchain.lock is None:
        missing("no simulation root to pack: run cvdp-gym toolchain install")
    result = pack(toolchain.root, shared_dir / "root.tar", compression="none", log=lambda _: None)
    for path in (result.archive, Path(f"{result.archive}.sha256")):
        path.chmod(0o644)
    return result


@pytest.fixture(scope="session")
def project_wheel(shared_dir):
    """The project's wheel, built from a copy of its files (the checkout gets no build/ folder)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "pyproject.toml", "README.md", "cvdp_gym", "rtl_trainer"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    source = shared_dir / "source"
    for name in listed:
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(shared_dir), str(source)],
        check=True, capture_output=True, text=True,
    )
    shutil.rmtree(source)
    wheel = next(shared_dir.glob("cvdp_gym-*.whl"))
    wheel.chmod(0o644)
    return wheel


@pytest.fixture
def ordinary_user():
    """A new user with a home folder; removed (with its home and processes) afterwards."""
    _needs_root_and_useradd()
    name = f"cvdpu{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True, capture_output=True)
    try:
        yield name
    finally:
        uid = int(subprocess.run(["id", "-u", name], capture_output=True, text=True, check=True).stdout)
        for entry in Path("/proc").iterdir():  # anything the user's commands left running
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == uid:
                        os.kill(int(entry.name), 9)
                except OSError:
                    continue
        shutil.rmtree(f"/home/{name}", ignore_errors=True)  # faster than userdel's own removal
        subprocess.run(["userdel", "--remove", name], capture_output=True)
        assert subprocess.run(["id", name], capture_output=True).returncode != 0
        assert not Path(f"/home/{name}").exists()


def _as_user(user: str, script: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = [f"{key}={os.environ[key]}" for key in _PASSED if os.environ.get(key)]
    argv = ["runuser", "-u", user, "--", "env", "-i", f"HOME=/home/{user}", "PATH=/usr/bin:/bin", "LANG=C.UTF-8",
            "COLUMNS=200", *env, "bash", "-euo", "pipefail", "-c", script]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd="/")


def test_an_ordinary_user_installs_from_the_wheel_and_the_archive_and_grades_the_bundled_set(
    ordinary_user, root_archive, project_wheel
):
    user = ordinary_user
    assert detect().ready
    done = _as_user(user, f"""
        cd ~
        test "$(id -u)" != 0
        step() {{ echo "[{user} $SECONDS s] $1"; }}
        {SYSTEM_PYTHON} -m venv venv
        venv/bin/pip install -q --disable-pip-version-check {project_wheel}
        step "installed the wheel"
        venv/bin/cvdp-gym toolchain install --from {root_archive.archive}
        step "installed the root"
        echo "ROOT=$(venv/bin/cvdp-gym toolchain path)"
        venv/bin/cvdp-gym doctor
        chmod -R a-w "$(venv/bin/cvdp-gym toolchain path)"
        venv/bin/cvdp-gym check bundled --jobs 2 --out check.jsonl
        step "checked the bundled set"
    """, timeout=1500)
    out = done.stdout + done.stderr
    print("\n".join(line for line in out.splitlines() if line.startswith(f"[{user} ")))
    assert done.returncode == 0, out[-6000:]
    assert f"ROOT=/home/{user}/.local/share/cvdp-gym/toolchain/root" in out
    assert "archive SHA-256 checked" in out
    assert "bwrap makes its namespaces as this ordinary user" in out
    assert "prlimit: address space" in out  # no cgroup this user may create: rlimits hold
    assert "references passed" in out
    rows = [json.loads(line) for line in Path(f"/home/{user}/check.jsonl").read_text().splitlines()]
    assert rows and all(row["matches"] for row in rows), [(r["key"], r["verdict"], r["expected"]) for r in rows if not r["matches"]]
    assert not any(row["verdict"] == "unsupported" for row in rows)
