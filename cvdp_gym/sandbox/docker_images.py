"""The Docker engine and the images the Docker sandbox runs: connect, import, resolve.

Contract: ``connect`` returns a client that answered a ping, or raises
``SandboxUnavailable`` saying how to start an engine; ``build_image`` imports a root
filesystem (the pinned simulation root) as an image, streamed to the engine with no
registry, no Dockerfile and nothing staged on disk, and is a no-op when the tag exists;
``resolve_image`` maps the image a harness service names to a local one: the official
``nvidia/cvdp-sim`` when it is present, else the stand-in. ``DockerSandbox`` (``docker.py``)
runs containers of these images; this module never starts a container.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from cvdp_gym.errors import MissingPathError
from cvdp_gym.sandbox.base import SandboxUnavailable

if TYPE_CHECKING:
    import docker

STANDIN_REPOSITORY = "cvdp-gym/sim"
#: Label of an image imported from a root with Verilator's runtime cache: the cache's recipe.
#: Images built ``FROM`` it inherit the label, so the runner knows they hold the cache too.
RUNTIME_CACHE_LABEL = "org.cvdp-gym.runtime-cache"
OFFICIAL_REPOSITORY = "nvidia/cvdp-sim"
OFFICIAL_IMAGE = f"{OFFICIAL_REPOSITORY}:v1.0.0"
#: Placeholders the CVDP dataset's compose files use for the simulation image.
PLACEHOLDERS = {"__OSS_SIM_IMAGE__": OFFICIAL_IMAGE, "__OSS_PNR_IMAGE__": OFFICIAL_IMAGE}
ENGINE_FIX = (
    "no Docker engine answers; start one with: "
    "apt-get install -y docker.io && dockerd --iptables=false --bridge=none &  "
    "(or: service docker start; or: bash scripts/dockerd.sh; without root: bash scripts/podman.sh "
    "and --sandbox podman)"
)
_IMPORT_CHUNK = 1 << 20
#: Root filesystem entries whose contents an image must not carry (the engine mounts its own).
_IMPORT_EXCLUDES = ("./dev/*", "./proc/*", "./sys/*", "./run/*", "./tmp/*")


def docker_sdk() -> ModuleType:
    """The Docker SDK (``docker``, an optional extra; Podman's backend speaks it too), or
    ``SandboxUnavailable`` saying how to install it."""
    try:
        import docker
    except ImportError as exc:  # optional extra
        raise SandboxUnavailable(
            "the docker Python package is missing; install it with: pip install 'cvdp-gym[docker]'"
        ) from exc
    return docker


def connect(client: docker.DockerClient | None = None) -> docker.DockerClient:
    """A client for the local engine (``DOCKER_HOST`` etc. respected), or ``SandboxUnavailable``."""
    docker = docker_sdk()
    try:
        # Each running container holds one pooled connection for its output stream.
        client = client or docker.from_env(max_pool_size=64, timeout=120)
        client.ping()
    except Exception as exc:  # DockerException, requests' ConnectionError, socket errors
        raise SandboxUnavailable(f"{ENGINE_FIX} ({type(exc).__name__})") from exc
    return client


def image_exists(client: docker.DockerClient, name: str) -> bool:
    """Whether the engine holds the image ``name`` locally (never pulls)."""
    import docker

    try:
        client.images.get(name)
    except docker.errors.ImageNotFound:
        return False
    return True


def build_image(
    root_dir: Path,
    tag: str,
    *,
    client: docker.DockerClient | None = None,
    progress: Callable[[int], None] | None = None,
    labels: Mapping[str, str] | None = None,
) -> str:
    """Import ``root_dir`` (a root filesystem) as the image ``tag``; a no-op if it exists.

    A tar of the folder is streamed to the engine (``docker import``): no registry and no
    Dockerfile build are needed, and nothing is staged on disk. ``progress`` is called
    with the number of bytes sent so far; ``labels`` are set on the image.
    """
    from docker.utils import parse_repository_tag

    client = connect(client)
    if image_exists(client, tag):
        return tag
    root = Path(root_dir)
    if not root.is_dir():
        raise MissingPathError(f"root filesystem {root} does not exist")
    argv = ["tar", "-C", str(root), "--numeric-owner", "-cf", "-"]
    argv += [f"--exclude={pattern}" for pattern in _IMPORT_EXCLUDES]
    if os.geteuid() != 0:
        # A user importing a root they do not own (a site's shared root, into their rootless
        # Podman) cannot read its few root-only files (apt and dpkg locks and caches); the
        # image goes without them, as the user's bubblewrap sandbox does.
        argv.append("--ignore-failed-read")
    tar = subprocess.Popen([*argv, "."], stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def chunks() -> Iterator[bytes]:
        assert tar.stdout is not None
        sent = 0
        while chunk := tar.stdout.read(_IMPORT_CHUNK):
            sent += len(chunk)
            if progress is not None:
                progress(sent)
            yield chunk

    repository, name_tag = parse_repository_tag(tag)
    changes = ["WORKDIR /", *(f"LABEL {key}={json.dumps(value)}" for key, value in sorted((labels or {}).items()))]
    try:
        # The whole reference as ``repo``: Podman's engine ignores the ``tag`` parameter.
        client.api.import_image_from_stream(
            chunks(), repository=f"{repository}:{name_tag or 'latest'}", changes=changes
        )
    finally:
        if tar.poll() is None:
            tar.kill()
        stderr = tar.communicate()[1].decode(errors="replace").strip()
    if tar.returncode != 0:
        with contextlib.suppress(Exception):
            client.images.remove(tag, force=True)
        raise SandboxUnavailable(f"tar of {root} failed ({tar.returncode}): {stderr[-500:]}")
    if not image_exists(client, tag):
        raise SandboxUnavailable(f"the engine did not create {tag} from {root}")
    return tag


def image_labels(client: docker.DockerClient, name: str) -> dict[str, str]:
    """The labels of the local image ``name`` (none when it is not here)."""
    import docker

    try:
        return dict(client.images.get(name).labels or {})
    except docker.errors.ImageNotFound:
        return {}


def resolve_image(harness_image: str | None, standin_tag: str, client: docker.DockerClient) -> str:
    """The image to run a service in: the official ``nvidia/cvdp-sim`` when it is here, else the stand-in.

    ``__OSS_SIM_IMAGE__`` / ``__OSS_PNR_IMAGE__`` mean ``nvidia/cvdp-sim:v1.0.0``. Other
    simulator images (``hdlc/sim:osvb`` and its mirrors) and anything not present locally
    run in the stand-in, which carries the same tools.
    """
    name = PLACEHOLDERS.get((harness_image or "").strip(), (harness_image or "").strip())
    if not name:
        return standin_tag
    repository = name.split("@", 1)[0]
    if ":" in repository.rsplit("/", 1)[-1]:
        repository = repository.rsplit(":", 1)[0]
    repository = repository.removeprefix("docker.io/").removeprefix("index.docker.io/")
    if repository != OFFICIAL_REPOSITORY:
        return standin_tag
    if "@" not in name and ":" not in name.rsplit("/", 1)[-1]:
        name += ":latest"
    return name if image_exists(client, name) else standin_tag
