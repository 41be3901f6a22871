"""Device nodes of each bubblewrap run's own, so that nothing done to ``/dev`` reaches the host.

``bwrap --dev /dev`` makes a fresh tmpfs ``/dev`` but binds the host's own nodes into it
(``null``, ``zero``, ``full``, ``random``, ``urandom``, ``tty``). A sandboxed process runs as
the caller's uid inside its user namespace, so when the grader runs as root it owns those
nodes: ``chmod 600 /dev/null`` in an agent's shell changed the host's ``/dev/null``, and so
did ``iverilog -o /dev/null`` in the formal stage (Icarus makes its output executable: the
host's ``/dev/null`` became 0755, which broke rootless Podman's conmon). Read-only binds do
not help: bubblewrap mounts them ``nodev``, and the nodes stop working.

Where the caller may make device nodes (root), each run gets nodes of its own: made with the
host's device numbers and the standard mode 0666 in a folder of the run's own, and bound over
bubblewrap's (``--dev-bind``). A ``chmod``, ``chown``, ``touch`` or ``truncate`` then changes
the run's copy, which is deleted when the run ends; the next run makes fresh ones. The
folder is a scratch folder of kind ``dev`` of its own (``device_folder``), never inside the
run's scratch folder: whatever copies a run's folders (``keep_dir``, ``debug``) would
otherwise read ``/dev/full`` or ``/dev/zero`` without end. One a killed process left is swept
like any scratch folder. A command line printed to run by hand (``cvdp-gym debug``) makes its
nodes when it runs and deletes them when it ends (``by_hand``). An ordinary user cannot make nodes, and does not own the host's either:
changing them fails. A temp folder on a ``nodev`` file system cannot hold working nodes, and
a root caller without ``CAP_MKNOD`` cannot make them: such a run is then refused
(``SandboxUnavailable``, one line saying what to change) rather than handed the host's nodes,
and ``cvdp-gym doctor`` says so beforehand.

(``/proc`` is the other host-owned thing a sandboxed root could change: the entries outside
the process folders, ``/proc/fs/...``, ``/proc/pressure/*``, ``/proc/sys/...``, are the
kernel's own and shared by every procfs mount, so a ``chmod`` or a sysctl write there
changed the host's. ``bwrap.py`` mounts the sandbox's ``/proc`` read-only.)
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from cvdp_gym.sandbox.base import SandboxUnavailable
from cvdp_gym.sandbox.scratch import make_scratch_dir

__all__ = ["DEVICE_NODES", "NODEV_FIX", "PLACEHOLDER", "by_hand", "device_binds", "device_folder", "own_devices"]

NODEV_FIX = (
    "a run as root gets device nodes of its own (sandbox/devices.py), and none can be made here: the temp "
    "folder is on a nodev file system (point TMPDIR at a folder on another one, for example /var/tmp), or "
    "this process lacks CAP_MKNOD (run it where it has the capability, or as an ordinary user)"
)
_CAP_MKNOD = 27
#: The nodes ``bwrap --dev`` binds from the host, and the mode each has on a standard system.
DEVICE_NODES = {"null": 0o666, "zero": 0o666, "full": 0o666, "random": 0o666, "urandom": 0o666, "tty": 0o666}


def own_devices(folder: Path | None = None) -> bool | None:
    """Whether runs get device nodes of their own, made in ``folder`` (the temp folder):
    True (root, on a file system that allows nodes), False (not root: the host's nodes are
    not the caller's to change), None (root, but ``folder`` is on a ``nodev`` file system, or
    root without the capability to make nodes: ``CAP_MKNOD``, which a sandbox or container
    around this process may have dropped)."""
    if os.geteuid() != 0:
        return False
    if not _can_make_nodes():
        return None
    try:
        return None if os.statvfs(folder or tempfile.gettempdir()).f_flag & os.ST_NODEV else True
    except OSError:
        return None


def _can_make_nodes() -> bool:
    """Whether this process holds ``CAP_MKNOD`` (bit 27 of its effective capabilities)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> _CAP_MKNOD & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def device_folder() -> Path | None:
    """A new folder for one run's nodes (a scratch folder of kind ``dev``), or None where runs
    use the host's nodes (an ordinary user); ``SandboxUnavailable`` for root on ``nodev``."""
    own = own_devices()
    if own is None:
        raise SandboxUnavailable(NODEV_FIX)
    if not own:
        return None
    folder = make_scratch_dir("dev")
    folder.chmod(0o755)
    return folder


def device_binds(folder: Path | str | None) -> list[str]:
    """``bwrap`` arguments that bind fresh nodes made in ``folder`` (from ``device_folder``)
    over ``--dev``'s; none without a folder. ``PLACEHOLDER`` instead of a folder: the same
    arguments, naming nodes that ``by_hand`` makes when the command line runs."""
    if folder is None:
        return []
    args: list[str] = []
    for name, mode in DEVICE_NODES.items():
        try:
            rdev = os.stat(Path("/dev") / name).st_rdev
        except OSError:
            continue  # bwrap skips a node the host lacks; so do we
        if folder == PLACEHOLDER:
            args += ["--dev-bind", f"{PLACEHOLDER}/{name}", f"/dev/{name}"]
            continue
        node = Path(folder) / name
        if not node.exists():
            os.mknod(node, stat.S_IFCHR | mode, rdev)
            os.chmod(node, mode)  # mknod's mode is filtered by the umask
        args += ["--dev-bind", str(node), f"/dev/{name}"]
    return args


#: Stands for the node folder in a command line printed to run by hand (``by_hand``).
PLACEHOLDER = "@CVDP_GYM_DEV@"
#: ``sh -c`` that makes the nodes in a fresh folder, puts it in place of ``PLACEHOLDER`` in its
#: arguments, runs them, and deletes the folder.
_BY_HAND = (
    'd=$(mktemp -d) || exit 1; chmod 755 "$d"; {mknods}'
    'for a do shift; case $a in {placeholder}/*) a="$d/${{a#{placeholder}/}}";; esac; set -- "$@" "$a"; done; '
    '"$@"; s=$?; rm -rf "$d"; exit $s'
)


def by_hand(argv: list[str]) -> list[str]:
    """``argv`` as a command line to run by hand: where it names ``PLACEHOLDER`` nodes, wrapped
    in ``sh -c`` that makes them first (as ``device_folder`` would) and deletes them after."""
    if not any(arg.startswith(f"{PLACEHOLDER}/") for arg in argv):
        return argv
    mknods = ""
    for name, mode in DEVICE_NODES.items():
        with contextlib.suppress(OSError):
            rdev = os.stat(Path("/dev") / name).st_rdev
            mknods += f'mknod -m {mode:o} "$d/{name}" c {os.major(rdev)} {os.minor(rdev)} || exit 1; '
    return ["/bin/sh", "-c", _BY_HAND.format(mknods=mknods, placeholder=PLACEHOLDER), "sh", *argv]
