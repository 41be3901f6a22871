"""Stopping work on Ctrl-C: find and kill the sandboxes this process started.

The sandbox starts each command in a session of its own (``start_new_session=True``), so
the terminal's SIGINT never reaches it, and its ``Popen`` object is private to the
sandbox code. The process tree is the handle left: ``/proc/<pid>/stat`` gives each
process's parent and process group. ``Children.snapshot()`` remembers the children that
already exist, and ``kill_new()`` SIGKILLs only children started after it (told apart by
PID *and* start time, so a reused PID is not mistaken for one of ours) together with the
process group each of them leads. Nothing else is touched: not our own group, not a
group some child merely joined, not processes of other parents. The sandbox's own
cleanup (``wait``, killing its group and cgroup, removing its folder) then runs as usual
in the thread that started it, since to it the command just died.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class ProcInfo:
    """What ``/proc/<pid>/stat`` says about one process."""

    pid: int
    ppid: int
    pgid: int
    start: int  # clock ticks after boot: with the PID, names one process for good


def proc_info(pid: int) -> ProcInfo | None:
    """Parent, group and start time of ``pid``, or ``None`` when it is gone (or unreadable)."""
    try:
        stat = (PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces or ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return ProcInfo(pid, int(fields[1]), int(fields[2]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def children(parent: int | None = None) -> list[ProcInfo]:
    """The direct children of ``parent`` (default: this process), from a scan of ``/proc``."""
    parent = os.getpid() if parent is None else parent
    found = []
    try:
        entries = list(PROC.iterdir())
    except OSError:  # no /proc: nothing we can find (or kill); the caller still finishes
        return []
    for entry in entries:
        if entry.name.isdigit():
            info = proc_info(int(entry.name))
            if info is not None and info.ppid == parent:
                found.append(info)
    return found


class Children:
    """Children of this process started after ``snapshot()``, and a way to kill them."""

    def __init__(self, before: frozenset[tuple[int, int]] = frozenset()) -> None:
        self.before = before

    @classmethod
    def snapshot(cls) -> Children:
        return cls(frozenset((c.pid, c.start) for c in children()))

    def new(self) -> list[ProcInfo]:
        return [c for c in children() if (c.pid, c.start) not in self.before]

    def kill_new(self) -> int:
        """SIGKILL each new child and the group it leads; returns how many were found."""
        found = self.new()
        for child in found:
            _kill(child, os.getpgrp())
        return len(found)

    def kill_until(self, finished: Callable[[], bool], timeout: float, poll: float = 0.02) -> bool:
        """Keep killing new children until ``finished()`` (the threads that start them are
        done) or ``timeout`` seconds pass; returns whether they finished.

        One pass is not enough: a thread whose sandbox was killed may start its next one
        (the harness's next service) a moment later.
        """
        deadline = time.monotonic() + timeout
        while True:
            self.kill_new()
            if finished():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)


def _kill(child: ProcInfo, own_group: int) -> None:
    """Kill ``child`` and the group it leads, if it is still that same child of ours.

    The pidfd, opened before the check, pins the process: if the check passes, the signal
    cannot reach a process that got the PID after our child was reaped.
    """
    try:
        pidfd: int | None = os.pidfd_open(child.pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):  # no pidfd on this kernel or Python: plain kill
        pidfd = None
    try:
        now = proc_info(child.pid)
        if now is None or (now.ppid, now.start) != (child.ppid, child.start):
            return
        if child.pgid == child.pid and child.pgid != own_group:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pgid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            else:
                os.kill(child.pid, signal.SIGKILL)
    finally:
        if pidfd is not None:
            os.close(pidfd)


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """Ignore a second Ctrl-C while cleaning up after the first (main thread only)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
