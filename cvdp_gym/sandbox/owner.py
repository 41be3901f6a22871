"""Who made a thing that can outlive its maker, and whether that maker still runs.

A process killed before its cleanup (SIGKILL, a lost node, a suite killed halfway) leaves
behind what it made: scratch folders, cgroups, containers. Each records its maker as an
**owner token**, ``<pidns>-<pid>-<start>``: the PID namespace (the inode of
``/proc/self/ns/pid``), the pid, and the process's start time in clock ticks since boot
(``/proc/PID/stat``'s 22nd field), so a pid that a new process has taken reads as dead.
Whatever sweeps orphans removes only what ``owner_alive`` calls dead: a token from another
PID namespace (a container sharing the engine or the temp folder) is never judged.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

__all__ = ["owner_alive", "owner_token", "pid_namespace", "start_time"]

_TOKEN = re.compile(r"^(\d+)-(\d+)-(\d+)$")


@functools.cache
def pid_namespace() -> str | None:
    """This process's PID namespace (the inode number of ``/proc/self/ns/pid``), or None
    where ``/proc`` cannot say (then no maker can be judged dead, and nothing is swept)."""
    try:
        match = re.search(r"\[(\d+)\]", os.readlink("/proc/self/ns/pid"))
    except OSError:
        return None
    return match.group(1) if match else None


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), or None when it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    try:
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


def owner_token(pid: int | None = None) -> str:
    """The token of process ``pid`` (this one by default)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid_namespace() or 0}-{pid}-{start_time(pid) or 0}"


def owner_alive(token: str) -> bool | None:
    """Whether the maker that wrote ``token`` still runs: None when that cannot be told
    here (another PID namespace, or not a token), which callers take as alive."""
    match = _TOKEN.match(token.strip())
    ours = pid_namespace()
    if match is None or ours is None or match.group(1) != ours:
        return None
    started = start_time(int(match.group(2)))
    return started is not None and started == int(match.group(3))
