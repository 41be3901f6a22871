"""Which OCI runtime can start Podman's containers under this host's cgroup layout.

A host mounts its cgroups one of three ways: **v2** (one ``cgroup2`` hierarchy at
``/sys/fs/cgroup``), **v1** (a ``cgroup`` hierarchy per controller under a tmpfs there) or
**hybrid** (the v1 hierarchies plus a ``cgroup2`` one at ``/sys/fs/cgroup/unified``, as
systemd's hybrid mode and many container hosts mount them). Podman starts each container
with an OCI runtime, crun where it is installed. crun (1.8, Debian 12's) refuses a hybrid
host whose v2 hierarchy offers controllers of its own (``crun: cgroups in hybrid mode not
supported, drop all controllers from cgroupv2``): no container starts at all, rootless or
not. runc starts them on every layout. A rootless service has no cgroups on v1 or hybrid
anyway (the sandbox then bounds memory and processes with rlimits), so nothing is lost.

Podman 4.3 takes the runtime per service, not per container (its API ignores a container's
``oci_runtime``), so the choice is made where a service starts: ``scripts/podman.sh`` passes
``--runtime`` (the same rule, in shell); ``PodmanSandbox`` turns a runtime's refusal into
``SandboxUnavailable`` with one line saying how to restart the service (never the answer's
failure), and ``cvdp-gym doctor`` shows the choice and why (``podman.podman_rows``).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ADMIN_FIX", "CRUN_REFUSAL", "CgroupLayout", "RuntimeChoice", "cgroup_layout", "choose_runtime", "installed_runtimes", "refusal"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Where Podman looks for runtimes by name (containers.conf's defaults), beyond ``PATH``.
RUNTIME_DIRS = ("/usr/local/bin", "/usr/local/sbin", "/usr/bin", "/usr/sbin", "/bin", "/sbin")
#: Runtimes in the order Podman prefers them (crun first where both are installed).
RUNTIMES = ("crun", "runc")
#: What crun says when it refuses a hybrid host.
CRUN_REFUSAL = "cgroups in hybrid mode not supported"
#: What to ask an administrator for when no installed runtime can start a container here.
ADMIN_FIX = (
    "ask an administrator to install runc (apt-get install runc), or to mount a pure cgroup v1 "
    "or v2 layout (systemd.unified_cgroup_hierarchy=1 on the kernel command line gives v2)"
)


@dataclass(frozen=True)
class CgroupLayout:
    """How this host mounts cgroups: ``kind`` is ``v1``, ``v2``, ``hybrid`` or ``none``;
    ``v2_controllers``: what the v2 hierarchy offers (v2: the root's; hybrid: ``unified``'s)."""

    kind: str
    v2_controllers: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.kind == "hybrid":
            offered = ", ".join(self.v2_controllers) or "no controllers"
            return f"hybrid cgroups (v1 controllers, and a v2 hierarchy at unified/ offering {offered})"
        if self.kind == "v2":
            return f"cgroup v2 ({', '.join(self.v2_controllers) or 'no controllers'})"
        return "cgroup v1" if self.kind == "v1" else "no cgroup hierarchy mounted"


@dataclass(frozen=True)
class RuntimeChoice:
    """The runtime a Podman service should use here (None: none can), and why."""

    runtime: str | None
    reason: str


def _controllers(path: Path) -> tuple[str, ...] | None:
    try:
        return tuple(path.read_text().split())
    except OSError:
        return None


def cgroup_layout(root: Path = CGROUP_ROOT) -> CgroupLayout:
    """The layout mounted at ``root`` (read from its files, as crun tells them apart)."""
    own = _controllers(root / "cgroup.controllers")
    if own is not None:
        return CgroupLayout("v2", own)
    unified = _controllers(root / "unified" / "cgroup.controllers")
    if unified is not None:
        return CgroupLayout("hybrid", unified)
    try:
        v1 = any((entry / "tasks").exists() for entry in root.iterdir() if entry.is_dir())
    except OSError:
        v1 = False
    return CgroupLayout("v1" if v1 else "none")


def refusal(runtime: str, layout: CgroupLayout) -> str | None:
    """Why ``runtime`` cannot start a container under ``layout``, or None when it can."""
    if Path(runtime).name == "crun" and layout.kind == "hybrid" and layout.v2_controllers:
        return (
            f"crun refuses {layout.describe()}: 'cgroups in hybrid mode not supported, "
            "drop all controllers from cgroupv2'"
        )
    return None


def installed_runtimes(search: Iterable[str] = RUNTIME_DIRS) -> list[str]:
    """The known runtimes installed here, in Podman's order of preference."""
    path = ":".join(search)
    return [name for name in RUNTIMES if shutil.which(name, path=path)]


def choose_runtime(
    default: str | None, installed: Iterable[str], layout: CgroupLayout
) -> RuntimeChoice:
    """The runtime for a service whose default is ``default`` (None: Podman's first
    installed), given what is ``installed`` and the host's ``layout``."""
    installed = list(installed)
    default = default or (installed[0] if installed else None)
    if default is None:
        return RuntimeChoice(None, f"no OCI runtime is installed (crun or runc); {ADMIN_FIX}")
    why_not = refusal(default, layout)
    if why_not is None:
        return RuntimeChoice(default, f"Podman's default; it runs on {layout.describe()}")
    for other in installed:
        if other != default and refusal(other, layout) is None:
            return RuntimeChoice(other, f"{why_not}; {other} runs there")
    return RuntimeChoice(None, f"{why_not}, and no other runtime is installed; {ADMIN_FIX}")
