"""Disk use of a folder tree, and a watchdog that stops a command whose files grow too far.

Contract: ``walk_tree`` and ``tree_usage`` never follow a symbolic link (a command in the
sandbox can make one point anywhere on the host) and skip entries that vanish while they
are read. ``QuotaWatchdog`` polls the usage of its roots while a command runs and calls
``on_exceeded`` whenever it is past the hard bounds; the caller kills the command there.
``prune_empty_parents`` removes the folders the quota's deletions emptied.
The agent workspace (``workspace.py``) uses them all: the watchdog during a command, the
walk for its after-command quota, its file listing and its sanitising before grading.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path


def walk_tree(root: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under ``root`` (relative path, lstat), never following symlinks."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            yield os.path.relpath(entry.path, root), info
            if stat.S_ISDIR(info.st_mode):
                stack.append(Path(entry.path))


def tree_usage(roots: list[Path], stop_bytes: int | None = None, stop_files: int | None = None) -> tuple[int, int]:
    """Bytes on disk and entry count under ``roots`` (stops early past the given bounds)."""
    size = count = 0
    for root in roots:
        for _, info in walk_tree(root):
            size += max(info.st_blocks * 512, 0) if stat.S_ISREG(info.st_mode) else 0
            count += 1
            if (stop_bytes is not None and size > stop_bytes) or (stop_files is not None and count > stop_files):
                return size, count
    return size, count


class QuotaWatchdog:
    """Calls ``on_exceeded`` while the files under ``roots`` are past the hard bounds.

    A per-file size limit bounds one file; this bounds many files written by one command
    before the after-command quota check sees them. Use it as a context manager around the
    command; ``fired`` tells whether it ever went off.
    """

    def __init__(
        self,
        roots: list[Path],
        *,
        hard_bytes: int,
        hard_files: int,
        on_exceeded: Callable[[], None],
        interval_s: float = 0.25,
    ) -> None:
        self.roots = roots
        self.hard_bytes = hard_bytes
        self.hard_files = hard_files
        self.on_exceeded = on_exceeded
        self.interval_s = interval_s
        self.fired = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> QuotaWatchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(self.interval_s):
            size, count = tree_usage(self.roots, self.hard_bytes, self.hard_files)
            if size > self.hard_bytes or count > self.hard_files:
                self.fired = True
                self.on_exceeded()


def prune_empty_parents(root: Path, keep: list[Path], removed: list[Path]) -> None:
    """Remove folders that the quota's deletions left empty (not ``keep`` nor ``/code/*``)."""
    for path in removed:
        folder = path.parent
        while folder not in keep and folder.parent != keep[0] and root in folder.parents:
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent
