"""Run a command in a bubblewrap sandbox with hard limits.

The sandbox sees a fresh root made of the toolchain's system folders, read-only: with the
pinned simulation root (the default), its ``/usr``, ``/etc`` and ``/opt``; with the host
fallback, the host's ``/usr`` (and the merged-``/usr`` symlinks), a handful of ``/etc``
files and the simulation environment. Then exactly the mounts the caller names. It has no
network, its own PID namespace (so killing it kills everything it started), device nodes of
its own and a read-only ``/proc`` (``devices.py``: nothing it does to either reaches the
host's), and limits on
wall time, memory, processes, file size and captured output. Memory and process limits use
cgroups where they can be created, and ``prlimit`` otherwise.

Nothing of the caller's environment reaches the sandbox: ``bwrap`` itself (PID 1 inside,
whose ``/proc/1/environ`` any sandboxed process can read) is started with an explicit
minimal environment, and the command gets only the variables the caller passes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

from cvdp_gym.errors import SandboxDied
from cvdp_gym.sandbox.base import Limits, Mount, SandboxResult, SandboxUnavailable
from cvdp_gym.sandbox.devices import PLACEHOLDER, by_hand, device_binds, device_folder, own_devices
from cvdp_gym.sandbox.output import ELISION, BoundedOutput
from cvdp_gym.sandbox.process import kill_group, kill_until_gone, read_to_deadline
from cvdp_gym.sandbox.scratch import remove_orphan_scratch, remove_tree
from cvdp_gym.toolchain import SimEnv, Toolchain, detect

#: The contract types live in ``base.py`` (and ``ELISION`` in ``output.py``); re-exported
#: here for ``from cvdp_gym.sandbox.bwrap import Limits, ...``.
__all__ = ["ELISION", "BubblewrapSandbox", "Limits", "Mount", "SandboxResult", "SandboxUnavailable"]

#: ``/etc`` entries a compiler, perl and Python need; the rest of ``/etc`` stays hidden.
_ETC_ENTRIES = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "perl")
_SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: Folders of the simulation root visible in the sandbox (``/var``, ``/root`` stay hidden).
_ROOT_DIRS = (*_SYSTEM_DIRS, "etc", "opt")
#: The whole environment of the launcher and of ``bwrap`` itself.
_LAUNCH_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


_CGROUP_ROOT = Path("/sys/fs/cgroup")
#: How old an orphan's cgroup must be before ``remove_orphan_cgroups`` removes it, seconds.
ORPHAN_CGROUP_AGE_S = 60.0


class _Cgroups:
    """cgroup v1/v2 memory and pids limits for one run, if this machine allows them.

    Named ``cvdp-gym-<pid>-<random>`` after the process that makes them, so that one left
    by a process killed before its cleanup (SIGKILL) can be told apart from one in use and
    removed later (``remove_orphan_cgroups``)."""

    def __init__(self, limits: Limits) -> None:
        self.dirs: list[Path] = []
        name = f"cvdp-gym-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        root = _CGROUP_ROOT
        memory = limits.memory_mb * 1024 * 1024
        v1 = [
            (root / "memory", {"memory.limit_in_bytes": memory}),
            (root / "pids", {"pids.max": limits.processes}),
        ]
        v2 = root / "unified" if (root / "unified" / "cgroup.controllers").exists() else root
        try:
            if (root / "memory" / "memory.limit_in_bytes").exists():
                for base, settings in v1:
                    self._make(base / name, settings)
            elif (v2 / "cgroup.controllers").exists():
                controllers = (v2 / "cgroup.subtree_control").read_text()
                if "memory" in controllers and "pids" in controllers:
                    self._make(v2 / name, {"memory.max": memory, "pids.max": limits.processes})
        except OSError:
            self.remove()
            self.dirs = []

    def _make(self, path: Path, settings: Mapping[str, int]) -> None:
        path.mkdir()
        self.dirs.append(path)
        for key, value in settings.items():
            (path / key).write_text(str(value))

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs:
            with contextlib.suppress(OSError):
                found |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
        return found

    def kill_all(self) -> None:
        kill_until_gone(self.pids, tries=50, pause_s=0.01)

    def out_of_memory(self) -> bool:
        for d in self.dirs:
            for name in ("memory.oom_control", "memory.events"):
                with contextlib.suppress(OSError):
                    for line in (d / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill" and int(value) > 0:
                            return True
        return False

    def remove(self) -> None:
        for d in self.dirs:
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def remove_orphan_cgroups(root: Path = _CGROUP_ROOT, *, min_age_s: float = ORPHAN_CGROUP_AGE_S) -> list[Path]:
    """Remove the empty ``cvdp-gym-<pid>-*`` cgroups whose maker is dead (killed before its
    own cleanup) and that are ``min_age_s`` old; the removed folders. Others' cgroups in use
    are never touched: the maker lives, and a cgroup with a process in it cannot be removed."""
    removed: list[Path] = []
    for path in [*root.glob("cvdp-gym-*-*"), *root.glob("*/cvdp-gym-*-*")]:
        parts = path.name.split("-")
        if len(parts) != 4 or not parts[2].isdigit() or Path(f"/proc/{parts[2]}").exists():
            continue
        with contextlib.suppress(OSError):
            # A minute old at least: a maker in another PID namespace (a container sharing
            # this hierarchy) looks dead from here; its run joins its cgroup within moments.
            if time.time() - path.stat().st_mtime < min_age_s:
                continue
            path.rmdir()
            removed.append(path)
    return removed


class BubblewrapSandbox:
    """Runs commands under ``bwrap`` with the local simulation toolchain visible.

    A new sandbox first removes the cgroups and scratch folders a killed process left
    (``remove_orphan_cgroups``, ``scratch.remove_orphan_scratch``)."""

    name = "bubblewrap"

    def __init__(self, toolchain: Toolchain | None = None) -> None:
        self.toolchain = toolchain or detect()
        if not self.toolchain.bwrap.ok:
            raise SandboxUnavailable(
                f"bubblewrap (bwrap) not found; install it with: {self.toolchain.bwrap.fix}"
            )
        remove_orphan_cgroups()
        remove_orphan_scratch()

    def _system_args(self, env: SimEnv | None, scratch: Path) -> list[str]:
        root = self.toolchain.root
        if root is not None:
            return [*_bind_dirs(root, _ROOT_DIRS)]
        args = ["--dir", "/etc", "--ro-bind", str(_identity_files(scratch)), "/etc/passwd"]
        args += _bind_dirs(Path("/"), _SYSTEM_DIRS)
        for entry in _ETC_ENTRIES:
            path = Path("/etc") / entry
            if path.exists():
                args += ["--ro-bind", str(path), str(path)]
        if env is not None:
            base = env.base_prefix
            if base is not None and not str(base).startswith("/usr/"):
                args += ["--ro-bind", str(base), str(base)]
            args += ["--ro-bind", str(env.prefix), str(env.prefix)]
        return args

    def command(
        self,
        argv: list[str],
        *,
        mounts: Iterable[Mount],
        scratch: Path,
        cwd: str,
        env: Mapping[str, str],
        sim_env: SimEnv | None,
        interactive: bool = False,
        devices: Path | None = None,
    ) -> list[str]:
        """The ``bwrap`` argument vector (without the limit wrapper).

        ``interactive``: for a shell on the caller's terminal (``cvdp-gym debug --shell``),
        without ``--new-session``, which would detach the shell from that terminal.
        ``devices``: the run's device-node folder (``devices.device_folder``; ``run`` makes
        and removes it); without one, the nodes are named by ``devices.PLACEHOLDER`` where
        runs get their own (``command_line`` makes them when its line runs).
        """
        args = [
            self.toolchain.bwrap.path or "bwrap",
            "--unshare-all",
            "--die-with-parent",
            *([] if interactive else ["--new-session"]),
            "--hostname",
            "sandbox",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            # Read-only: outside the process folders its entries are the kernel's own, shared with
            # the host's /proc, and a sandboxed root owns them (devices.py says more).
            "--remount-ro",
            "/proc",
            # Over --dev's binds of the host's nodes: see devices.py.
            *device_binds(devices or (PLACEHOLDER if own_devices() else None)),
        ]
        # /tmp first: the toolchain may itself live under /tmp and is bound over it below.
        (scratch / "tmp").mkdir(parents=True, exist_ok=True)
        args += ["--bind", str(scratch / "tmp"), "/tmp"]
        args += self._system_args(sim_env, scratch)
        for mount in mounts:
            args += ["--bind" if mount.writable else "--ro-bind", str(mount.source), mount.target]
        args += ["--chdir", cwd, "--clearenv"]
        for key, value in env.items():
            args += ["--setenv", key, value]
        return [*args, "--", *argv]

    def run(
        self,
        argv: list[str],
        *,
        mounts: Iterable[Mount] = (),
        scratch: Path,
        cwd: str = "/",
        env: Mapping[str, str] | None = None,
        sim_env: SimEnv | None = None,
        limits: Limits | None = None,
        image: str | None = None,
    ) -> SandboxResult:
        """Run ``argv`` and return its result; never leaves a process behind.

        ``image``: the container image the harness names; this sandbox always uses its
        toolchain (the Docker backend resolves it).
        """
        limits = limits or Limits()
        devices = device_folder()
        try:
            bwrap_argv = self.command(
                argv, mounts=mounts, scratch=scratch, cwd=cwd, env=_full_env(env, sim_env), sim_env=sim_env,
                devices=devices,
            )
            return self._run(bwrap_argv, limits)
        finally:
            if devices is not None:
                remove_tree(devices)

    def _run(self, bwrap_argv: list[str], limits: Limits) -> SandboxResult:
        """Start ``bwrap_argv`` under ``limits`` (a cgroup or ``prlimit``) and read it to its end or deadline."""
        cgroups = _Cgroups(limits)
        join = "".join(f'echo $$ > "{f}" && ' for f in cgroups.procs_files)
        prlimit = _prlimit(limits, per_process=not cgroups.dirs)
        wrapper = ["/bin/sh", "-c", f'{join}exec "$@"', "sh", *prlimit, "--", *bwrap_argv]

        start = time.monotonic()
        output = BoundedOutput(limits.output_bytes)
        try:
            proc = subprocess.Popen(
                wrapper,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=_LAUNCH_ENV,
            )
        except OSError as exc:
            cgroups.remove()
            raise SandboxUnavailable(f"cannot start bubblewrap: {exc}") from exc
        try:
            timed_out = read_to_deadline(proc, output, start + limits.wall_s)
            try:
                returncode = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                returncode = proc.wait()
        finally:
            kill_group(proc)
            cgroups.kill_all()
            oom = cgroups.out_of_memory()
            cgroups.remove()
            if proc.stdout is not None:
                proc.stdout.close()
        text, truncated = output.text()
        result = SandboxResult(
            returncode=returncode if not timed_out else -signal.SIGKILL,
            output=text,
            output_bytes=output.total,
            truncated=truncated,
            timed_out=timed_out,
            out_of_memory=oom,
            wall_s=time.monotonic() - start,
            command=bwrap_argv,
            cgroups=[str(d) for d in cgroups.dirs],
        )
        if returncode < 0 and not timed_out and not oom:
            # bubblewrap itself killed: nothing inside its namespaces can signal it (a command
            # that dies by a signal inside gives 128 + the signal), so something outside did.
            died = SandboxDied(f"the sandbox was killed by signal {-returncode} in the middle of the run")
            died.result = result  # what it printed, for a caller that killed it on purpose
            raise died
        return result

    def command_line(
        self,
        argv: list[str],
        *,
        mounts: Iterable[Mount] = (),
        scratch: Path,
        cwd: str = "/",
        env: Mapping[str, str] | None = None,
        sim_env: SimEnv | None = None,
        limits: Limits | None = None,
        image: str | None = None,
        interactive: bool = False,
    ) -> list[str]:
        """The command line ``run`` starts for the same arguments, to run by hand: ``prlimit``
        with every limit per process (what ``run`` does where it cannot create cgroups), then
        the ``bwrap`` argument vector; where runs get device nodes of their own, inside an
        ``sh -c`` that makes them first and deletes them after (``devices.by_hand``).
        ``interactive``: see ``command``."""
        bwrap_argv = self.command(
            argv, mounts=mounts, scratch=scratch, cwd=cwd, env=_full_env(env, sim_env), sim_env=sim_env,
            interactive=interactive,
        )
        return by_hand([*_prlimit(limits or Limits(), per_process=True), "--", *bwrap_argv])


def _full_env(env: Mapping[str, str] | None, sim_env: SimEnv | None) -> dict[str, str]:
    """The command's variables: the caller's, and a ``PATH`` that finds the toolchain first."""
    full_env = dict(env or {})
    if sim_env is not None:
        full_env.setdefault("PATH", f"{sim_env.sandbox_bin_dir}:/usr/local/bin:/usr/bin:/bin")
    full_env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return full_env


def _prlimit(limits: Limits, *, per_process: bool) -> list[str]:
    """``prlimit`` and its limits; ``per_process``: also processes and memory (no cgroups)."""
    prlimit = [shutil.which("prlimit") or "prlimit", f"--fsize={limits.file_size_mb * 1024 * 1024}", "--core=0"]
    if per_process:
        # RLIMIT_NPROC counts every thread of the user, not the run's: an ordinary user gets
        # the run's allowance on top of what it runs already (its other runs included).
        # Root is exempt from it (and has cgroups), so nothing is counted there.
        nproc = limits.processes + (_user_threads() if os.getuid() != 0 else 0)
        prlimit += [f"--nproc={nproc}", f"--as={limits.memory_mb * 1024 * 1024 * 4}"]
    return prlimit


def _user_threads() -> int:
    """Threads this user's processes have now (what RLIMIT_NPROC counts)."""
    uid, count = os.getuid(), 0
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if entry.stat().st_uid == uid:
                        count += os.stat(f"/proc/{entry.name}/task").st_nlink - 2
    return count


