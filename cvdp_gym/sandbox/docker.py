"""Run a command in a Docker container, with the same contract as the bubblewrap sandbox.

The official CVDP flow runs every harness service in the ``nvidia/cvdp-sim`` image. This
backend does the same on a local Docker engine: the official image when it is present
locally, otherwise a stand-in image imported from the toolchain's root filesystem (no
registry is needed). Every container gets no network, limits on memory, processes, file
size and wall time, no core dumps, the caller's environment and nothing else, and is
removed afterwards whatever happens (success, failure, timeout, exception, Ctrl-C).

Output is read from an attach stream (the container's log driver is ``none``), so a
command that prints gigabytes fills neither the engine's disk nor our memory: it is
bounded here like the bubblewrap sandbox's. Connecting to the engine and making or
resolving images is ``docker_images.py``'s part.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cvdp_gym.sandbox.base import Limits, Mount, SandboxResult, SandboxUnavailable
from cvdp_gym.sandbox.cancel import kill_on_cancel
from cvdp_gym.sandbox.docker_images import (
    ENGINE_FIX,
    OFFICIAL_IMAGE,
    OFFICIAL_REPOSITORY,
    PLACEHOLDERS,
    RUNTIME_CACHE_LABEL,
    STANDIN_REPOSITORY,
    build_image,
    connect,
    image_exists,
    image_labels,
    resolve_image,
)
from cvdp_gym.sandbox.output import BoundedOutput
from cvdp_gym.sandbox.owner import owner_alive, owner_token
from cvdp_gym.sandbox.scratch import remove_orphan_scratch
from cvdp_gym.toolchain import SimEnv, Toolchain, detect

if TYPE_CHECKING:
    import docker

#: The engine and image helpers live in ``docker_images.py``; re-exported here for
#: ``from cvdp_gym.sandbox.docker import connect, build_image, ...``.
__all__ = [
    "ENGINE_FIX",
    "LABEL",
    "OFFICIAL_IMAGE",
    "OFFICIAL_REPOSITORY",
    "PLACEHOLDERS",
    "RUNTIME_CACHE_LABEL",
    "STANDIN_REPOSITORY",
    "SYSTEM_PATH",
    "DockerSandbox",
    "build_image",
    "connect",
    "remove_orphan_containers",
    "resolve_image",
]

#: Every container this module creates carries this label (``cvdp-gym=1``).
LABEL = "cvdp-gym"
#: ... and its maker's owner token and host (``owner.py``), so that a later sandbox on the
#: same host removes the containers of a maker killed before it could (``remove_orphan_containers``).
OWNER_LABEL, HOST_LABEL = "cvdp-gym.owner", "cvdp-gym.host"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class DockerSandbox:
    """Runs commands in containers on a local Docker engine; safe to share between threads.

    A new sandbox first removes the scratch folders and containers a killed process left
    (``scratch.remove_orphan_scratch``, ``remove_orphan_containers``)."""

    name = "docker"
    #: The engine's process, which binds the mounts: ``copy_tree`` overlays a tree only when it
    #: runs in our mount namespace (``harness/runner.py``).
    engine_process = "dockerd"

    def __init__(
        self,
        toolchain: Toolchain | None = None,
        *,
        standin_tag: str | None = None,
        client: docker.DockerClient | None = None,
    ) -> None:
        self.toolchain = toolchain or detect()
        self.client = connect(client)
        self.standin_tag = standin_tag or f"{STANDIN_REPOSITORY}:{self.toolchain.fingerprint()}"
        self._resolved: dict[str, str] = {}
        self._labels: dict[str, dict[str, str]] = {}
        self._standin_ready = False
        self._lock = threading.Lock()
        self._running: set[str] = set()  # names of containers whose run() has not returned
        remove_orphan_scratch()
        remove_orphan_containers(self.client)

    @property
    def root_dir(self) -> Path | None:
        """The toolchain's root filesystem the stand-in image is imported from (kind ``root``)."""
        root = getattr(self.toolchain, "root", None) or getattr(self.toolchain, "root_dir", None)
        return Path(root) if root is not None else None

    def ensure_standin(self) -> str:
        """Build the stand-in image from the toolchain's root filesystem if it is missing."""
        with self._lock:
            if self._standin_ready:
                return self.standin_tag
            if not image_exists(self.client, self.standin_tag):
                root = self.root_dir
                if root is None or not root.is_dir():
                    raise SandboxUnavailable(
                        f"image {self.standin_tag} is missing and the toolchain has no root "
                        "filesystem to build it from; build it with "
                        "cvdp_gym.sandbox.docker.build_image(root_dir, tag)"
                    )
                cache = self.toolchain.runtime_cache_id
                labels = {RUNTIME_CACHE_LABEL: cache} if cache else {}
                build_image(root, self.standin_tag, client=self.client, labels=labels)
            self._standin_ready = True
            return self.standin_tag

    def serves_runtime_cache(self, image: str | None) -> bool:
        """Whether the image a service naming ``image`` runs in holds this root's Verilator
        runtime cache: the stand-in, or any image made from it (they carry its label, as the
        images the official runner is given when it runs here do); a real ``nvidia/cvdp-sim``
        has no cache and no ccache."""
        expected = self.toolchain.runtime_cache_id
        if expected is None:
            return False
        name = self.image_for(image)
        if name == self.standin_tag:
            return True
        with self._lock:
            labels = self._labels.get(name)
        if labels is None:
            labels = image_labels(self.client, name)
            with self._lock:
                self._labels[name] = labels
        return labels.get(RUNTIME_CACHE_LABEL) == expected

    def image_for(self, image: str | None) -> str:
        """The local image a service naming ``image`` runs in (resolved once per name)."""
        key = image or ""
        resolved = self._resolved.get(key)
        if resolved is None:
            resolved = resolve_image(image, self.standin_tag, self.client)
            self._resolved[key] = resolved
        if resolved == self.standin_tag:
            self.ensure_standin()
        return resolved

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
        """Keyword arguments for ``containers.create`` (what ``docker run`` would be given)."""
        from docker.types import LogConfig, Ulimit
        from docker.types import Mount as DockerMount

        (scratch / "tmp").mkdir(parents=True, exist_ok=True)
        binds = [DockerMount("/tmp", str(Path(scratch / "tmp").resolve()), type="bind")]
        for mount in mounts:
            source = str(Path(mount.source).resolve())
            binds.append(
                DockerMount(mount.target, source, type="bind", read_only=not mount.writable)
            )
        memory = limits.memory_mb * 1024 * 1024
        file_size = limits.file_size_mb * 1024 * 1024
        return {
            "image": image,
            "command": list(argv),
            "name": name,
            "labels": {LABEL: "1", OWNER_LABEL: owner_token(), HOST_LABEL: socket.gethostname()},
            "environment": dict(env),
            "working_dir": cwd,
            "mounts": binds,
            "network_mode": "none",
            "mem_limit": memory,
            "memswap_limit": memory,  # no swap: the memory limit is the limit
            "pids_limit": limits.processes,
            "ulimits": [
                Ulimit(name="fsize", soft=file_size, hard=file_size),
                Ulimit(name="core", soft=0, hard=0),
            ],
            # The caller's uid: files written to the mounts stay removable by the caller
            # (root on a root host, as the official runner).
            "user": f"{os.getuid()}:{os.getgid()}",
            "hostname": "sandbox",
            "security_opt": ["no-new-privileges"],
            "log_config": LogConfig(type="none"),
            "stdin_open": False,
            "tty": False,
            "detach": True,
        }

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
        """Run ``argv`` in a fresh container and return its result; never leaves one behind.

        ``image``: the image the harness names (``__OSS_SIM_IMAGE__``, ``nvidia/cvdp-sim:...``);
        ``None`` runs in the stand-in image.
        """
        limits = limits or Limits()
        start = time.monotonic()
        name = f"cvdp-gym-{uuid.uuid4().hex[:16]}"
        config = self._config(argv, mounts, scratch, cwd, env, sim_env, limits, image, name)
        output = BoundedOutput(limits.output_bytes)
        killed = threading.Event()
        done = False
        with self._lock:
            self._running.add(name)
        try:
            state = self._run_container(config, limits, output, killed, start)
            wall = time.monotonic() - start
            done = True
        finally:
            try:
                self._remove(name)
            except Exception:
                if done:  # do not hide the error that got us here
                    raise
            finally:
                with self._lock:
                    self._running.discard(name)
        text, truncated = output.text()
        timed_out = killed.is_set()
        return SandboxResult(
            returncode=-9 if timed_out else int(state.get("ExitCode", -1)),
            output=text,
            output_bytes=output.total,
            truncated=truncated,
            timed_out=timed_out,
            out_of_memory=bool(state.get("OOMKilled")) and not timed_out,
            wall_s=wall,
            command=self._run_line(config),
        )

    def _config(
        self,
        argv: list[str],
        mounts: Iterable[Mount],
        scratch: Path,
        cwd: str,
        env: Mapping[str, str] | None,
        sim_env: SimEnv | None,
        limits: Limits,
        image: str | None,
        name: str,
    ) -> dict[str, Any]:
        """The container ``run`` creates: the image resolved, ``PATH`` completed."""
        image_name = self.image_for(image)
        full_env = dict(env or {})
        if "PATH" not in full_env and image_name == self.standin_tag:
            prefix = f"/opt/cvdp/{sim_env.generation}/bin:" if sim_env is not None else ""
            full_env["PATH"] = prefix + SYSTEM_PATH
        return self.container_config(
            argv, image=image_name, mounts=mounts, scratch=scratch, cwd=cwd, env=full_env, limits=limits, name=name
        )

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
        """The ``docker run`` line of the container ``run`` creates for the same arguments;
        ``interactive``: with ``-it``, for a shell on the caller's terminal."""
        config = self._config(argv, mounts, scratch, cwd, env, sim_env, limits or Limits(), image, "unused")
        line = self._run_line(config)
        return [*line[:2], "-it", *line[2:]] if interactive else line

    def _run_line(self, config: Mapping[str, Any]) -> list[str]:
        """The ``docker run`` line of ``config``, for results and ``command_line``."""
        return _docker_run_line(config)

    def _create(self, config: Mapping[str, Any]) -> str:
        """Create the container ``config`` describes (not started); its id."""
        return str(self.client.containers.create(**config).id)

    def _run_container(
        self,
        config: Mapping[str, Any],
        limits: Limits,
        output: BoundedOutput,
        killed: threading.Event,
        start: float,
    ) -> dict[str, Any]:
        """Create, attach, start, stream until exit; the container's final ``State``."""
        import docker

        api = self.client.api
        container_id = self._create(config)
        # Attach before start so that no output is missed (the log driver keeps none).
        # Podman prepares the container when attached, so a command that cannot be executed
        # fails here already; Docker fails at start.
        try:
            stream = api.attach(container_id, stdout=True, stderr=True, stream=True, logs=False)
        except docker.errors.APIError as exc:
            return _exec_failure(exc, output)
        timer: threading.Timer | None = None
        try:
            try:
                api.start(container_id)
            except docker.errors.APIError as exc:
                return _exec_failure(exc, output)
            timer = threading.Timer(limits.wall_s, self._expire, args=(container_id, killed))
            timer.daemon = True
            timer.start()
            with kill_on_cancel(lambda: self._expire(container_id, killed)):
                for chunk in stream:
                    output.feed(chunk)
            # The stream can end before the process does (it closed its outputs); the timer
            # still bounds the wait.
            remaining = max(0.0, start + limits.wall_s - time.monotonic())
            api.wait(container_id, timeout=remaining + 120)
            return dict(api.inspect_container(container_id)["State"])
        finally:
            if timer is not None:
                timer.cancel()
                # A kill under way decides whether this was a timeout: wait for it (Podman
                # answers a kill only once the container is gone, after our stream ended).
                # Not started: an interrupt landed in ``timer.start()`` itself.
                if timer.is_alive():
                    timer.join(timeout=60)
            _close_stream(stream)

    def _expire(self, container_id: str, killed: threading.Event) -> None:
        """Wall-time limit reached: kill the container (all its processes die with PID 1)."""
        import docker

        try:
            self.client.api.kill(container_id)
        except docker.errors.APIError:
            return  # it already stopped on its own: not a timeout
        killed.set()

    def _remove(self, name: str) -> None:
        """Force-remove a container by name (it may not exist if creation was interrupted)."""
        import docker

        for _ in range(20):
            try:
                self.client.api.remove_container(name, force=True, v=True)
                return
            except docker.errors.NotFound:
                return
            except docker.errors.APIError as exc:
                if "already in progress" in str(exc):
                    return
                time.sleep(0.05)
        self.client.api.remove_container(name, force=True, v=True)

    def cancel(self) -> int:
        """Remove every container a ``run`` of this sandbox still has (Ctrl-C); returns how many.

        Each interrupted ``run`` then returns as if its command had been killed.
        """
        with self._lock:
            names = list(self._running)
        for name in names:
            with contextlib.suppress(Exception):
                self._remove(name)
        return len(names)

    def leftovers(self) -> list[str]:
        """Names of containers this module created that still exist (should be none)."""
        found = self.client.containers.list(all=True, filters={"label": f"{LABEL}=1"})
        return [c.name for c in found]


