"""The container engines the Docker sandbox's tests and the parity tests run on: Docker (the
shared ``dsandbox``) and rootless Podman (a throwaway user's service, ``rootless.py``)."""

from __future__ import annotations

import time

import pytest

from cvdp_gym.sandbox import SandboxUnavailable
from tests.support import missing

ENGINES = ("docker", "podman")


@pytest.fixture(scope="session")
def podman_engine(toolchain):
    """A throwaway user's rootless Podman service (removed with the user at the end)."""
    from tests.cvdp_gym.sandbox.rootless import RootlessPodman, podman_missing

    reason = podman_missing()
    if reason:
        missing(reason)
    engine = RootlessPodman(toolchain.root)
    try:
        engine.start()
        yield engine
    finally:
        engine.stop()


@pytest.fixture(scope="session")
def podman_sandbox(podman_engine, toolchain):
    """The podman sandbox on that service, its stand-in image imported from the simulation
    root (the same tag as Docker's), as the root test process uses it (``HandedOver``)."""
    try:
        import docker
    except ImportError:
        missing("the docker package is missing: pip install -e '.[docker]'")
    from cvdp_gym.sandbox.podman import PodmanSandbox
    from tests.cvdp_gym.sandbox.rootless import HandedOver

    client = docker.DockerClient(base_url=podman_engine.url, max_pool_size=64, timeout=120)
    try:
        sandbox = PodmanSandbox(toolchain, client=client)
    except SandboxUnavailable as exc:
        missing(str(exc))
    start = time.monotonic()
    sandbox.ensure_standin()
    sandbox.import_s = time.monotonic() - start  # reported by the rootless test
    return HandedOver(sandbox, podman_engine)


@pytest.fixture(scope="session")
def podman_runner(podman_sandbox):
    from cvdp_gym.harness import HarnessRunner

    return HarnessRunner(podman_sandbox)


@pytest.fixture(params=ENGINES)
def csandbox(request):
    """The container sandbox on each engine: ``dsandbox`` (Docker) and ``podman_sandbox``."""
    return request.getfixturevalue("dsandbox" if request.param == "docker" else "podman_sandbox")


@pytest.fixture(params=ENGINES)
def container_runner(request):
    """A harness runner on each container engine (``docker_runner``, ``podman_runner``)."""
    return request.getfixturevalue(f"{request.param}_runner")
