"""Watch cocotb's results files while a harness runs: keep every version, catch tampering.

cocotb writes one xUnit results file per simulation, once, when its regression ends, and
cocotb's runner deletes the file before each simulation. Two things follow.

- Many CVDP harnesses run pytest over several parameter sets and build with
  ``clean=True``, which removes the previous build folder, results file included, before
  the next simulation. ``ResultsWatcher`` keeps each version as it is written, so the
  test counts cover every simulation.
- A design runs inside the simulator and can ``$fopen``/``$fwrite`` any path it can name,
  the results file included: a ``final`` block that rewrites it with passing test cases
  turns a failing design into a passing pytest run, in the official harness too; a file
  of another name could pad the counts.

So the watcher also learns, from ``/proc``, which results file each simulation was told
to write: cocotb's runner passes it as ``COCOTB_RESULTS_FILE`` in the environment of the
simulator process (a process that has cocotb's library loaded and carries this run's
tag), which the design cannot change. Only declared files count, and a declared file
written more often than simulations wrote it (those seen declaring it, or its
delete-separated writes where a quick simulation ended unseen) was also written by someone
else: it is reported in ``tampered``. If no simulation could be seen at all (no ``/proc``),
every results file counts and a second write without a delete in between is tampering.

On Linux the watcher uses inotify (every write is seen, however quick); elsewhere it
polls. It never follows links made inside the sandbox.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import os
import select
import stat
import struct
import threading
import time
from pathlib import Path

from cvdp_gym.harness.results import TestCounts, failed_tests, is_results_file, results_counts

_MAX_BYTES = 4_000_000
#: Environment variable that marks the processes of one harness run (its value is random).
RUN_TAG = "CVDP_GYM_RUN"
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_Q_OVERFLOW = 0x4000
_IN_ISDIR = 0x40000000
_IN_DONT_FOLLOW = 0x02000000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE | _IN_DONT_FOLLOW
_EVENT = struct.Struct("iIII")


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1  # noqa: B018 (probe)
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


class ResultsWatcher:
    """Context manager: records every results file written under ``roots`` while it is open."""

    def __init__(
        self,
        roots: list[Path],
        *,
        tag: str | None = None,
        mounts: dict[str, Path] | None = None,
        interval_s: float = 0.025,
        scan_interval_s: float = 0.1,
    ) -> None:
        """``roots``: host folders to watch; ``tag``: the value of ``RUN_TAG`` in the run's
        environment; ``mounts``: sandbox path prefix -> host folder, to map declared paths."""
        self.roots = roots
        self.tag = tag
        self.mounts = mounts or {}
        self.interval_s = interval_s
        self.scan_interval_s = scan_interval_s
        self.versions: list[tuple[str, bytes]] = []  # (path, content) of each version kept
        #: Results files written and gone before they could be read: the counts miss them.
        self.lost = 0
        #: Results files written by someone other than cocotb.
        self._tampered: set[str] = set()
        self._writes: dict[str, int] = {}  # path -> writes seen since it was created
        self._all_writes: dict[str, int] = {}  # path -> every write seen
        self._segments: dict[str, int] = {}  # path -> writes that followed its creation or deletion
        self._sims: dict[tuple[int, int], str] = {}  # (pid, start) of a simulation -> its results file
        self._checked: set[tuple[int, int, bytes]] = set()  # (pid, start, comm) seen, not a simulation
        self._seen: dict[str, tuple[int, int, int]] = {}  # polling: path -> (inode, mtime, size)
        self._digest: dict[str, str] = {}
        self._watches: dict[int, Path] = {}
        self._fd = -1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cvdp-results-watcher", daemon=True)

    def __enter__(self) -> ResultsWatcher:
        if _LIBC is not None:
            self._fd = _LIBC.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self._fd >= 0:
            for root in self.roots:
                # What is there already (an earlier service's results, files an agent left)
                # is not this run's: only files written from now on count.
                self._watch_tree(root, record=False)
        else:
            self._poll(record=False)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self._fd >= 0:
            self._drain()
            os.close(self._fd)
            self._fd = -1
        else:
            self._poll()  # what the last simulation left

    @property
    def declared(self) -> dict[str, int]:
        """Results files the simulations were told to write, and by how many simulations."""
        out: dict[str, int] = {}
        for path in self._sims.values():
            out[path] = out.get(path, 0) + 1
        return out

    @property
    def tampered(self) -> set[str]:
        """Results files written more often than simulations wrote them.

        Each simulation writes its file once, and cocotb deletes it before the next one: a
        file's legitimate writes are at most the simulations seen declaring it or, where a
        quick simulation ended before a ``/proc`` scan saw it, the delete-separated writes.
        """
        declared = self.declared
        if not declared:
            return set(self._tampered)
        return {
            p for p, n in self._all_writes.items() if p in declared and n > max(declared[p], self._segments.get(p, 0))
        }

    def counts(self) -> TestCounts:
        """Counts over every simulation; a tampered file's test cases all count as failed."""
        declared, tampered = self.declared, self.tampered
        kept = [(key, data) for key, data in self.versions if not declared or key in declared]
        counts = results_counts([data for key, data in kept if key not in tampered])
        forged = results_counts([data for key, data in kept if key in tampered])
        if forged.total:
            counts = counts + TestCounts(forged.total, 0, forged.total, 0)
        return counts

    def failures(self) -> list[dict[str, str]]:
        """Failing tests (name, assertion message) of the files that count, as ``counts`` reads them."""
        declared, tampered = self.declared, self.tampered
        return failed_tests(
            data for key, data in self.versions if (not declared or key in declared) and key not in tampered
        )

    # -- inotify ------------------------------------------------------------------------

    def _loop(self) -> None:
        next_scan = 0.0
        while not self._stop.is_set():
            if time.monotonic() >= next_scan:  # a /proc scan costs a few ms: not every tick
                self._find_simulations()
                next_scan = time.monotonic() + self.scan_interval_s
            if self._fd >= 0:
                ready, _, _ = select.select([self._fd], [], [], self.interval_s)
                if ready:
                    self._drain()
            else:
                self._stop.wait(self.interval_s)
                self._poll()

    def _watch_tree(self, folder: Path, *, record: bool = True) -> None:
        """Watch ``folder`` and its subfolders; record the results files already in them
        (``record``: a folder made during the run, written before its watch was added)."""
        assert _LIBC is not None
        wd = _LIBC.inotify_add_watch(self._fd, os.fsencode(folder), _MASK)
        if wd < 0:
            return
        self._watches[wd] = folder
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                self._watch_tree(Path(entry.path), record=record)
            elif record and entry.is_file(follow_symlinks=False) and is_results_file(Path(entry.path)):
                self._written(Path(entry.path))

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                return
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                raw = data[offset + _EVENT.size : offset + _EVENT.size + length]
                offset += _EVENT.size + length
                folder = self._watches.get(wd)
                if mask & _IN_Q_OVERFLOW:
                    for root in self.roots:  # events were lost: fall back to what is there
                        self._watch_tree(root)
                if folder is None:
                    continue
                path = folder / os.fsdecode(raw.rstrip(b"\0"))
                self._event(path, mask)

    def _event(self, path: Path, mask: int) -> None:
        key = str(path)
        if mask & _IN_ISDIR:
            if mask & (_IN_CREATE | _IN_MOVED_TO) and not path.is_symlink():
                self._watch_tree(path)
            return
        if mask & (_IN_DELETE | _IN_MOVED_FROM | _IN_CREATE | _IN_MOVED_TO):
            self._writes.pop(key, None)  # a new file from here on
        if mask & _IN_CLOSE_WRITE and is_results_file(path):
            # Read first: the next simulation's clean build can delete it within milliseconds.
            data = _read(path)
            self._find_simulations()  # the simulator that wrote it may still be alive now
            self._written(path, data)

    def _written(self, path: Path, data: bytes | None = None) -> None:
        key = str(path)
        if not self._writes.get(key):
            self._segments[key] = self._segments.get(key, 0) + 1  # first write since made or deleted
        self._writes[key] = self._writes.get(key, 0) + 1
        self._all_writes[key] = self._all_writes.get(key, 0) + 1
        if self._writes[key] > 1:
            self._tampered.add(key)
        if data is None:
            data = _read(path)
        if data is not None:
            self._keep(key, data)
        elif not os.path.lexists(path):
            self.lost += 1  # written, then gone before it could be read (the next clean build)

    # -- simulations ----------------------------------------------------------------------

    def _find_simulations(self) -> None:
        """Record the results file of every live simulator process of this run."""
        if not self.tag:
            return
        needle = f"{RUN_TAG}={self.tag}".encode()
        try:
            entries = os.listdir("/proc")
        except OSError:
            return
        for name in entries:
            if not name.isdigit():
                continue
            proc = Path("/proc") / name
            try:
                stat_line = (proc / "stat").read_bytes()
                comm, rest = stat_line.split(b"(", 1)[1].rsplit(b")", 1)
                key = (int(name), int(rest.split()[19]), comm)
            except (OSError, IndexError, ValueError):
                continue
            if key in self._checked:  # environments change only with exec, which changes comm
                continue
            self._checked.add(key)
            try:
                environ = (proc / "environ").read_bytes()
                if needle not in environ.split(b"\0"):
                    if _age_s(key[1]) < _YOUNG_S:  # forked, maybe not yet exec'd (python -> python keeps comm)
                        self._checked.discard(key)
                    continue
                declared = _env_value(environ, b"COCOTB_RESULTS_FILE")
                if declared is None or b"libcocotb" not in (proc / "maps").read_bytes():
                    # not a simulator (pytest, a shell the design started), or not loaded yet
                    self._checked.discard(key)
                    continue
                cwd = os.readlink(proc / "cwd")
            except (OSError, ValueError):
                continue
            host = self._host_path(os.path.normpath(os.path.join(cwd, declared)))
            if host is not None:
                self._sims[key[:2]] = host

    def _host_path(self, inside: str) -> str | None:
        for prefix, folder in sorted(self.mounts.items(), key=lambda item: -len(item[0])):
            if inside == prefix or inside.startswith(prefix.rstrip("/") + "/"):
                return str(folder / inside[len(prefix) :].lstrip("/"))
        return None

    # -- polling fallback -----------------------------------------------------------------

    def _poll(self, *, record: bool = True) -> None:
        """Keep each results file that changed since the last poll (``record=False``: only
        remember what is there)."""
        for root in self.roots:
            for folder, dirs, files in os.walk(root):  # os.walk does not follow links
                dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
                for name in files:
                    path = Path(folder) / name
                    if not is_results_file(path):
                        continue
                    try:
                        info = os.lstat(path)
                    except OSError:
                        continue
                    signature = (info.st_ino, info.st_mtime_ns, info.st_size)
                    if self._seen.get(str(path)) == signature:
                        continue
                    if not record:
                        self._seen[str(path)] = signature
                        continue
                    data = _read(path)
                    if data is not None and (results_counts([data]).total or b"</testsuites>" in data):
                        self._seen[str(path)] = signature
                        self._keep(str(path), data)

    def _keep(self, key: str, data: bytes) -> None:
        digest = hashlib.sha256(data).hexdigest()
        if self._digest.get(key) != digest:
            self._digest[key] = digest
            self.versions.append((key, data))


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
#: A process younger than this may still exec with a new environment under the same name.
_YOUNG_S = 2.0


def _age_s(start_ticks: int) -> float:
    """Seconds since a process started (its start time in clock ticks since boot)."""
    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return _YOUNG_S
    return uptime - start_ticks / _TICKS


def _env_value(environ: bytes, key: bytes) -> str | None:
    for item in environ.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name == key:
            return os.fsdecode(value)
    return None


def _read(path: Path) -> bytes | None:
    """The file's bytes (regular files only, never through a link, bounded)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
