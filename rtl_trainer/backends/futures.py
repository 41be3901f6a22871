"""Futures for the local backend, ordered like the Tinker service's.

Why: the training loop overlaps work by submitting requests back to back (e.g.
``forward_backward`` then ``optim_step``) and grading rollouts before awaiting them. A
single worker thread per client keeps that contract locally: calls run in submission
order, off the caller's thread, and ``result()`` blocks only when the value is needed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class LocalFuture(Generic[T]):
    """The value of a call queued on a local client (``result()``, ``done()``, ``await``)."""

    def __init__(self, future: concurrent.futures.Future[T]) -> None:
        self._future = future

    @classmethod
    def completed(cls, value: T) -> LocalFuture[T]:
        """A future that already holds ``value`` (for calls with nothing to queue)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        future.set_result(value)
        return cls(future)

    def result(self, timeout: float | None = None) -> T:
        """Block until the call finished; re-raises its exception."""
        return self._future.result(timeout)

    def done(self) -> bool:
        return self._future.done()

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._future.exception(timeout)

    def future(self) -> concurrent.futures.Future[T]:
        """The underlying ``concurrent.futures.Future`` (as the SDK's ``APIFuture``)."""
        return self._future

    async def result_async(self, timeout: float | None = None) -> T:
        return await asyncio.wait_for(asyncio.wrap_future(self._future), timeout)

    def __await__(self) -> Generator[Any, None, T]:
        return asyncio.wrap_future(self._future).__await__()

    def __repr__(self) -> str:
        return f"<LocalFuture {'done' if self.done() else 'pending'}>"


class SerialWorker:
    """One worker thread; every submitted call runs after the previous one finished."""

    def __init__(self, name: str) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=name
        )
        self._thread_ids: set[int] = set()
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> LocalFuture[T]:
        def run() -> T:
            with self._lock:
                self._thread_ids.add(threading.get_ident())
            return fn(*args, **kwargs)

        return LocalFuture(self._executor.submit(run))

    def run_sync(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` in queue order and wait for it; runs inline when already on the
        worker thread (waiting there would deadlock)."""
        if threading.get_ident() in self._thread_ids:
            return fn(*args, **kwargs)
        return self.submit(fn, *args, **kwargs).result()

    def shutdown(self, wait: bool = True) -> None:
        self._executor.shutdown(wait=wait)
