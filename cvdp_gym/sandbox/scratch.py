"""Per-run scratch folders in the temp folder, named after the process that makes them.

Contract: every folder laid out for sandbox runs (a harness run, a lint, a test-bench
script, an agent's workspace) comes from ``make_scratch_dir`` and is named
``cvdp-gym-<kind>-<pid>-<pidns>-<random>``: ``pid`` the process that made it, ``pidns`` that
process's PID namespace. Its maker removes it when the run ends; a maker killed first
(SIGKILL) cannot, so a new sandbox removes the folders whose maker is gone
(``remove_orphan_scratch``), as it does the cgroups (``bwrap.remove_orphan_cgroups``).
Never removed: a folder whose maker lives (or whose pid a new process took), one made in
another PID namespace (a container sharing the temp folder: its pids mean nothing here),
another user's, one with a mount inside (an overlay a killed maker left: ``tree_copy``
unmounts and removes those), and any name not of this scheme.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from cvdp_gym.sandbox.owner import pid_namespace

__all__ = ["SCRATCH_KINDS", "make_scratch_dir", "remove_orphan_scratch", "remove_tree", "scratch_prefix"]

#: What a scratch folder is for: a harness run, a lint, a test-bench script, an agent's
#: workspace, a bubblewrap run's device nodes (``devices.py``).
SCRATCH_KINDS = ("run", "lint", "tb", "ws", "dev")
_NAME = re.compile(rf"^cvdp-gym-({'|'.join(SCRATCH_KINDS)})-(\d+)-(\d+)-[A-Za-z0-9_]+$")


def scratch_prefix(kind: str, pid: int) -> str:
    """The name every scratch folder of ``kind`` made by process ``pid`` (of this PID namespace) starts with."""
    if kind not in SCRATCH_KINDS:
        raise ValueError(f"unknown scratch folder kind {kind!r}; expected one of {', '.join(SCRATCH_KINDS)}")
    return f"cvdp-gym-{kind}-{pid}-{pid_namespace() or 0}-"


def make_scratch_dir(kind: str) -> Path:
    """A new empty folder in the temp folder for one use of ``kind`` (``SCRATCH_KINDS``), owned by this process."""
    return Path(tempfile.mkdtemp(prefix=scratch_prefix(kind, os.getpid())))


def remove_tree(path: Path) -> None:
    """Delete ``path`` even where a command made folders in it unwritable."""

    def retry(func, name, _exc) -> None:  # type: ignore[no-untyped-def]
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(name), 0o700)
            if os.path.isdir(name) and not os.path.islink(name):
                os.chmod(name, 0o700)
            func(name)

    if path.exists():
        shutil.rmtree(path, onerror=retry)


def remove_orphan_scratch(root: Path | None = None) -> list[Path]:
    """Remove the scratch folders in ``root`` (the temp folder) whose maker is dead; the removed folders."""
    ours = pid_namespace()
    mounts = _mount_points()
    if ours is None or mounts is None:
        return []
    root = Path(root or tempfile.gettempdir()).resolve()  # as mount points are written
    try:
        candidates = [Path(entry.path) for entry in os.scandir(root) if entry.name.startswith("cvdp-gym-")]
    except OSError:
        return []
    removed: list[Path] = []
    for path in candidates:
        match = _NAME.match(path.name)
        if match is None or match.group(3) != ours or Path(f"/proc/{match.group(2)}").exists():
            continue
        try:
            info = path.lstat()  # a link named like a scratch folder is not followed
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        if any(mount == path or path in mount.parents for mount in mounts):
            continue
        remove_tree(path)
        if not path.exists():
            removed.append(path)
    return removed


def _mount_points() -> list[Path] | None:
    """This mount namespace's mount points, or None when they cannot be read."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    points = []
    for line in lines:
        fields = line.split()
        if len(fields) > 4:
            points.append(Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])))
    return points
