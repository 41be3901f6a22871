"""Nothing a sandboxed process does changes the host (issue 35: an agent's ``chmod 600
/dev/null`` once changed the host's ``/dev/null``).

Inside the sandbox a walker tries ``chmod``, ``chown``, ``utime`` and ``truncate`` on every
path it can see (bubblewrap: the whole tree and ``/proc``'s entries outside the process
folders; a container: its ``/dev`` and its bind mounts, the host-backed paths: the rest is
the image's copy-on-write layer, thrown away with the container), its own writable folders
excepted. Each change sets what is already there (the same mode, owner, times and size), so
a hole harms nothing, yet the kernel records every change it allows: the inode's change
time. The host's side of every such path (the simulation root's folders, the device nodes, the
read-only mount) is compared before and after: mode, owner, size and change time; ``/proc``'s
entries (whose change times the kernel resets by itself) must refuse every change. Bubblewrap and Docker run as root and as a throwaway ordinary user;
rootless Podman is an ordinary user's by nature.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from cvdp_gym.sandbox import Limits, Mount
from cvdp_gym.sandbox.devices import DEVICE_NODES
from cvdp_gym.sandbox.owner import owner_token
from tests.leftovers import USER_COMMENT, mark_owner, remove_folder, remove_user
from tests.support import REPO, missing

pytestmark = pytest.mark.sandbox

SYSTEM_PYTHON = "/usr/bin/python3"

#: Run in the sandbox: ``python3 -c WALKER ROOTS -- OWN``; prints how many paths it tried,
#: and each change the kernel allowed outside its own folders (on the sandbox's own device
#: nodes that is expected: the host side decides).
WALKER = r"""
import os, stat, sys
split = sys.argv.index("--")
roots, own = sys.argv[1:split], tuple(sys.argv[split + 1:])
tried, allowed = 0, []

def attempt(path):
    global tried
    try:
        info = os.lstat(path)
    except OSError:
        return
    tried += 1
    mode, times = stat.S_IMODE(info.st_mode), (info.st_atime_ns, info.st_mtime_ns)
    ops = [("chmod", lambda: os.chmod(path, mode)), ("chown", lambda: os.chown(path, info.st_uid, info.st_gid)),
           ("utime", lambda: os.utime(path, ns=times))]
    if stat.S_ISREG(info.st_mode):
        ops.append(("truncate", lambda: os.truncate(path, info.st_size)))
    for name, op in ops:
        try:
            op()
            allowed.append(f"{name} {path}")
        except OSError:
            pass

def walk(root):
    attempt(root)
    for top, dirs, files in os.walk(root):
        if top == "/":
            dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
        if top.startswith(own):
            dirs[:] = []
            continue
        for name in sorted(dirs + files):
            path = os.path.join(top, name)
            if not os.path.islink(path) and not path.startswith(own):
                attempt(path)

for root in roots:
    walk(root)
if "/" in roots:  # /proc's entries outside the process folders (the kernel's own)
    for name in sorted(os.listdir("/proc")):
        if not name.isdigit() and name not in ("self", "thread-self"):
            walk(f"/proc/{name}")
print("TRIED", tried)
print("ALLOWED", len(allowed))
print("\n".join(line for line in allowed if " /proc/" in line))  # the kernel's entries: never allowed
print("\n".join(allowed[:40]))
"""

_CHILD = """
import sys, tempfile
from pathlib import Path
from cvdp_gym.sandbox import Limits, Mount, make_sandbox
kind, walker, ro, standin = sys.argv[1:5]
roots = sys.argv[5:]
work = Path(tempfile.mkdtemp())
sandbox = make_sandbox(kind)
if standin:
    sandbox.standin_tag = standin
result = sandbox.run(["python3", "-c", walker, *roots, "--", "/tmp", "/work"],
                     mounts=[Mount(Path(ro), "/ro"), Mount(work, "/work", writable=True)],
                     scratch=Path(tempfile.mkdtemp()), limits=Limits(wall_s=900))
print(result.output)
"""


def _snapshot(paths: list[Path]) -> dict[str, tuple[int, int, int, int, int]]:
    """Every path under ``paths`` (links not followed): mode, owner, group, size, change time."""
    seen: dict[str, tuple[int, int, int, int, int]] = {}

    def record(path: str) -> None:
        with contextlib.suppress(OSError):
            info = os.lstat(path)
            seen[path] = (info.st_mode, info.st_uid, info.st_gid, info.st_size, info.st_ctime_ns)

    for base in paths:
        record(str(base))
        if base.is_dir() and not base.is_symlink():
            for top, dirs, files in os.walk(base):
                for name in dirs + files:
                    record(os.path.join(top, name))
    return seen


def _changes(before: dict, after: dict) -> list[str]:
    return [path for path, state in before.items() if after.get(path) != state][:20]


@pytest.fixture
def read_only(tmp_path) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="cvdp-gym-ro-"))
    (folder / "data.txt").write_text("keep\n")
    for path in (folder, folder / "data.txt"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _host_paths(toolchain, read_only: Path, *, whole_root: bool) -> list[Path]:
    paths = [Path("/dev") / name for name in DEVICE_NODES] + [read_only]
    if whole_root:
        paths += [toolchain.root / name for name in ("usr", "etc", "opt")]
    return paths


def _walked(output: str) -> int:
    """How many paths the walker tried; fails if it changed any of ``/proc``'s entries."""
    lines = output.splitlines()
    assert not [line for line in lines if " /proc/" in line], output[-3000:]
    counts = dict(line.split() for line in lines if line.startswith(("TRIED ", "ALLOWED ")))
    return int(counts.get("TRIED", 0))


