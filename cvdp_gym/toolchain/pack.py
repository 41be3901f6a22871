"""The simulation root as one archive: packed once where it was built, installed by any user.

Building the root needs ``mmdebstrap`` (as root, or in its unshare mode with ``newuidmap``)
and a Debian archive; a cluster node often has neither. ``pack`` writes a built root as one
tar file (``cvdp-gym toolchain pack``) and ``unpack`` installs it anywhere, as any user, with
nothing but Python's standard library (``cvdp-gym toolchain install --from ARCHIVE``); a site
can unpack it once on a shared filesystem, read-only, and point every user at it
(``CVDP_GYM_ROOT``).

Format (``FORMAT``): a POSIX (pax) tar, uncompressed, gzip or xz (``COMPRESSIONS``), of
the root's directories, regular files and symbolic links, in the order of a sorted walk
(a folder before what it holds), with their permission bits and modification times
(Python's ``.pyc`` files are checked against their sources' times). Its first member is a
header (``HEADER``: the format and the root's lock, whose fingerprint is part of every
grading cache key), its last a manifest (``MANIFEST``: every entry with its type, and a
regular file's size and SHA-256). Left out: device nodes (the sandbox makes its own
``/dev``), the contents of ``/tmp``, set-user-ID and set-group-ID bits, owners (the files
belong to whoever installs them). ``pack`` also writes ``ARCHIVE.sha256`` (``sha256sum``
format) beside it.

``unpack`` is one pass over the stream: each member is checked (a relative path, no
``..``, its folder made earlier by this archive, so nothing is written through a link),
written into a new folder beside the target while its bytes are hashed, and compared with
the manifest at the end: a missing, extra or altered entry, or an archive cut short, is a
``RootBuildError`` and nothing is installed. With ``sha256`` (or an ``ARCHIVE.sha256`` beside
it) the whole archive's hash is checked too: the manifest catches damage, the published
hash catches a changed archive. The finished tree then replaces the target in one rename.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import posixpath
import shutil
import stat
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from cvdp_gym.errors import RootBuildError
from cvdp_gym.toolchain import icarus12
from cvdp_gym.toolchain.envs import GENERATIONS
from cvdp_gym.toolchain.root import (
    LOCK_PATH,
    lock_fingerprint,
    read_lock,
    root_complete,
    root_env,
    runtime_cache_ready,
    tools_ready,
)

FORMAT = "cvdp-gym-root/1"
HEADER = ".cvdp-gym-archive.json"
MANIFEST = ".cvdp-gym-manifest.json"
#: ``--compression`` -> (tarfile's write mode, its keyword arguments).
COMPRESSIONS: dict[str, tuple[str, dict[str, int]]] = {
    "gz": ("w:gz", {"compresslevel": 1}),
    "xz": ("w:xz", {"preset": 1}),
    "none": ("w:", {}),
}
#: Folders whose contents are left out of the archive (the folder itself is kept).
_EMPTIED = ("tmp",)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class PackResult:
    archive: Path
    sha256: str
    bytes: int
    entries: int
    skipped: list[str]
    seconds: float


class _Hashing(io.RawIOBase):
    """A file object that hashes (and counts) what passes through it, read or written."""

    def __init__(self, inner: IO[bytes]) -> None:
        self.inner = inner
        self.hash = hashlib.sha256()
        self.count = 0

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def tell(self) -> int:  # an uncompressed tar asks where it starts
        return self.count

    def read(self, size: int = -1) -> bytes:
        data = self.inner.read(size)
        self.hash.update(data)
        self.count += len(data)
        return data

    def write(self, data) -> int:  # type: ignore[override]
        self.hash.update(data)
        self.count += len(data)
        return self.inner.write(data)


def _walk(root: Path, rel: str = "") -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under ``root`` (sorted, a folder before its contents), never following links."""
    with os.scandir(root / rel if rel else root) as entries:
        found = sorted(entries, key=lambda e: e.name)
    for entry in found:
        path = posixpath.join(rel, entry.name) if rel else entry.name
        info = entry.stat(follow_symlinks=False)
        yield path, info
        if stat.S_ISDIR(info.st_mode) and path not in _EMPTIED:
            yield from _walk(root, path)


