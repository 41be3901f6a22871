"""A grading worker process for ``ProcessExecutor``: ``python -m cvdp_gym.execution.worker R W``.

Reads ``(job_id, fn, args)`` from file descriptor R and writes ``(job_id, status, value)``
to W, one job at a time. SIGINT cancels the running job (``KeyboardInterrupt``: the
sandbox's cleanup kills its command) and the worker goes on serving. The worker dies with
the process that started it (``PR_SET_PDEATHSIG``): a worker whose parent was SIGKILLed
would otherwise run its job to the end, sandbox included, for nobody.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from multiprocessing.connection import Connection

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Be SIGKILLed when the thread that started this process ends (Linux; elsewhere
    nothing), and exit now if ``parent`` is already gone (it died before the ``prctl``)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def serve(incoming: Connection, outgoing: Connection) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    while True:
        try:
            message = incoming.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if message is None:
            return
        job_id, fn, args = message
        try:
            reply = (job_id, "ok", fn(*args))
        except KeyboardInterrupt:
            reply = (job_id, "cancelled", None)
        except BaseException as exc:  # the job's error travels back to the caller
            reply = (job_id, "error", exc)
        try:
            outgoing.send(reply)
        except (OSError, KeyboardInterrupt):
            return
        except Exception as exc:  # the result or the exception would not pickle
            outgoing.send((job_id, "error", RuntimeError(f"{type(exc).__name__}: {exc}")))


if __name__ == "__main__":
    if len(sys.argv) > 3:
        die_with_parent(int(sys.argv[3]))
    serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False))