def limits_in_force(limits: Limits | None = None) -> tuple[str, str]:
    """Which of ``limits`` hold for this user here, and which do not (for ``cvdp-gym doctor``).

    With a cgroup it may create (root, or a delegated cgroup v2 subtree) a run's memory and
    process count are totals over the whole run. Without one (an ordinary user on a node
    without delegation) ``prlimit`` bounds each process: its address space (4x the memory
    limit: compilers and WebAssembly runtimes reserve far more than they touch), and the
    number of processes (threads) this user may own: the run's allowance more than it owns
    when the run starts. File size and core files are always bounded.
    """
    limits = limits or Limits()
    cgroups = _Cgroups(limits)
    kind = None if not cgroups.dirs else "v1" if cgroups.dirs[0].parent.name == "memory" else "v2"
    cgroups.remove()
    always = f"file size {limits.file_size_mb} MB, no core files, wall time {limits.wall_s:.0f} s, output {limits.output_bytes} bytes kept"
    if kind is not None:
        return f"cgroup {kind}: memory {limits.memory_mb} MB and {limits.processes} processes per run; {always}", ""
    per_process = f"prlimit: address space {limits.memory_mb * 4} MB per process, {limits.processes} processes more than this user runs; {always}"
    return per_process, "no per-run memory or process total (no cgroup this user may create: cgroup v2 delegation would give them)"


def _bind_dirs(base: Path, names: Iterable[str]) -> list[str]:
    """Read-only binds of ``base/NAME`` at ``/NAME`` (symlinks, like merged ``/usr``, recreated)."""
    args: list[str] = []
    for name in names:
        path = base / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    return args


def _identity_files(scratch: Path) -> Path:
    """A minimal ``/etc/passwd`` so tools that look up the user work without the host's."""
    path = scratch / "passwd"
    if not path.exists():
        path.write_text("root:x:0:0:root:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n")
    return path