def _tarinfo(name: str, info: os.stat_result, kind: bytes) -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type = kind
    member.mode = stat.S_IMODE(info.st_mode) & ~(stat.S_ISUID | stat.S_ISGID)
    member.mtime = info.st_mtime
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    return member


def _json_member(tar: tarfile.TarFile, name: str, data: dict) -> None:
    body = json.dumps(data, sort_keys=True).encode()
    member = tarfile.TarInfo(name)
    member.size, member.mode, member.mtime = len(body), 0o644, int(time.time())
    tar.addfile(member, io.BytesIO(body))


def pack(root: Path, archive: Path, *, compression: str = "gz", log: Callable[[str], None] = print) -> PackResult:
    """Write the built root at ``root`` to ``archive`` (and ``archive.sha256``)."""
    if compression not in COMPRESSIONS:
        raise RootBuildError(f"unknown compression {compression!r}; expected one of {sorted(COMPRESSIONS)}")
    lock = read_lock(root)
    if lock is None or not root_complete(root):
        raise RootBuildError(f"no complete simulation root at {root}; build it first: cvdp-gym toolchain install")
    started = time.monotonic()
    partial = archive.with_name(archive.name + ".partial")
    try:
        digest, size, entries, skipped = _write(root, partial, lock, compression)
        partial.rename(archive)
        Path(str(archive) + ".sha256").write_text(f"{digest}  {archive.name}\n")
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise RootBuildError(f"cannot pack {root} into {archive}: {exc}") from None
    seconds = time.monotonic() - started
    log(f"packed {entries} entries of {root} into {archive} ({size / 1e6:.0f} MB, {compression}) in {seconds:.0f} s")
    return PackResult(archive, digest, size, entries, skipped, seconds)


def _write(root: Path, partial: Path, lock: dict, compression: str) -> tuple[str, int, int, list[str]]:
    """Write the archive to ``partial``: its SHA-256, size, entry count and what was left out."""
    mode, options = COMPRESSIONS[compression]
    partial.parent.mkdir(parents=True, exist_ok=True)
    entries: dict[str, list] = {}
    skipped: list[str] = []
    with open(partial, "wb") as raw:
        out = _Hashing(raw)
        with tarfile.open(fileobj=out, mode=mode, format=tarfile.PAX_FORMAT, **options) as tar:  # type: ignore[call-overload]
            _json_member(tar, HEADER, {"format": FORMAT, "lock_fingerprint": lock_fingerprint(lock), "lock": lock})
            for name, info in _walk(root):
                path = root / name
                if stat.S_ISDIR(info.st_mode):
                    tar.addfile(_tarinfo(name, info, tarfile.DIRTYPE))
                    entries[name] = ["d"]
                elif stat.S_ISLNK(info.st_mode):
                    member = _tarinfo(name, info, tarfile.SYMTYPE)
                    member.linkname = os.readlink(path)
                    tar.addfile(member)
                    entries[name] = ["l", member.linkname]
                elif stat.S_ISREG(info.st_mode):
                    member = _tarinfo(name, info, tarfile.REGTYPE)
                    member.size = info.st_size
                    with open(path, "rb") as handle:
                        source = _Hashing(handle)
                        tar.addfile(member, source)
                    entries[name] = ["f", info.st_size, source.hash.hexdigest()]
                else:
                    skipped.append(name)
            _json_member(tar, MANIFEST, {"format": FORMAT, "entries": entries, "skipped": skipped})
    return out.hash.hexdigest(), out.count, len(entries), skipped


def published_sha256(archive: Path) -> str | None:
    """The hash in ``ARCHIVE.sha256`` beside the archive, if there is one."""
    try:
        text = Path(str(archive) + ".sha256").read_text().split()
    except OSError:
        return None
    return text[0].lower() if text else None


def read_header(archive: Path) -> dict:
    """The archive's header (format, lock), read from its first member."""
    with _open(archive) as (tar, _):
        return _header(tar, archive)


