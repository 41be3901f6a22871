"""The sandbox backends by name, and ``make_sandbox``: the one place that knows them all
(``container.py`` stays out: only a Harbor task's own script chooses it)."""

from __future__ import annotations

from cvdp_gym.errors import ConfigError
from cvdp_gym.sandbox.base import Sandbox
from cvdp_gym.sandbox.bwrap import BubblewrapSandbox
from cvdp_gym.sandbox.docker import DockerSandbox
from cvdp_gym.sandbox.podman import PodmanSandbox, is_podman
from cvdp_gym.toolchain import detect

#: The names ``make_sandbox`` (and ``--sandbox``) accept.
SANDBOXES = ("bubblewrap", "docker", "podman")


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