def remove_orphan_containers(client: docker.DockerClient) -> list[str]:
    """Remove the containers this module made on this host whose maker is dead (killed before
    its own cleanup); their names. A live maker's, another host's, and one whose maker cannot
    be judged (another PID namespace, an older container without the labels) are left alone."""
    removed = []
    host = socket.gethostname()
    with contextlib.suppress(Exception):  # an engine that cannot list is no reason to refuse runs
        for container in client.containers.list(all=True, filters={"label": f"{LABEL}=1"}):
            labels = container.labels or {}
            if labels.get(HOST_LABEL) != host or owner_alive(labels.get(OWNER_LABEL, "")) is not False:
                continue
            with contextlib.suppress(Exception):
                client.api.remove_container(container.id, force=True, v=True)
                removed.append(container.name)
    return removed


def _close_stream(stream: Any) -> None:
    """Close an attach stream and its HTTP response, so its socket is released now, not at GC.

    ``CancellableStream.close`` shuts the socket down but leaves the response (which holds
    the file descriptor) open.
    """
    with contextlib.suppress(Exception):
        stream.close()
    with contextlib.suppress(Exception):
        stream._response.close()


def _exec_failure(exc: Exception, output: BoundedOutput) -> dict[str, Any]:
    """The final state of a container whose command the runtime could not execute, reported
    as a shell would (127, 126); any other engine error is raised again."""
    message = str(getattr(exc, "explanation", None) or exc)
    code = _exec_failure_code(message)
    if code is None:
        raise exc
    output.feed(f"{message}\n".encode())
    return {"ExitCode": code, "OOMKilled": False}