@contextlib.contextmanager
def _open(archive: Path) -> Iterator[tuple[tarfile.TarFile, _Hashing]]:
    try:
        raw = open(archive, "rb")  # noqa: SIM115 (closed below; the tar stream reads it)
    except OSError as exc:
        raise RootBuildError(f"cannot read the root archive {archive}: {exc.strerror or exc}") from None
    with raw:
        source = _Hashing(raw)
        try:
            with tarfile.open(fileobj=source, mode="r|*") as tar:
                yield tar, source
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
            raise RootBuildError(f"the root archive {archive} is damaged or cut short: {exc}") from None


def _header(tar: tarfile.TarFile, archive: Path) -> dict:
    first = tar.next()
    if first is None or first.name != HEADER or not first.isreg():
        raise RootBuildError(f"{archive} is not a cvdp-gym root archive (no {HEADER} first); make one with: cvdp-gym toolchain pack")
    data = _read_json(tar, first, archive)
    if data.get("format") != FORMAT:
        raise RootBuildError(f"{archive} is a root archive of format {data.get('format')!r}; this cvdp-gym reads {FORMAT!r}")
    return data


def _read_json(tar: tarfile.TarFile, member: tarfile.TarInfo, archive: Path) -> dict:
    handle = tar.extractfile(member)
    try:
        data = json.loads(handle.read(64 << 20)) if handle is not None else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise RootBuildError(f"the root archive {archive} has an unreadable {member.name}")
    return data


def _checked_name(name: str, folders: set[str], archive: Path) -> str:
    """``name`` if it is a safe relative path whose folder this archive made; else refuse."""
    parts = name.split("/")
    if not name or name.startswith("/") or "\0" in name or any(p in ("", ".", "..") for p in parts):
        raise RootBuildError(f"the root archive {archive} holds an unsafe path {name!r}; it was not made by cvdp-gym toolchain pack")
    parent = posixpath.dirname(name)
    if parent and parent not in folders:
        raise RootBuildError(f"the root archive {archive} holds {name!r} before (or without) its folder")
    return name