@pytest.fixture(scope="module")
def ordinary_user(toolchain):
    """A throwaway ordinary user (in the docker group where there is one) and a read-only
    view of the simulation root it can reach, as a site's shared root is."""
    if os.geteuid() != 0 or shutil.which("useradd") is None or not Path(SYSTEM_PYTHON).exists():
        missing(f"needs root, useradd and {SYSTEM_PYTHON} to play an ordinary user")
    base = Path(tempfile.mkdtemp(prefix="cvdp-gym-user-"))
    mark_owner(base)
    base.chmod(0o755)
    view = base / "root"
    view.mkdir()
    name = f"cvdp-pod-{uuid.uuid4().hex[:8]}"  # the sweep's name scheme (tests/leftovers.py)
    groups = ["-G", "docker"] if _group("docker") is not None else []
    try:
        subprocess.run(["mount", "--bind", "-o", "ro", str(toolchain.root), str(view)], check=True)
        subprocess.run(["useradd", "--create-home", "--comment", USER_COMMENT + owner_token(), *groups, name], check=True, capture_output=True)
        yield name, view
    finally:
        with contextlib.suppress(KeyError):
            remove_user(name, pwd.getpwnam(name).pw_uid)
        remove_folder(base)


def _group(name: str) -> int | None:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def _as_user(user: str, view: Path, kind: str, read_only: Path, standin: str, roots: list[str]) -> str:
    entry = pwd.getpwnam(user)
    # The system's Python on this checkout and the venv's packages: the venv's own interpreter
    # links into root's home, which the user cannot enter.
    site = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
    env = {
        "HOME": entry.pw_dir, "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "CVDP_GYM_ROOT": str(view),
        "PYTHONPATH": f"{REPO}:{site}",
    }
    docker = _group("docker")
    done = subprocess.run(
        [SYSTEM_PYTHON, "-c", _CHILD, kind, WALKER, str(read_only), standin, *roots],
        user=entry.pw_uid, group=entry.pw_gid, extra_groups=[docker] if docker is not None else [],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_bubblewrap_as_root_leaves_the_host_unchanged(sandbox, toolchain, read_only, tmp_path):
    before = _snapshot(_host_paths(toolchain, read_only, whole_root=True))
    work = tmp_path / "work"
    work.mkdir()
    result = sandbox.run(
        ["python3", "-c", WALKER, "/", "--", "/tmp", "/work"],
        mounts=[Mount(read_only, "/ro"), Mount(work, "/work", writable=True)], scratch=tmp_path / "scratch",
        limits=Limits(wall_s=900),
    )
    assert result.returncode == 0, result.output[-3000:]
    assert _walked(result.output) > 10_000, result.output[-2000:]  # the whole root, not a corner of it
    assert _changes(before, _snapshot(_host_paths(toolchain, read_only, whole_root=True))) == [], result.output[-3000:]


def test_bubblewrap_as_an_ordinary_user_leaves_the_host_unchanged(ordinary_user, toolchain, read_only):
    user, view = ordinary_user
    before = _snapshot(_host_paths(toolchain, read_only, whole_root=True))
    output = _as_user(user, view, "bubblewrap", read_only, "", ["/"])
    assert _walked(output) > 10_000, output[-2000:]
    assert _changes(before, _snapshot(_host_paths(toolchain, read_only, whole_root=True))) == [], output[-3000:]


def _walk_in_container(csandbox, read_only: Path, tmp_path: Path):
    """The walker as the container's root over its /dev, a read-only mount and its writable
    folders; it must have run and touched something."""
    work = tmp_path / "work"
    work.mkdir()
    result = csandbox.run(
        ["python3", "-c", WALKER, "/dev", "/ro", "--", "/tmp", "/work"],
        mounts=[Mount(read_only, "/ro"), Mount(work, "/work", writable=True)], scratch=tmp_path / "scratch",
    )
    assert result.returncode == 0 and _walked(result.output) > 5, result.output[-3000:]
    return result


@pytest.mark.docker
def test_docker_as_root_and_as_an_ordinary_user_leaves_the_host_unchanged(dsandbox, ordinary_user, toolchain, read_only, tmp_path):
    user, view = ordinary_user
    before = _snapshot(_host_paths(toolchain, read_only, whole_root=False))
    result = _walk_in_container(dsandbox, read_only, tmp_path)
    if _group("docker") is not None and Path("/var/run/docker.sock").exists():
        output = _as_user(user, view, "docker", read_only, dsandbox.standin_tag, ["/dev", "/ro"])
        assert _walked(output) > 5, output[-2000:]
    assert _changes(before, _snapshot(_host_paths(toolchain, read_only, whole_root=False))) == [], result.output[-3000:]


@pytest.mark.docker
def test_rootless_podman_leaves_the_host_unchanged(podman_sandbox, toolchain, read_only, tmp_path):
    before = _snapshot(_host_paths(toolchain, read_only, whole_root=False))
    result = _walk_in_container(podman_sandbox, read_only, tmp_path)
    assert _changes(before, _snapshot(_host_paths(toolchain, read_only, whole_root=False))) == [], result.output[-3000:]
