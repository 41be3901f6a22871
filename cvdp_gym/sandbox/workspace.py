"""One agent episode's files, and bash commands run on them in the sandbox.

The workspace is a host folder seeded with the problem's context files, or, for a
repository-context problem, a copy-on-write copy of the repository's checked-out tree
(``base``, see :mod:`cvdp_gym.sandbox.tree_copy`: an overlay mount where this process may
mount, else a reflink or plain copy; ``tree.strategy`` says which), so that an episode
over a large repository starts in milliseconds and nothing it writes reaches the shared
checkout or another episode. Each command runs
as ``bash -c`` in a fresh :class:`BubblewrapSandbox` with the folder bound read-write at
``/code`` (also the working directory and ``HOME``), a private ``/tmp`` that lasts the
episode, the simulation toolchain read-only and nothing else of the host: no network, no
harness (it is copied in fresh only when grading), its own PID namespace, so every process
a command starts dies when the command ends. Per command: wall time, memory, processes and
file size limits; after it, a size quota on the whole workspace (files that push it over
are deleted and the model is told; over a repository, the quota counts what the episode
adds, not the repository itself); output kept as head and tail.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import stat
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cvdp_gym.errors import ArgumentTypeError, SandboxDied, UsageError, WorkspaceError
from cvdp_gym.sandbox.base import Limits, Mount
from cvdp_gym.sandbox.bwrap import BubblewrapSandbox
from cvdp_gym.sandbox.output import ELIDED, bound_text
from cvdp_gym.sandbox.paths import WORKSPACE_DIRS, check_relative_path
from cvdp_gym.sandbox.quota import QuotaWatchdog, prune_empty_parents, tree_usage, walk_tree
from cvdp_gym.sandbox.scratch import make_scratch_dir, remove_tree
from cvdp_gym.sandbox.tree_copy import TreeCopy, copy_tree
from cvdp_gym.sandbox.tree_texts import (
    MAX_TEXT_FILE_BYTES,
    TreeTexts,
    changed_paths,
    decode_text,
    read_tree_text,
    safe_path,
)
from cvdp_gym.toolchain import SimEnv

#: ``bound_text`` and ``ELIDED`` live in ``output.py``; re-exported for old imports.
__all__ = [
    "ELIDED",
    "MAX_COMMAND_BYTES",
    "MAX_TEXT_FILE_BYTES",
    "MOUNT_POINT",
    "CommandResult",
    "TreeTexts",
    "Workspace",
    "WorkspaceError",
    "WorkspaceLimits",
    "bound_text",
]

#: Where the workspace appears inside the sandbox.
MOUNT_POINT = "/code"
#: Longest command accepted (bytes): one ``argv`` string cannot exceed 128 KiB on Linux.
MAX_COMMAND_BYTES = 120_000

# Restores the working directory of the previous command, runs the command, and reports
# the final directory on a private descriptor (so redirections of stdout do not lose it).
_WRAPPER = (
    'cd -- "$1" 2>/dev/null || cd {mount}; __cvdp_cmd=$2; shift 2; exec 9>&1; '
    "trap 'printf \"\\n%s%s\\n\" \"{nonce}\" \"$PWD\" >&9 2>/dev/null' EXIT; "
    'eval "$__cvdp_cmd"'
)


@dataclass(frozen=True)
class WorkspaceLimits:
    """Limits for each command and for the workspace as a whole."""

    command_timeout_s: float = 60.0
    max_output_chars: int = 20_000
    max_workspace_mb: float = 256.0  # files under /code and /tmp together
    max_files: int = 20_000
    memory_mb: int = 4096
    processes: int = 256
    file_size_mb: int | None = None  # largest single file; None: the workspace quota

    @property
    def quota_bytes(self) -> int:
        return int(self.max_workspace_mb * 1024 * 1024)


@dataclass
class CommandResult:
    """What one command did, and the text the model reads about it (``observation``)."""

    command: str
    output: str
    exit_code: int
    timed_out: bool = False
    out_of_memory: bool = False
    truncated: bool = False
    output_bytes: int = 0
    cwd: str = MOUNT_POINT
    cwd_changed: bool = False
    removed: list[str] = field(default_factory=list)
    quota_note: str = ""
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def observation(self) -> str:
        """Output followed by status lines, as the model sees it (no timings: deterministic)."""
        lines = [self.output.rstrip("\n")] if self.output.strip() else []
        if self.timed_out:
            lines.append("[command killed: it ran past the time limit]")
        elif self.out_of_memory:
            lines.append("[command killed: it ran past the memory limit]")
        if self.quota_note:
            lines.append(f"[{self.quota_note}]")
        if self.cwd_changed:
            lines.append(f"[cwd: {self.cwd}]")
        lines.append(f"[exit code: {self.exit_code}]")
        return "\n".join(lines)


def _release(root: Path, tree: TreeCopy | None) -> None:
    """Unmount the workspace's copy of its base (if it is a mount), then remove the folder."""
    if tree is not None:
        tree.close()
    remove_tree(root)


