"""What every sandbox backend is: the ``Sandbox`` protocol and the types it speaks.

Contract: ``run(argv, *, mounts, scratch, cwd, env, sim_env, limits, image)`` runs one
command with exactly the given mounts (plus the backend's read-only system folders), no
network, only the variables in ``env``, within ``limits``, and returns a ``SandboxResult``
with its output bounded; it never leaves a process (or a container) behind and never
raises for what the command does. ``SandboxUnavailable`` means the backend cannot run here
at all. Backends, one a module: ``bwrap.BubblewrapSandbox`` (the default),
``docker.DockerSandbox`` and ``podman.PodmanSandbox`` (Docker's backend on a rootless Podman
service, its one subclass); they satisfy the protocol, they do not subclass it.

The harness runner, the grader and the environments are typed against ``Sandbox``, not a
backend. What some backends add, and callers look up with ``getattr``:

- ``image_for(image) -> str`` and ``standin_tag``: a backend that picks a container image
  per harness service (Docker); ``serves_runtime_cache(image) -> bool``: whether that
  image holds the root's Verilator runtime cache (a backend without it always does);
- ``command_line(argv, ..., interactive=False) -> list[str]``: the command line ``run``
  starts for the same arguments, to print or run by hand (``cvdp-gym debug``); both
  backends have it;
- ``cancel() -> int``: remove every command still running (Docker's containers are not
  the caller's children, so Ctrl-C does not reach them);
- ``engine_process``: the name of the engine's process that binds the mounts (``dockerd``,
  ``podman``); a tree mounted for a run must be visible in its mount namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from cvdp_gym.errors import SandboxUnavailable
from cvdp_gym.toolchain import SimEnv, Toolchain

__all__ = ["Limits", "Mount", "Sandbox", "SandboxResult", "SandboxUnavailable"]


@dataclass(frozen=True)
class Limits:
    """Resource limits for one sandboxed command."""

    wall_s: float = 300.0
    memory_mb: int = 4096
    processes: int = 512
    file_size_mb: int = 1024
    output_bytes: int = 256_000  # captured output kept (head + tail); the rest is counted only


@dataclass(frozen=True)
class Mount:
    """A host folder visible in the sandbox at ``target`` (read-only unless ``writable``)."""

    source: Path
    target: str
    writable: bool = False


@dataclass
class SandboxResult:
    """What happened: exit status, bounded output and why it stopped."""

    returncode: int
    output: str
    output_bytes: int
    truncated: bool
    timed_out: bool
    out_of_memory: bool
    wall_s: float
    command: list[str] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)  # enforced limits here (removed after the run)


@runtime_checkable
class Sandbox(Protocol):
    """Runs untrusted commands with hard limits; see the module docstring for the contract.

    ``name``: the backend's name (``bubblewrap``, ``docker``, ``podman``), recorded with every result
    and used to rebuild the same sandbox elsewhere (``make_sandbox(name)``);
    ``toolchain``: the simulation toolchain the commands see.
    """

    name: str
    toolchain: Toolchain

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
        """Run ``argv`` (``scratch``: a host folder of this run's, for ``/tmp`` and the
        backend's own files; ``image``: the image a harness service names)."""
        ...
