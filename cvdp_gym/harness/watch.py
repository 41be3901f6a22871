"""Watch cocotb's results files while a harness runs: read each version, catch tampering.

cocotb writes one xUnit results file per simulation, once, when its regression ends, and
cocotb's runner deletes the file before each simulation. Two things follow.

- Many CVDP harnesses run pytest over several parameter sets and build with
  ``clean=True``, which removes the previous build folder, results file included, before
  the next simulation. ``ResultsWatcher`` reads each version as it is written, so the
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
else: it is reported in ``tampered``. A file renamed over a results file is a write too
(cocotb never renames), and so is a results file whose content at the end of the run is not
the last version read (written with no write the watcher saw, such as through ``mmap``).
If no simulation could be seen at all (no ``/proc``), every results file counts and a
second write without a delete in between is tampering.

Memory stays bounded whatever the design writes: each version is parsed as soon as it is
read and only its ``Version`` is kept (path, digest, test counts and the first failing
tests, ``results.read_results``), never its bytes. At most ``MAX_RESULTS_BYTES`` are read
of a version (a larger one is unreadable), at most ``MAX_VERSIONS`` results-named writes
and ``MAX_WATCHES`` folders are followed.

A pass needs the watcher to vouch for the run, so ``problems`` lists every reason it
cannot, and the runner never passes a run that has one: a version of a file that counts
that could not be read or is not a results file; a results file found in a folder when its
watch was added (a folder made during the run: it is scanned then, but its writes before
the watch cannot be counted); more results-named writes than ``MAX_VERSIONS``; a folder
that could not be watched; an inotify queue overflow (``IN_Q_OVERFLOW``: events were
lost). ``behind`` says whether a loaded machine alone could explain them (the runner then
runs the service once more).

On Linux the watcher uses inotify (every write is seen, however quick). inotify merges an
event with the unread one before it when they are identical, so two quick writes of one
file could read as one; the watcher also asks for ``IN_OPEN`` and ``IN_MODIFY``, which
fall between two writes' closes and keep them apart. Elsewhere it polls. It never follows
links made inside the sandbox.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import hashlib
import os
import select
import stat
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cvdp_gym.harness.results import (
    ResultsSummary,
    TestCounts,
    is_results_file,
    read_results,
    summaries_counts,
    summaries_failures,
)

#: Bytes read of one version of a results file: a larger one is unreadable (never a pass).
MAX_RESULTS_BYTES = 4_000_000
#: Results-named writes followed in one run: more, and the run cannot pass. A simulation
#: writes one; CVDP's harnesses run tens.
MAX_VERSIONS = 1000
#: Folders watched in one run: more, and the run cannot pass.
MAX_WATCHES = 10_000
#: Environment variable that marks the processes of one harness run (its value is random).
RUN_TAG = "CVDP_GYM_RUN"
_IN_MODIFY = 0x002
_IN_CLOSE_WRITE = 0x008
_IN_OPEN = 0x020
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ISDIR = 0x40000000
_IN_DONT_FOLLOW = 0x02000000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_ASKED = _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
#: ``IN_OPEN`` and ``IN_MODIFY`` tell the watcher nothing: they are asked for so that two
#: closes of one file never sit side by side in the queue (where inotify would merge them).
_MASK = _ASKED | _IN_OPEN | _IN_MODIFY | _IN_DONT_FOLLOW
#: Events that change what the watcher knows (the last two come unasked).
_NEWS = _ASKED | _IN_Q_OVERFLOW | _IN_IGNORED
_EVENT = struct.Struct("iIII")


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1  # noqa: B018 (probe)
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


@dataclass(frozen=True)
class Version:
    """One version of a results-named file, as read when it was written (never its bytes)."""

    path: str
    #: SHA-256 of the bytes read; empty when they could not be read.
    digest: str
    #: Its test counts and first failing tests; None when it could not be read or is not a
    #: cocotb results file (``problem`` says which).
    summary: ResultsSummary | None
    problem: str = ""


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
        self.versions: list[Version] = []  # each version read, in order
        #: Results files written and gone before they could be read: the counts miss them.
        self.lost = 0
        #: inotify's queue overflowed: events, maybe writes, were lost.
        self.overflowed = False
        #: More results-named writes than ``MAX_VERSIONS``: the later ones were not followed.
        self.too_many = False
        #: Results files written by someone other than cocotb.
        self._tampered: set[str] = set()
        self._unseen_change: set[str] = set()  # content changed with no write seen (end of run)
        self._renamed: set[str] = set()  # a file was renamed to this results file's name
        self._late: set[str] = set()  # found by the scan of a folder made during the run
        self._unwatched: tuple[int, str] = (0, "")  # folders that could not be watched: how many, the first
        self._results_writes = 0
        self._writes: dict[str, int] = {}  # path -> writes seen since it was created
        self._all_writes: dict[str, int] = {}  # path -> every write seen
        self._segments: dict[str, int] = {}  # path -> writes that followed its creation or deletion
        self._sims: dict[tuple[int, int], str] = {}  # (pid, start) of a simulation -> its results file
        self._checked: set[tuple[int, int, bytes]] = set()  # (pid, start, comm) seen, not a simulation
        self._seen: dict[str, tuple[int, int, int]] = {}  # polling: path -> (inode, mtime, size)
        self._digest: dict[str, str] = {}  # path -> digest of its last version read
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
            self._check_last_versions()
        else:
            self._poll(final=True)  # what the last simulation left

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
        A file renamed to a results file's name, or whose content changed after its last
        version was read (no write seen), counts too.
        """
        declared = self.declared
        changed = {p for p in self._unseen_change | self._renamed if not declared or p in declared}
        if not declared:
            return set(self._tampered) | changed
        return changed | {
            p for p, n in self._all_writes.items() if p in declared and n > max(declared[p], self._segments.get(p, 0))
        }

    def counts(self) -> TestCounts:
        """Counts over every simulation; a tampered file's test cases all count as failed."""
        declared, tampered = self.declared, self.tampered
        kept = [v for v in self.versions if not declared or v.path in declared]
        counts = summaries_counts(v.summary for v in kept if v.path not in tampered)
        forged = summaries_counts(v.summary for v in kept if v.path in tampered)
        if forged.total:
            counts = counts + TestCounts(forged.total, 0, forged.total, 0)
        return counts

    def failures(self) -> list[dict[str, str]]:
        """Failing tests (name, assertion message) of the files that count, as ``counts`` reads them."""
        declared, tampered = self.declared, self.tampered
        return summaries_failures(
            v.summary for v in self.versions if (not declared or v.path in declared) and v.path not in tampered
        )

    @property
    def problems(self) -> list[str]:
        """Why the watcher cannot vouch for the run's results (empty: it can). A run with
        any is never a pass, whatever pytest said."""
        declared = self.declared
        out: list[str] = []
        if self.overflowed:
            out.append("inotify's event queue overflowed: writes to the results files may have gone unseen")
        if self.too_many:
            out.append(f"more than {MAX_VERSIONS} results files were written")
        if self._unwatched[0]:
            out.append(f"{self._unwatched[0]} folder(s) could not be watched ({self._unwatched[1]})")
        unreadable: dict[str, str] = {}
        for version in self.versions:
            if version.summary is None and (not declared or version.path in declared):
                unreadable.setdefault(version.path, version.problem)
        for path, problem in sorted(unreadable.items()):
            out.append(f"results file {Path(path).name} unreadable: {problem}")
        late = sorted(p for p in self._late if not declared or p in declared)
        if late:
            names = ", ".join(Path(p).name for p in late)
            out.append(f"results file(s) written before their folder was watched ({names}): their writes cannot be counted")
        return out

    @property
    def behind(self) -> bool:
        """The watcher fell behind (a results file gone before it was read, lost events, a
        file written before its folder was watched): a loaded machine can cause it, so
        another run may see every write."""
        declared = self.declared
        return bool(self.lost or self.overflowed or any(not declared or p in declared for p in self._late))

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
        (``record``: a folder made during the run, written before its watch was added: their
        writes are counted once, and the file is ``_late``)."""
        assert _LIBC is not None
        wd = _LIBC.inotify_add_watch(self._fd, os.fsencode(folder), _MASK) if len(self._watches) < MAX_WATCHES else -2
        if wd < 0:
            if wd == -2 or ctypes.get_errno() not in (errno.ENOENT, errno.ENOTDIR):  # ENOENT: gone already
                count, first = self._unwatched
                self._unwatched = (count + 1, first or str(folder))
            return
        self._watches[wd] = folder
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                self._watch_tree(Path(entry.path), record=record)
            elif (
                record
                and entry.is_file(follow_symlinks=False)
                and is_results_file(Path(entry.path))
                and self._written(Path(entry.path))
            ):
                self._late.add(str(Path(entry.path)))

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except OSError:  # BlockingIOError: nothing more to read
                return
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                raw = data[offset + _EVENT.size : offset + _EVENT.size + length]
                offset += _EVENT.size + length
                if not mask & _NEWS:
                    continue  # IN_OPEN, IN_MODIFY: they only keep closes apart
                if mask & _IN_Q_OVERFLOW:
                    # Events were lost: the run cannot pass. Watch what is there now, so
                    # later writes are still seen, without counting its files again.
                    self.overflowed = True
                    for root in self.roots:
                        self._watch_tree(root, record=False)
                    continue
                if mask & _IN_IGNORED:  # its folder is gone (a clean build removed it)
                    self._watches.pop(wd, None)
                    continue
                folder = self._watches.get(wd)
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
        results = is_results_file(path)
        if mask & _IN_MOVED_TO and results:
            # Renamed over (or to) a results file: a write, and never cocotb's (it writes in place).
            if self._written(path, _read(path), segment=False):
                self._renamed.add(key)
            return
        if mask & (_IN_DELETE | _IN_MOVED_FROM | _IN_CREATE):
            self._writes.pop(key, None)  # a new file from here on
        if mask & _IN_CLOSE_WRITE and results:
            # Read first: the next simulation's clean build can delete it within milliseconds.
            data = _read(path)
            self._find_simulations()  # the simulator that wrote it may still be alive now
            self._written(path, data)

    def _written(self, path: Path, data: bytes | str | None = None, *, segment: bool = True) -> bool:
        """One write of a results-named file; ``data``: its bytes as read (a str: why they
        could not be; None: read them now); ``segment``: a write after a delete or a create
        starts a new segment (a rename does not: the name was never free). False: past
        ``MAX_VERSIONS``, not followed."""
        key = str(path)
        if self.too_many or self._results_writes >= MAX_VERSIONS:
            self.too_many = True  # the run cannot pass: follow nothing more
            return False
        self._results_writes += 1
        if segment and not self._writes.get(key):
            self._segments[key] = self._segments.get(key, 0) + 1  # first write since made or deleted
        self._writes[key] = self._writes.get(key, 0) + 1
        self._all_writes[key] = self._all_writes.get(key, 0) + 1
        if self._writes[key] > 1:
            self._tampered.add(key)
        if data is None:
            data = _read(path)
        if isinstance(data, bytes):
            self._keep(key, data)
        elif not os.path.lexists(path):
            self.lost += 1  # written, then gone before it could be read (the next clean build)
        else:
            self._digest[key] = ""  # nothing to compare its content with at the end
            self.versions.append(Version(key, "", None, data))
        return True

    def _check_last_versions(self) -> None:
        """Compare each results file still there with its last version read: a change no
        write explained (a write through ``mmap``) is tampering."""
        declared = self.declared
        for key, digest in self._digest.items():
            if not digest or (declared and key not in declared) or not os.path.lexists(key):
                continue
            data = _read(Path(key))
            if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != digest:
                self._unseen_change.add(key)

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
        alive: set[tuple[int, int, bytes]] = set()
        for name in entries:
            if not name.isdigit():
                continue
            proc = f"/proc/{name}/"  # strings, not Path: pathlib interns each pid
            try:
                stat_line = _slurp(proc + "stat")
                comm, rest = stat_line.split(b"(", 1)[1].rsplit(b")", 1)
                key = (int(name), int(rest.split()[19]), comm)
            except (OSError, IndexError, ValueError):
                continue
            alive.add(key)
            if key in self._checked:  # environments change only with exec, which changes comm
                continue
            self._checked.add(key)
            try:
                environ = _slurp(proc + "environ")
                if needle not in environ.split(b"\0"):
                    if _age_s(key[1]) < _YOUNG_S:  # forked, maybe not yet exec'd (python -> python keeps comm)
                        self._checked.discard(key)
                    continue
                declared = _env_value(environ, b"COCOTB_RESULTS_FILE")
                if declared is None or b"libcocotb" not in _slurp(proc + "maps"):
                    # not a simulator (pytest, a shell the design started), or not loaded yet
                    self._checked.discard(key)
                    continue
                cwd = os.readlink(proc + "cwd")
            except (OSError, ValueError):
                continue
            host = self._host_path(os.path.normpath(os.path.join(cwd, declared)))
            if host is not None:
                self._sims[key[:2]] = host
        self._checked &= alive  # only live processes: the set stays as small as the process table

    def _host_path(self, inside: str) -> str | None:
        for prefix, folder in sorted(self.mounts.items(), key=lambda item: -len(item[0])):
            if inside == prefix or inside.startswith(prefix.rstrip("/") + "/"):
                return str(folder / inside[len(prefix) :].lstrip("/"))
        return None

    # -- polling fallback -----------------------------------------------------------------

    def _poll(self, *, record: bool = True, final: bool = False) -> None:
        """Keep each results file that changed since the last poll (``record=False``: only
        remember what is there; ``final``: a file that still does not parse is unreadable,
        not a write in progress)."""
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
                    if isinstance(data, bytes) and (read_results(data) is not None or final):
                        self._seen[str(path)] = signature
                        self._keep(str(path), data)
                    elif isinstance(data, str) and final:
                        self._seen[str(path)] = signature
                        self.versions.append(Version(str(path), "", None, data))

    def _keep(self, key: str, data: bytes) -> None:
        """Keep what the verdict needs of one version: its digest and summary, not its bytes."""
        digest = hashlib.sha256(data).hexdigest()
        if self._digest.get(key) == digest:
            return
        self._digest[key] = digest
        if len(self.versions) >= MAX_VERSIONS:
            self.too_many = True
            return
        summary = read_results(data)
        problem = "" if summary is not None else "not a cocotb results file (not well-formed xUnit XML)"
        self.versions.append(Version(key, digest, summary, problem))


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


def _slurp(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _env_value(environ: bytes, key: bytes) -> str | None:
    for item in environ.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name == key:
            return os.fsdecode(value)
    return None


def _read(path: Path) -> bytes | str:
    """The file's bytes (regular files only, never through a link, at most
    ``MAX_RESULTS_BYTES``), or why they could not be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return f"could not be opened ({os.strerror(exc.errno or 0)})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_size > MAX_RESULTS_BYTES:
            return f"over {MAX_RESULTS_BYTES} bytes ({info.st_size})"
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_RESULTS_BYTES + 1)
        if len(data) > MAX_RESULTS_BYTES:
            return f"over {MAX_RESULTS_BYTES} bytes"
        return data
    except OSError as exc:
        return f"could not be read ({os.strerror(exc.errno or 0)})"
    finally:
        os.close(fd)