def unpack(
    archive: Path,
    target: Path,
    *,
    sha256: str | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Install the root in ``archive`` at ``target`` (replacing what is there); returns ``target``.

    ``sha256``: the archive's expected hash (default: ``ARCHIVE.sha256`` beside it, if any).
    """
    expected = (sha256 or published_sha256(archive) or "").lower() or None
    started = time.monotonic()
    work = target.with_name(f"{target.name}.unpack-{os.getpid()}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_tree(work)
        work.mkdir(mode=0o700)
        lock = _install(archive, work, target, expected)
    except OSError as exc:
        raise RootBuildError(f"cannot install the root at {target}: {exc}; is it yours (a shared root is its owner's)?") from None
    finally:
        remove_tree(work)
    log(f"installed the root of {archive} at {target} in {time.monotonic() - started:.0f} s (root {lock_fingerprint(lock)}"
        + (", archive SHA-256 checked" if expected else ", no published SHA-256 to check") + ")")
    return target


def _install(archive: Path, work: Path, target: Path, expected: str | None) -> dict:
    """Unpack into ``work``, verify, and put it in ``target``'s place; returns its lock."""
    header, manifest, seen, digest = _extract(archive, work)
    if expected is not None and digest != expected:
        raise RootBuildError(f"the root archive {archive} has SHA-256 {digest}, expected {expected}: it was changed or damaged")
    _compare(manifest, seen, archive)
    lock = read_lock(work)
    if lock is None or lock_fingerprint(lock) != header.get("lock_fingerprint"):
        raise RootBuildError(f"the root in {archive} has no lock ({LOCK_PATH}) matching its header")
    _check_current(work, archive)
    work.chmod(0o755)  # a shared root: every user reads it
    old = target.with_name(f"{target.name}.old-{os.getpid()}")
    if target.exists() or target.is_symlink():
        target.rename(old)
    work.rename(target)
    remove_tree(old)
    return lock


def _extract(archive: Path, work: Path) -> tuple[dict, dict, dict[str, list], str]:
    """Write every member under ``work``; the header, the manifest, what was written, the archive's hash."""
    folders: set[str] = set()
    seen: dict[str, list] = {}
    modes: list[tuple[Path, int, float]] = []
    manifest = None
    with _open(archive) as (tar, source):
        header = _header(tar, archive)
        while (member := tar.next()) is not None:  # not ``for``: that yields the header again
            if manifest is not None:
                raise RootBuildError(f"the root archive {archive} has members after its manifest")
            if member.name == MANIFEST:
                manifest = _read_json(tar, member, archive)
                continue
            name = _checked_name(member.name, folders, archive)
            if name in seen:
                raise RootBuildError(f"the root archive {archive} holds {name!r} twice")
            path = work / name
            mode = member.mode & ~(stat.S_ISUID | stat.S_ISGID)
            if member.isdir():
                path.mkdir(mode=0o700)
                folders.add(name)
                modes.append((path, mode, member.mtime))
                seen[name] = ["d"]
            elif member.issym():
                os.symlink(member.linkname, path)
                os.utime(path, (member.mtime, member.mtime), follow_symlinks=False)
                seen[name] = ["l", member.linkname]
            elif member.isreg():
                handle = tar.extractfile(member)
                assert handle is not None
                digest = hashlib.sha256()
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "wb") as out:
                    while chunk := handle.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                os.chmod(path, mode)
                os.utime(path, (member.mtime, member.mtime))
                seen[name] = ["f", member.size, digest.hexdigest()]
            else:
                raise RootBuildError(f"the root archive {archive} holds {name!r} of a type it may not (only folders, files, links)")
        while source.read(_CHUNK):  # the rest of the stream (tar's end blocks), for the archive's hash
            pass
    if manifest is None:
        raise RootBuildError(f"the root archive {archive} has no manifest at its end: it is cut short")
    for path, mode, mtime in sorted(modes, key=lambda item: len(item[0].parts), reverse=True):
        os.chmod(path, mode)
        os.utime(path, (mtime, mtime))
    return header, manifest, seen, source.hash.hexdigest()


def _compare(manifest: dict, seen: dict[str, list], archive: Path) -> None:
    listed = {name: list(entry) for name, entry in (manifest.get("entries") or {}).items()}
    missing = sorted(set(listed) - set(seen))
    extra = sorted(set(seen) - set(listed))
    changed = sorted(name for name in set(listed) & set(seen) if listed[name] != seen[name])
    if missing or extra or changed:
        parts = [f"{label}: {', '.join(names[:5])}" + (f" and {len(names) - 5} more" if len(names) > 5 else "")
                 for label, names in (("missing", missing), ("not in its manifest", extra), ("altered", changed)) if names]
        raise RootBuildError(f"the root archive {archive} does not match its manifest ({'; '.join(parts)}); nothing was installed")


def _check_current(root: Path, archive: Path) -> None:
    """The unpacked root has every stage this cvdp-gym expects (else it was packed by another version)."""
    stale = [f"python env {g}" for g in GENERATIONS if not root_env(root, g).installed]
    stale += [] if tools_ready(root) else ["official Verilator and Yosys"]
    stale += [] if runtime_cache_ready(root) else ["Verilator runtime cache"]
    stale += [] if icarus12.ready(root) else ["Icarus 12"]
    if stale:
        raise RootBuildError(
            f"the root in {archive} was built by another version of cvdp-gym ({', '.join(stale)} differ from this "
            "version's recipe); pack it again with this version: cvdp-gym toolchain pack"
        )


def remove_tree(path: Path) -> None:
    """Remove ``path`` (a tree, a file or a link), making read-only folders writable as needed."""
    if path.is_symlink() or path.is_file():
        path.unlink()
        return
    if not path.exists():
        return
    # Folders packed read-only (0555) would refuse the removal of what they hold.
    for folder, dirs, _ in os.walk(path):
        for name in dirs:
            with contextlib.suppress(OSError):
                full = os.path.join(folder, name)
                if not os.path.islink(full):
                    os.chmod(full, 0o700)
    shutil.rmtree(path)
