"""A sandbox for grading inside a Harbor task's own container, where no namespace can be made.

Harbor's Docker environment and most hosted sandboxes run a task's container unprivileged:
bubblewrap cannot make its namespaces there, and no Docker engine is reachable. The container
is itself the boundary (Harbor's verifier runs after the agent, once, in a container thrown
away afterwards), and its root filesystem is the simulation root (the task's image is built
``FROM`` it), so this backend runs each harness command directly, as the official CVDP flow
runs it in its image: each ``Mount`` becomes a symbolic link at its target for the run (what
was there is moved aside and put back afterwards), with the same limits on wall time, file
size, core files and captured output, in a process group killed at the end. Read-only mounts
are not enforced, and runs take turns (the links are at fixed paths).

``make_grader(ContainerSandbox())``; ``tests/test.sh`` of an exported task picks it with
``CVDP_GYM_SANDBOX=container`` (``cvdp_gym.integrations.harbor``).
"""

from __future__ import annotations

import contextlib
import errno
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from cvdp_gym.sandbox.base import Limits, Mount, SandboxResult, SandboxUnavailable
from cvdp_gym.sandbox.output import BoundedOutput
from cvdp_gym.sandbox.process import kill_group, read_to_deadline
from cvdp_gym.toolchain import SimEnv, Toolchain, detect

#: Suffix of what a mount's link moved aside for the run.
ASIDE = ".cvdp-gym-aside"


class ContainerSandbox:
    """Runs commands directly in this (disposable) container; see the module docstring."""

    name = "container"

    def __init__(self, toolchain: Toolchain | None = None) -> None:
        self.toolchain = toolchain or detect("root")
        self._turn = threading.Lock()

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
        """Run ``argv`` with ``mounts`` linked in place; never leaves a process behind."""
        limits = limits or Limits()
        full_env = dict(env or {})
        if sim_env is not None:
            full_env.setdefault("PATH", f"{sim_env.sandbox_bin_dir}:/usr/local/bin:/usr/bin:/bin")
        full_env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        scratch.mkdir(parents=True, exist_ok=True)
        full_env.setdefault("TMPDIR", str(scratch))
        with self._turn, _linked(mounts):
            return _run(argv, cwd, full_env, limits)


@contextlib.contextmanager
def _linked(mounts: Iterable[Mount]) -> Iterator[None]:
    """Each mount's target a link to its source for the block (outer targets first)."""
    done: list[tuple[Path, Path | None]] = []
    try:
        for mount in sorted(mounts, key=lambda m: len(Path(m.target).parts)):
            target = Path(mount.target.rstrip("/") or "/")
            if target == Path("/"):
                raise SandboxUnavailable("a mount over / cannot be linked")
            aside = None
            if target.is_symlink() or target.exists():
                aside = target.with_name(target.name + ASIDE)
                if aside.is_symlink() or aside.exists():
                    raise SandboxUnavailable(f"{aside} is in the way: a run left it; remove it")
                _move(target, aside)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(Path(mount.source).resolve())
            done.append((target, aside))
        yield
    finally:
        for target, aside in reversed(done):
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
            if aside is not None:
                _move(aside, target)


def _move(source: Path, destination: Path) -> None:
    """Rename, or copy and delete where the overlay filesystem will not rename (a folder of
    an image's lower layer: ``EXDEV``)."""
    try:
        source.rename(destination)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.move(source, destination)


def _run(argv: list[str], cwd: str, env: dict[str, str], limits: Limits) -> SandboxResult:
    def limit() -> None:  # in the child, before exec
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        size = limits.file_size_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        memory = limits.memory_mb * 1024 * 1024 * 4  # address space, as bubblewrap's prlimit
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    start = time.monotonic()
    output = BoundedOutput(limits.output_bytes)
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=limit,
        )
    except FileNotFoundError as exc:  # the command itself is missing: its failure, as in a sandbox
        return SandboxResult(127, f"{exc}\n", 0, False, False, False, time.monotonic() - start, list(argv))
    except OSError as exc:
        raise SandboxUnavailable(f"cannot start {argv[0]!r} in this container: {exc}") from exc
    try:
        deadline = start + limits.wall_s
        timed_out = read_to_deadline(proc, output, deadline)
        try:
            returncode = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc)
            returncode = proc.wait()
    finally:
        kill_group(proc)
        if proc.stdout is not None:
            proc.stdout.close()
    text, truncated = output.text()
    return SandboxResult(
        returncode=-signal.SIGKILL if timed_out else returncode, output=text, output_bytes=output.total,
        truncated=truncated, timed_out=timed_out, out_of_memory=False, wall_s=time.monotonic() - start,
        command=list(argv),
    )
