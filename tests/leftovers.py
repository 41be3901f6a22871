"""What the suite's fixtures make that can outlive a killed suite, and the sweep that removes it.

Fixtures that make machine-wide things record their maker's owner token
(:mod:`cvdp_gym.sandbox.owner`): a throwaway user with its rootless Podman service
(``rootless.py``: the user's comment field, and an ``owner`` file in its folder, which holds
its mounts), an ordinary user with a view of the root (``tests/security/test_host_unchanged.py``), a one-node Slurm (``test_slurm_recipe.py``) and a local Ray cluster
(``cvdp_gym.execution.ray_local``), each in a ``/tmp`` folder of its own. A suite killed
halfway (SIGKILL, a CI timeout) cannot clean up; ``sweep`` removes what a dead maker left:
its processes (each by pid), mounts, users and folders. Another suite running beside this
one is never touched: its maker lives. Containers are the sandbox's own business
(``DockerSandbox`` removes a dead maker's on start).

``ours`` lists what this session still has at its end (each fixture should have removed
its own); ``tests/conftest.py`` sweeps at the start of a session and fails the session when
anything of its own, or a change to the host's device nodes, is left at the end.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from cvdp_gym.sandbox.owner import owner_alive, owner_token
from cvdp_gym.sandbox.process import kill_until_gone

#: Folders (in the temp folder) a fixture makes, each with an ``owner`` file.
FOLDER_PREFIXES = ("cvdp-gym-podman-", "cvdp-gym-user-", "cvdp-slurm-", "cvdp-ray-")
#: Throwaway users' names and the comment that records their maker.
USER_NAME = re.compile(r"^cvdp-pod-[0-9a-f]{8}$")
USER_COMMENT = "cvdp-gym test user, owner "
#: Host device nodes a sandboxed process could reach; their modes must survive the suite.
DEVICE_NODES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")


def mark_owner(folder: Path) -> None:
    """Record this process as ``folder``'s maker."""
    (folder / "owner").write_text(owner_token() + "\n")


def _folder_owner(folder: Path) -> str:
    try:
        return (folder / "owner").read_text().strip()
    except OSError:
        return ""


def _folders() -> list[Path]:
    temp = Path(tempfile.gettempdir()).resolve()
    with contextlib.suppress(OSError):
        return sorted(p for p in temp.iterdir() if p.name.startswith(FOLDER_PREFIXES) and p.is_dir())
    return []


def _users() -> list[tuple[str, int, str]]:
    """``(name, uid, owner token)`` of the throwaway users in the password file."""
    found = []
    for entry in pwd.getpwall():
        if USER_NAME.match(entry.pw_name):
            token = entry.pw_gecos[len(USER_COMMENT):] if entry.pw_gecos.startswith(USER_COMMENT) else ""
            found.append((entry.pw_name, entry.pw_uid, token))
    return found


def _mounts_under(folder: Path) -> list[str]:
    """This mount namespace's mount points in ``folder``, deepest first."""
    points = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point == str(folder) or point.startswith(f"{folder}/"):
                points.append(point)
    return sorted(points, key=len, reverse=True)


def _pids(match) -> list[int]:  # type: ignore[no-untyped-def]
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if match(entry):
                    found.append(int(entry.name))
    return [pid for pid in found if pid != os.getpid()]


def _kill_all(match) -> None:  # type: ignore[no-untyped-def]
    kill_until_gone(lambda: _pids(match), tries=100, pause_s=0.1)


def _uses(folder: Path):  # type: ignore[no-untyped-def]
    marker = str(folder).encode()
    return lambda entry: marker in (entry / "cmdline").read_bytes()


def remove_user(name: str, uid: int) -> None:
    """Kill a throwaway user's processes (each by pid) and delete it with its home."""
    _kill_all(lambda entry: entry.stat().st_uid == uid)
    subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)


def remove_folder(folder: Path) -> None:
    """Kill the processes that name ``folder``, unmount what is mounted in it, delete it."""
    _kill_all(_uses(folder))
    for point in _mounts_under(folder):
        subprocess.run(["umount", "--lazy", point], check=False, capture_output=True)
    shutil.rmtree(folder, ignore_errors=True)


def sweep() -> list[str]:
    """Remove what a dead maker left (see the module docstring); what was removed."""
    removed = []
    if os.getuid() == 0:
        for name, uid, token in _users():
            if owner_alive(token) is False:
                remove_user(name, uid)
                removed.append(f"user {name}")
    for folder in _folders():
        if owner_alive(_folder_owner(folder)) is False:
            remove_folder(folder)
            removed.append(str(folder))
    return removed


def ours() -> list[str]:
    """What this session made and still has: users, folders, their processes and mounts."""
    token = owner_token()
    left = [f"user {name}" for name, _, owner in _users() if owner == token]
    for folder in _folders():
        if _folder_owner(folder) == token:
            left.append(f"{folder} (mounts: {_mounts_under(folder)}, processes: {_pids(_uses(folder))})")
    return left


def device_modes() -> dict[str, str]:
    """The modes of the host's device nodes (``DEVICE_NODES``)."""
    modes = {}
    for node in DEVICE_NODES:
        with contextlib.suppress(OSError):
            modes[node] = stat.filemode(os.stat(node).st_mode)
    return modes
