"""Cancelling a sandboxed run from another thread (a grading deadline, a cancelled job).

A thread cannot be stopped from outside, but what it waits on can: the sandbox it runs. An
executor sets a ``CancelToken`` as the current one (a context variable) around a job; each
sandbox run registers how to kill its command (the process group, the container) with the
current token. ``token.cancel()`` then kills whatever that job is running at once, and the
job's own cleanup runs as usual in its thread, since to it the command just died.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar

_CURRENT: ContextVar[CancelToken | None] = ContextVar("cvdp_gym_cancel_token", default=None)


class CancelToken:
    """Set once; calls every registered kill callback when set (and any registered after)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next = 0
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        for callback in callbacks:
            with contextlib.suppress(Exception):
                callback()

    @contextlib.contextmanager
    def on_cancel(self, callback: Callable[[], None]) -> Iterator[None]:
        """Run ``callback`` if the token is cancelled while the block runs (or already was)."""
        with self._lock:
            key = self._next
            self._next += 1
            if not self._cancelled:
                self._callbacks[key] = callback
                key_set = True
            else:
                key_set = False
        if not key_set:
            with contextlib.suppress(Exception):
                callback()
        try:
            yield
        finally:
            with self._lock:
                self._callbacks.pop(key, None)


def current_token() -> CancelToken | None:
    """The token of the job this thread runs, if an executor set one."""
    return _CURRENT.get()


@contextlib.contextmanager
def cancellable(token: CancelToken) -> Iterator[CancelToken]:
    """Make ``token`` the current one for the block (sandbox runs inside register with it)."""
    reset = _CURRENT.set(token)
    try:
        yield token
    finally:
        _CURRENT.reset(reset)


@contextlib.contextmanager
def kill_on_cancel(callback: Callable[[], None]) -> Iterator[CancelToken | None]:
    """Register ``callback`` with the current token for the block (no-op without one)."""
    token = current_token()
    if token is None:
        yield None
        return
    with token.on_cancel(callback):
        yield token
