"""Run commands in rootless Podman containers: the Docker sandbox's contract, no daemon as root.

Podman's API service (``podman system service``, started by the user it runs as: ``bash
scripts/podman.sh``) speaks Docker's API, so ``PodmanSandbox`` is ``DockerSandbox`` pointed
at that socket, with the same stand-in image (imported from the simulation root through
the same API), the same mounts, no network, the caller's environment only, and removal of
every container whatever happens. What differs:

- containers are created through Podman's own endpoint (``/libpod/containers/create``):
  its Docker-compatible one ignores ``ulimits`` (Podman 4.3);
- in a rootless engine the command runs as the container's root, which *is* the calling
  user on the host: what it writes to the mounts belongs to the caller (any other uid
  would map to a subordinate id the caller cannot remove). It has no privilege on the host
  that the user lacks;
- memory and process limits are cgroups where the engine has them (rootful, or rootless
  on cgroups v2 with the controllers delegated); a rootless engine on cgroups v1 has none,
  so, like the bubblewrap sandbox without cgroups, they are rlimits, per process:
  ``RLIMIT_DATA`` at ``memory_mb`` (a process's writable memory; an allocation past it
  fails, and ``out_of_memory`` is never set; not ``RLIMIT_AS``, which the runtime's own Go
  start-up exceeds at small limits) and ``RLIMIT_NPROC`` at ``processes`` (counted over
  all of the user's containers at once). File size and core dumps are rlimits either way.

The OCI runtime is the service's (``oci_runtime.py``): a local service whose runtime cannot
start containers under this host's cgroups (crun on a hybrid host) is refused with one line
saying how to restart it (``scripts/podman.sh`` picks a runtime that can).

The socket: ``$CONTAINER_HOST``, else ``$DOCKER_HOST``, else the user's
``$XDG_RUNTIME_DIR/podman/podman.sock`` (``/run/user/UID/...`` without the variable),
where ``scripts/podman.sh`` and Podman's own systemd socket put it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cvdp_gym.sandbox.base import Limits, Mount, SandboxUnavailable
from cvdp_gym.sandbox.docker import DockerSandbox
from cvdp_gym.sandbox.docker_images import docker_sdk
from cvdp_gym.sandbox.oci_runtime import (
    ADMIN_FIX,
    CRUN_REFUSAL,
    cgroup_layout,
    choose_runtime,
    installed_runtimes,
    refusal,
)
from cvdp_gym.toolchain import Toolchain

if TYPE_CHECKING:
    import docker

__all__ = ["PODMAN_FIX", "PodmanSandbox", "is_podman", "podman_rows", "podman_url"]

PODMAN_FIX = (
    "no Podman service answers; start yours (as yourself, not root) with: bash scripts/podman.sh  "
    "(it needs: apt-get install -y podman uidmap, and your user in /etc/subuid and /etc/subgid), "
    "or set CONTAINER_HOST=unix:///path/to/podman.sock"
)
#: Podman's own API (the version is the oldest this module speaks; newer services answer it).
LIBPOD = "/v4.0.0/libpod"
#: Variables Podman adds to every container; the sandbox passes only the caller's.
_PODMAN_VARIABLES = ("TERM", "container")


def podman_url() -> str:
    """The Podman socket to use (see the module docstring), as a ``unix://`` URL."""
    for variable in ("CONTAINER_HOST", "DOCKER_HOST"):
        value = os.environ.get(variable, "").strip()
        if value:
            return value
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    return f"unix://{Path(runtime) / 'podman' / 'podman.sock'}"


def is_podman(client: docker.DockerClient) -> bool:
    """Whether the engine behind ``client`` is Podman (its version names a Podman Engine)."""
    components = client.version().get("Components") or []
    return any(str(c.get("Name", "")).startswith("Podman") for c in components)


def connect_podman(client: docker.DockerClient | None = None) -> docker.DockerClient:
    """A client for the user's Podman service that answered a ping, or ``SandboxUnavailable``."""
    docker = docker_sdk()
    url = None
    try:
        if client is None:
            url = podman_url()
            client = docker.DockerClient(base_url=url, max_pool_size=64, timeout=120)
        client.ping()
        podman = is_podman(client)
    except Exception as exc:  # DockerException, requests' ConnectionError, socket errors
        where = f" at {url}" if url else ""
        raise SandboxUnavailable(f"{PODMAN_FIX} (nothing answered{where}: {type(exc).__name__})") from exc
    if not podman:
        raise SandboxUnavailable(
            f"the engine at {url or client.api.base_url} is Docker, not Podman: use --sandbox docker, "
            "or point CONTAINER_HOST at a Podman socket"
        )
    return client


