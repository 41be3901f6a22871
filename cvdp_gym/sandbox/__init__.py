"""Sandboxes that run untrusted commands (harnesses, agents' bash) with hard limits.

``bubblewrap`` (the default) runs on the pinned simulation root with no daemon; ``docker``
runs each harness service in a container of the image it names (the official
``nvidia/cvdp-sim`` when present, else a stand-in imported from the same root; the
``docker`` Python package itself is imported only when one is made); ``podman`` does the
same on the user's own rootless Podman service (``podman.py``), and ``docker`` pointed at a
Podman socket (``DOCKER_HOST``) is taken for it. All satisfy the ``Sandbox`` protocol
(``base.py``), which is what the layers above accept; ``make_sandbox`` is the one place
that knows them all. ``container.py`` is the exception: a backend for grading inside a
disposable container that is itself the boundary (a Harbor task's verifier), chosen only by
that task's own script, never by name here, since it runs commands without isolation.
"""

from __future__ import annotations

from cvdp_gym.errors import ConfigError
from cvdp_gym.sandbox.base import Limits, Mount, Sandbox, SandboxResult, SandboxUnavailable
from cvdp_gym.sandbox.bwrap import BubblewrapSandbox
from cvdp_gym.sandbox.docker import DockerSandbox
from cvdp_gym.sandbox.podman import PodmanSandbox, is_podman
from cvdp_gym.toolchain import detect

SANDBOXES = ("bubblewrap", "docker", "podman")

__all__ = [
    "SANDBOXES",
    "BubblewrapSandbox",
    "Limits",
    "Mount",
    "Sandbox",
    "SandboxResult",
    "SandboxUnavailable",
    "make_sandbox",
]


def make_sandbox(sandbox: str | Sandbox = "bubblewrap", *, toolchain: str | None = None) -> Sandbox:
    """A sandbox by name (``bubblewrap``, ``docker`` or ``podman``) on the named toolchain
    (``root``/``host``); ``docker`` whose engine turns out to be Podman is ``podman``.

    An object that is already a sandbox is returned as it is.
    """
    if not isinstance(sandbox, str):
        return sandbox
    if sandbox == "bubblewrap":
        return BubblewrapSandbox(detect(toolchain))
    if sandbox in ("docker", "podman"):
        if toolchain == "host":
            raise ConfigError(f"the {sandbox} sandbox runs the simulation root's image; --toolchain host is bubblewrap only")
        if sandbox == "podman":
            return PodmanSandbox(detect("root"))
        docker = DockerSandbox(detect("root"))
        return PodmanSandbox(docker.toolchain, client=docker.client) if is_podman(docker.client) else docker
    raise ConfigError(f"unknown sandbox {sandbox!r}; available: {', '.join(SANDBOXES)}")