def _exec_failure_code(message: str) -> int | None:
    """``docker run``'s exit status when the command cannot be executed (127, 126), else None."""
    lowered = message.lower()
    if "executable file not found" in lowered or "no such file or directory" in lowered:
        return 127
    if "permission denied" in lowered:
        return 126
    return None


def _docker_run_line(config: Mapping[str, Any]) -> list[str]:
    """The equivalent ``docker run`` command line, for logs and for reproducing a run by hand;
    limits the engine does not enforce are absent from ``config``."""
    line = ["docker", "run", "--rm", "--network", "none", "--user", config["user"]]
    if "mem_limit" in config:
        line += ["--memory", str(config["mem_limit"]), "--memory-swap", str(config["memswap_limit"])]
    if "pids_limit" in config:
        line += ["--pids-limit", str(config["pids_limit"])]
    line += ["--security-opt", "no-new-privileges"]
    line += [f"--ulimit={u['Name']}={u['Soft']}:{u['Hard']}" for u in config["ulimits"]]
    for mount in config["mounts"]:
        suffix = ":ro" if mount.get("ReadOnly") else ""
        line += ["-v", f"{mount['Source']}:{mount['Target']}{suffix}"]
    for key, value in config["environment"].items():
        line += ["-e", f"{key}={value}"]
    line += ["-w", config["working_dir"], config["image"], *config["command"]]
    return line