class PodmanSandbox(DockerSandbox):
    """Runs commands in containers of a (rootless) Podman service; safe to share between threads.

    ``rootless``: the service runs as an ordinary user; ``cgroup_limits``: memory and
    process limits are cgroups (else rlimits; see the module docstring); ``runtime``: the
    service's OCI runtime."""

    name = "podman"
    engine_process = "podman"

    def __init__(
        self,
        toolchain: Toolchain | None = None,
        *,
        standin_tag: str | None = None,
        client: docker.DockerClient | None = None,
    ) -> None:
        super().__init__(toolchain, standin_tag=standin_tag, client=connect_podman(client))
        host = self._libpod("GET", "/info").get("host", {})
        self.rootless = bool(host.get("security", {}).get("rootless"))
        controllers = set(host.get("cgroupControllers") or [])
        self.cgroup_limits = {"memory", "pids"} <= controllers
        self.runtime = str((host.get("ociRuntime") or {}).get("name") or "")

    def container_config(
        self,
        argv: list[str],
        *,
        image: str,
        mounts: Iterable[Mount],
        scratch: Path,
        cwd: str,
        env: Mapping[str, str],
        limits: Limits,
        name: str,
    ) -> dict[str, Any]:
        """Docker's keyword arguments for the same run, with Podman's user and limits."""
        from docker.types import Ulimit

        config = DockerSandbox.container_config(
            self, argv, image=image, mounts=mounts, scratch=scratch, cwd=cwd, env=env, limits=limits, name=name
        )
        if self.rootless:
            config["user"] = "0:0"  # the calling user on the host (see the module docstring)
        if not self.cgroup_limits:
            for key in ("mem_limit", "memswap_limit", "pids_limit"):
                config.pop(key)
            memory = limits.memory_mb * 1024 * 1024
            config["ulimits"] += [
                Ulimit(name="nproc", soft=limits.processes, hard=limits.processes),
                Ulimit(name="data", soft=memory, hard=memory),
            ]
        return config

    def _create(self, config: Mapping[str, Any]) -> str:
        """Create the container through Podman's own API, which applies every rlimit."""
        return str(self._libpod("POST", "/containers/create", libpod_spec(config))["Id"])

    def _run_container(self, config: Mapping[str, Any], *args: Any) -> dict[str, Any]:
        """Docker's run; a runtime that refuses this host's cgroups is ``SandboxUnavailable``
        (one line: how to restart the service with a runtime that can), not the answer's failure."""
        import docker

        try:
            return super()._run_container(config, *args)
        except docker.errors.APIError as exc:
            message = str(getattr(exc, "explanation", None) or exc)
            if CRUN_REFUSAL in message:
                raise SandboxUnavailable(runtime_problem(self.runtime or "crun", message)) from None
            raise

    def _run_line(self, config: Mapping[str, Any]) -> list[str]:
        """The ``podman run`` line of ``config``."""
        line = super()._run_line(config)
        extra = [f"--unsetenv={variable}" for variable in _PODMAN_VARIABLES]
        return ["podman", line[1], *extra, *line[2:]]

    def _libpod(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A call to Podman's own API; its errors raise as the Docker SDK's do (``APIError``)."""
        import docker
        import requests

        api = self.client.api
        data = json.dumps(body) if body is not None else None
        response = api.request(
            method, api.base_url + LIBPOD + path, data=data, headers={"Content-Type": "application/json"}
        )
        try:
            response.raise_for_status()
        except requests.HTTPError as exc:
            raise docker.errors.create_api_error_from_http_exception(exc) from None
        return dict(response.json())


def _local(client: docker.DockerClient) -> bool:
    """Whether the service listens on a local socket (its host's cgroups are this one's)."""
    return str(client.api.base_url).startswith("http+docker://")


def runtime_problem(runtime: str, refused: str | None = None) -> str | None:
    """One line when a service's ``runtime`` cannot start a container on this host (it
    ``refused`` with that engine message, or by this host's cgroup layout): why, and the
    runtime to restart it with (or what to ask an administrator for); else None."""
    layout = cgroup_layout()
    why_not = refused or refusal(runtime, layout)
    if why_not is None:
        return None
    others = [name for name in installed_runtimes() if Path(name).name != Path(runtime).name]
    choice = choose_runtime(runtime, installed_runtimes(), layout) if refused is None else None
    better = choice.runtime if choice is not None else (others[0] if others else None)
    if better is None:
        return f"Podman's OCI runtime {runtime} cannot start containers here ({why_not}), and no other is installed; {ADMIN_FIX}"
    return (
        f"the Podman service runs containers with {runtime}, which cannot start one here ({why_not}); "
        f"restart it with {better}: stop it and run bash scripts/podman.sh (it picks {better}), "
        f'or set runtime = "{better}" under [engine] in ~/.config/containers/containers.conf'
    )


def podman_rows() -> list[tuple[str, bool | None, str, str]]:
    """``(component, ok, detail, fix)`` rows for ``cvdp-gym doctor``; ok None: optional and absent.

    Which runtime a Podman service needs on this host's cgroup layout, and the user's own
    service: whether it answers, and whether its runtime can start containers here."""
    import subprocess

    if shutil.which("podman") is None:
        return [("podman", None, "not installed (optional: --sandbox podman)", "apt-get install -y podman uidmap runc")]
    layout = cgroup_layout()
    try:
        done = subprocess.run(
            ["podman", "info", "--format", "{{.Host.OCIRuntime.Name}}"], capture_output=True, text=True, timeout=60,
        )
        default = done.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        default = None
    choice = choose_runtime(default, installed_runtimes(), layout)
    rows: list[tuple[str, bool | None, str, str]] = [(
        "podman runtime", choice.runtime is not None,
        f"{choice.runtime}: {choice.reason}" if choice.runtime else choice.reason,
        "" if choice.runtime else ADMIN_FIX,
    )]
    try:
        client = connect_podman()
    except SandboxUnavailable:
        rows.append(("podman service", None, f"none answers at {podman_url()} (optional)", "bash scripts/podman.sh (as yourself)"))
        return rows
    try:
        host = client.api.get(client.api.base_url + LIBPOD + "/info").json().get("host", {})
    finally:
        client.close()
    runtime = str((host.get("ociRuntime") or {}).get("name") or "?")
    rootless = "rootless" if host.get("security", {}).get("rootless") else "rootful"
    problem = runtime_problem(runtime) if _local(client) else None
    rows.append(("podman service", problem is None, problem or f"{rootless} at {podman_url()}, runtime {runtime}", ""))
    return rows


def libpod_spec(config: Mapping[str, Any]) -> dict[str, Any]:
    """Podman's container spec for the Docker keyword arguments ``container_config`` returns."""
    spec: dict[str, Any] = {
        "name": config["name"],
        "image": config["image"],
        "command": list(config["command"]),
        "env": dict(config["environment"]),
        "unsetenv": list(_PODMAN_VARIABLES),
        "work_dir": config["working_dir"],
        "labels": dict(config["labels"]),
        "hostname": config["hostname"],
        "user": config["user"],
        "no_new_privileges": True,
        "stop_timeout": 0,  # removal kills at once (Podman's default waits 10 s after SIGTERM)
        "netns": {"nsmode": "none"},
        "log_configuration": {"driver": "none"},
        "stdin": False,
        "terminal": False,
        "mounts": [
            {
                "destination": mount["Target"],
                "source": mount["Source"],
                "type": "bind",
                "options": ["rbind", "ro" if mount.get("ReadOnly") else "rw"],
            }
            for mount in config["mounts"]
        ],
        "r_limits": [{"type": u["Name"], "soft": u["Soft"], "hard": u["Hard"]} for u in config["ulimits"]],
    }
    if "mem_limit" in config:
        spec["resource_limits"] = {
            "memory": {"limit": config["mem_limit"], "swap": config["memswap_limit"]},
            "pids": {"limit": config["pids_limit"]},
        }
    return spec
