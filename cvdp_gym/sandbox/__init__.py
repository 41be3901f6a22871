"""Sandboxes that run untrusted commands (harnesses, agents' bash) with hard limits.

``bubblewrap`` (the default) runs on the pinned simulation root with no daemon; ``docker``
runs each harness service in a container of the image it names (the official
``nvidia/cvdp-sim`` when present, else a stand-in imported from the same root; the
``docker`` Python package itself is imported only when one is made); ``podman`` does the
same on the user's own rootless Podman service (``podman.py``), and ``docker`` pointed at a
Podman socket (``DOCKER_HOST``) is taken for it. All satisfy the ``Sandbox`` protocol
(``base.py``), which is what the layers above accept; ``make_sandbox`` (``backends.py``)
is the one place that knows them all. ``container.py`` is the exception: a backend for
grading inside a disposable container that is itself the boundary (a Harbor task's
verifier), chosen only by that task's own script, never by name here, since it runs
commands without isolation.
"""

from __future__ import annotations

from cvdp_gym.sandbox.backends import SANDBOXES, make_sandbox
from cvdp_gym.sandbox.base import Limits, Mount, Sandbox, SandboxResult, SandboxUnavailable
from cvdp_gym.sandbox.bwrap import BubblewrapSandbox

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
