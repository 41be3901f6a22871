"""A sandboxed command's process group: its output read to a deadline, and its killing.

The backends that start the command as a local process (bubblewrap, and the in-container
backend of a Harbor task) read it the same way: output fed through a ``BoundedOutput``
until it ends, its wall time is up, or the grading job that started it is cancelled; then
the whole group is killed, so nothing it forked outlives the run.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Iterable

from cvdp_gym.sandbox.cancel import kill_on_cancel
from cvdp_gym.sandbox.output import BoundedOutput


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group ``proc`` leads (started with ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def kill_until_gone(pids: Callable[[], Iterable[int]], *, tries: int, pause_s: float) -> None:
    """SIGKILL every process ``pids()`` names until it names none (or ``tries`` rounds): for
    processes no single group holds (a cgroup's, a dead owner's)."""
    for _ in range(tries):
        found = list(pids())
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(pause_s)


def read_to_deadline(proc: subprocess.Popen[bytes], output: BoundedOutput, deadline: float) -> bool:
    """Feed ``proc``'s stdout into ``output`` until it closes; True (the group killed) when the
    ``deadline`` (``time.monotonic``) passed or the job was cancelled first."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    timed_out = False
    with kill_on_cancel(lambda: kill_group(proc)) as token:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (token is not None and token.cancelled):
                timed_out = True
                break
            ready, _, _ = select.select([fd], [], [], min(remaining, 0.5))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    timed_out = token is not None and token.cancelled
                    break
                output.feed(chunk)
    if timed_out:
        kill_group(proc)
    return timed_out
