"""The container engines the Docker sandbox's tests and the parity tests run on: Docker (the
shared ``dsandbox``) and rootless Podman (``podman_sandbox``: a throwaway user's service,
``rootless.py``; both fixtures live in ``tests/conftest.py``)."""

from __future__ import annotations

import pytest

ENGINES = ("docker", "podman")


@pytest.fixture(params=ENGINES)
def csandbox(request):
    """The container sandbox on each engine: ``dsandbox`` (Docker) and ``podman_sandbox``."""
    return request.getfixturevalue("dsandbox" if request.param == "docker" else "podman_sandbox")


@pytest.fixture(params=ENGINES)
def container_runner(request):
    """A harness runner on each container engine (``docker_runner``, ``podman_runner``)."""
    return request.getfixturevalue(f"{request.param}_runner")