class Workspace:
    """A temporary folder of files that an agent's bash commands act on, in a sandbox.

    ``files``: the initial files (workspace-relative path → text), written over ``base``
    when one is given (a read-only folder tree, such as a repository's checkout, that the
    workspace starts as a copy-on-write copy of). The folder is removed by ``close()``, on
    leaving a ``with`` block, or when the object is garbage collected.
    """

    def __init__(
        self,
        files: Mapping[str, str],
        *,
        base: Path | None = None,
        sandbox: BubblewrapSandbox | None = None,
        sim_env: SimEnv | None = None,
        limits: WorkspaceLimits | None = None,
        dirs: tuple[str, ...] = WORKSPACE_DIRS,
    ) -> None:
        self.sandbox = sandbox or BubblewrapSandbox()
        if sim_env is None:
            candidate = self.sandbox.toolchain.env("cocotb2")
            sim_env = candidate if candidate.installed else None
        self.sim_env = sim_env
        self.limits = limits or WorkspaceLimits()
        self.root = make_scratch_dir("ws")
        self.path = self.root / "code"
        self.scratch = self.root / "scratch"
        self.base = Path(base) if base is not None else None
        #: How the workspace was made from ``base`` (None without one).
        self.tree: TreeCopy | None = None
        try:
            if self.base is not None:
                self.tree = copy_tree(self.base, self.path)
            else:
                self.path.mkdir()
            (self.scratch / "tmp").mkdir(parents=True)
        except BaseException:
            _release(self.root, self.tree)
            raise
        self._finalizer = weakref.finalize(self, _release, self.root, self.tree)
        for folder in dirs:
            (self.path / folder).mkdir(exist_ok=True)
        for rel, text in files.items():
            self.write_text(rel, text)
        self._seed = {check_relative_path(rel): text for rel, text in files.items()}
        # The quota counts what the episode adds: an overlay's upper layer, or the folder
        # less what it held at the start (a repository is not the agent's to pay for).
        changes = self.tree.changes if self.tree is not None else None
        self._quota_roots = [changes if changes is not None else self.path, self.scratch]
        self._baseline = tree_usage([self.path]) if self.base is not None and changes is None else (0, 0)
        self.cwd = MOUNT_POINT
        #: Paths ``snapshot_dir`` removed before grading (symlinks, special files).
        self.dropped: list[str] = []
        self._nonce = f"__cvdp_cwd_{secrets.token_hex(8)}__="

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    @property
    def strategy(self) -> str | None:
        """``overlay``, ``reflink`` or ``copy``: how the workspace was made from ``base``."""
        return self.tree.strategy if self.tree is not None else None

    def close(self) -> None:
        """Unmount and remove the folder (idempotent)."""
        self._finalizer()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- commands ----------------------------------------------------------------------

    def run(
        self, command: str, timeout_s: float | None = None, *, mounts: Sequence[Mount] = (), env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run ``command`` with ``bash -c`` in the sandbox; never raises for what it does.

        ``mounts`` and ``env``: more folders and variables for this command (a command-line
        agent's installation and its way to the model); ``env`` is added to ``HOME``,
        ``LANG`` and ``TERM`` and may replace them."""
        if self.closed:
            raise UsageError("the workspace is closed")
        if not isinstance(command, str):
            raise ArgumentTypeError(f"command must be a str, got {type(command).__name__}")
        refused = self._refuse(command)
        if refused:
            return CommandResult(command, refused, exit_code=2, cwd=self.cwd)
        limits = self.limits
        timeout = limits.command_timeout_s if timeout_s is None else timeout_s
        file_mb = limits.file_size_mb or max(1, int(limits.max_workspace_mb))
        sandbox_limits = Limits(
            wall_s=timeout,
            memory_mb=limits.memory_mb,
            processes=limits.processes,
            file_size_mb=file_mb,
            output_bytes=limits.max_output_chars + 4096,
        )
        wrapper = _WRAPPER.format(mount=MOUNT_POINT, nonce=self._nonce)
        argv = ["bash", "-c", wrapper, "bash", self.cwd, command]
        started = time.time()
        watchdog = QuotaWatchdog(
            self._quota_roots,
            hard_bytes=2 * limits.quota_bytes + file_mb * 1024 * 1024 + self._baseline[0],
            hard_files=2 * limits.max_files + self._baseline[1],
            on_exceeded=self._kill_commands,
        )
        with watchdog:
            try:
                outcome = self.sandbox.run(
                    argv,
                    mounts=[Mount(self.path, MOUNT_POINT, writable=True), *mounts],
                    scratch=self.scratch,
                    cwd=MOUNT_POINT,
                    env={"HOME": MOUNT_POINT, "LANG": "C.UTF-8", "TERM": "dumb", **(env or {})},
                    sim_env=self.sim_env,
                    limits=sandbox_limits,
                )
            except SandboxDied as died:
                if not watchdog.fired or died.result is None:  # not the watchdog: the machine failed
                    raise
                outcome = died.result  # the watchdog killed it: the command's own outcome
        output, cwd = self._split_cwd(outcome.output)
        output, cut = bound_text(output, limits.max_output_chars)
        result = CommandResult(
            command=command,
            output=output,
            exit_code=outcome.returncode,
            timed_out=outcome.timed_out,
            out_of_memory=outcome.out_of_memory,
            truncated=outcome.truncated or cut,
            output_bytes=outcome.output_bytes,
            cwd=cwd or self.cwd,
            cwd_changed=bool(cwd) and cwd != self.cwd,
            wall_s=outcome.wall_s,
        )
        self.cwd = result.cwd
        result.removed, result.quota_note = self._enforce_quota(started)
        if watchdog.fired:
            result.quota_note = "command killed: the workspace grew far past its quota. " + result.quota_note
        return result

    def _refuse(self, command: str) -> str:
        if "\x00" in command:
            return "error: the command contains a NUL character"
        size = len(command.encode("utf-8", errors="replace"))
        if size > MAX_COMMAND_BYTES:
            return (
                f"error: the command is {size} bytes; the limit is {MAX_COMMAND_BYTES}. "
                "Write large files in several commands (e.g. cat >> file <<'EOF')."
            )
        return ""

    def _split_cwd(self, output: str) -> tuple[str, str | None]:
        """Remove the wrapper's cwd report from the output; return (output, cwd)."""
        at = output.rfind(self._nonce)
        if at < 0:
            return output, None
        line_end = output.find("\n", at)
        cwd = output[at + len(self._nonce) : line_end if line_end >= 0 else len(output)]
        before = output[:at]
        if before.endswith("\n"):
            before = before[:-1]
        rest = output[line_end + 1 :] if line_end >= 0 else ""
        valid = cwd.startswith("/") and len(cwd) < 4096
        return before + rest, cwd if valid else None

    # -- quota -------------------------------------------------------------------------

    def usage(self) -> tuple[int, int]:
        """Bytes on disk and number of entries under ``/code`` and ``/tmp`` that the
        episode added (over a ``base``: what it wrote, not the base itself)."""
        size, count = tree_usage(self._quota_roots)
        return max(0, size - self._baseline[0]), max(0, count - self._baseline[1])

    def _enforce_quota(self, since: float) -> tuple[list[str], str]:
        """Delete what pushed the workspace over its quota; the newest and biggest first."""
        quota, max_files = self.limits.quota_bytes, self.limits.max_files
        size, count = self.usage()
        if size <= quota and count <= max_files:
            return [], ""
        # Files this command wrote go first; then the biggest (over the size quota) or the
        # newest (over the entry count).
        over_size = size > quota
        entries = []
        # Over an overlay, its upper layer lists what the episode wrote; files are always
        # deleted through the workspace itself, never in a mounted layer.
        code_walk = self._quota_roots[0]
        for walked, root, label in ((code_walk, self.path, MOUNT_POINT), (self.scratch / "tmp", self.scratch / "tmp", "/tmp")):
            for rel, info in walk_tree(walked):
                if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode) or walked == root:
                    if stat.S_ISDIR(info.st_mode):
                        continue
                    blocks = info.st_blocks * 512
                    order = (info.st_mtime >= since - 0.05, blocks if over_size else info.st_mtime_ns)
                    entries.append((order, blocks, root / rel, f"{label}/{rel}"))
        entries.sort(key=lambda e: e[0], reverse=True)
        removed: list[str] = []
        removed_paths: list[Path] = []
        freed_bytes = freed_count = 0
        for _, blocks, path, shown in entries:
            if size - freed_bytes <= quota and count - freed_count <= max_files:
                break
            with contextlib.suppress(OSError):
                path.unlink()
                freed_bytes += blocks
                freed_count += 1
                removed.append(shown)
                removed_paths.append(path)
        prune_empty_parents(self.root, [self.path, self.scratch / "tmp"], removed_paths)
        shown = ", ".join(removed[:5]) + (f" and {len(removed) - 5} more" if len(removed) > 5 else "")
        note = (
            f"workspace quota exceeded ({size / 2**20:.1f} MB in {count} entries; limit "
            f"{self.limits.max_workspace_mb:g} MB, {max_files} entries): removed {shown or 'nothing'}"
        )
        return removed, note

    def _kill_commands(self) -> None:
        """Kill this workspace's running sandbox (its PID namespace takes the rest along)."""
        marker = str(self.root).encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\x00")
            except OSError:
                continue
            if argv and argv[0].endswith(b"bwrap") and any(marker in a for a in argv):
                with contextlib.suppress(OSError):
                    os.kill(int(entry.name), signal.SIGKILL)

    # -- files -------------------------------------------------------------------------

    def _host_path(self, rel: str) -> Path:
        """The host path of a workspace-relative path, refusing ones that leave it."""
        return safe_path(self.path, rel)

    def read_text(self, rel: str) -> str | None:
        """A regular text file's content, or None (missing, a symlink, binary or too big)."""
        return read_tree_text(self.path, rel)

    def read_texts(self, rels: Iterable[str]) -> dict[str, str]:
        """The texts of those of ``rels`` that are regular text files (what is graded of an
        agent's workspace: its target files), by path; a path that leaves it is left out."""
        texts = {}
        for rel in rels:
            try:
                text = self.read_text(rel)
            except WorkspaceError:
                text = None
            if text is not None:
                texts[rel] = text
        return texts

    def write_text(self, rel: str, text: str) -> None:
        """Write a file (replacing a symlink of that name rather than following it)."""
        path = self._host_path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or (path.exists() and not path.is_file()):
            if path.is_dir() and not path.is_symlink():
                raise WorkspaceError(f"{rel!r} is a folder")
            path.unlink()
        path.write_text(text, encoding="utf-8")

    def delete(self, rel: str) -> None:
        path = self._host_path(rel)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    def files(self) -> dict[str, str]:
        """Every regular text file under ``/code`` (path → text); symlinks are not followed.

        Over a repository that is the whole repository: :meth:`texts` reads on demand and
        :meth:`changes` only what the episode changed."""
        out: dict[str, str] = {}
        for rel, info in sorted(walk_tree(self.path)):
            if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_TEXT_FILE_BYTES:
                try:
                    text = decode_text((self.path / rel).read_bytes())
                except OSError:
                    continue
                if text is not None:
                    out[rel] = text
        return out

    def texts(self) -> TreeTexts:
        """The workspace's text files now, as a mapping that reads a file when asked."""
        return TreeTexts(self.path)

    def start_texts(self) -> Mapping[str, str]:
        """The text files the workspace started with (``files`` over ``base``), read on demand."""
        if self.base is None:
            return dict(self._seed)
        return TreeTexts(self.base, self._seed)

    def changes(self) -> tuple[dict[str, str], dict[str, str]]:
        """``(before, after)``: the text of every file the episode created, changed or
        deleted, at the start and now (a file absent on one side is missing from it)."""
        start, now = self.start_texts(), self.texts()
        if self.base is None:
            candidates = set(start) | set(self.files())
        else:
            changes = self.tree.changes if self.tree is not None else None
            candidates = changed_paths(self.base, self.path, changes) | set(self._seed)
        before: dict[str, str] = {}
        after: dict[str, str] = {}
        for rel in sorted(candidates):
            old, new = start.get(rel), now.get(rel)
            if old == new:
                continue
            if old is not None:
                before[rel] = old
            if new is not None:
                after[rel] = new
        return before, after

    @property
    def snapshot_dir(self) -> Path:
        """The folder to grade, after removing symlinks and special files.

        The grader copies this folder and reads logs from the copy on the host, where a
        symlink made inside the sandbox (``rtl/x.sv -> /etc/shadow``) would point at the
        host's files; removed paths are listed in ``self.dropped``.
        """
        self.dropped = self.sanitize()
        return self.path

    def sanitize(self) -> list[str]:
        """Delete symlinks, FIFOs, sockets and device nodes; return their paths.

        A symlink the ``base`` tree itself holds, unchanged, is part of the repository and stays.
        """
        dropped = []
        for rel, info in sorted(walk_tree(self.path)):
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                if stat.S_ISLNK(info.st_mode) and self._base_link(rel):
                    continue
                with contextlib.suppress(OSError):
                    (self.path / rel).unlink()
                    dropped.append(rel)
        return dropped

    def _base_link(self, rel: str) -> bool:
        """Is ``rel`` a symlink the base tree holds with the same target?"""
        if self.base is None:
            return False
        try:
            return (self.base / rel).is_symlink() and os.readlink(self.base / rel) == os.readlink(self.path / rel)
        except OSError:
            return False
