"""A throwaway ordinary user running its own rootless Podman service, for tests run as root.

The suite runs as root, but the podman backend is tested rootless: ``RootlessPodman``
creates a user (``useradd``; its subordinate ids come with it), starts that user's service
with ``scripts/podman.sh`` on a socket the root test process can reach, and at the end
kills that user's processes by pid and deletes the user with its home (storage included).
Nothing else on the machine is touched. The user's comment field and its folder's ``owner``
file name the test process that made them, so a suite killed halfway leaves nothing a later
one does not remove (``tests/leftovers.py``).

The service sees this machine's cgroup layout (on a hybrid host ``scripts/podman.sh`` picks
runc, since crun refuses it). ``start_service(layout)`` starts another service of the same
user, on the same image storage (nothing imported again), under another layout: ``v1`` in a
mount namespace of its own without the v2 hierarchy (``/sys/fs/cgroup/unified`` unmounted
there), ``v2`` in one whose ``/sys/fs/cgroup`` is the v2 hierarchy alone; so the layouts a
hybrid host lacks are covered too, each with the runtime ``podman.sh`` picks for it. Each
service has a runtime folder of its own (rootless Podman keeps its namespaces' holder there).

``HandedOver`` is the sandbox the root test process then uses: before each run it hands the
run's writable mount sources to that user (``chown``) and makes their folders under the
temporary directory traversable, as they would be had the user run cvdp-gym themselves;
mounts from the simulation root (under ``/root``, which the user cannot enter) come from a
read-only bind of it made before the service started.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from cvdp_gym.sandbox.base import Mount
from cvdp_gym.sandbox.owner import owner_token
from tests.leftovers import USER_COMMENT, mark_owner, remove_user
from tests.support import REPO

PODMAN_SH = REPO / "scripts" / "podman.sh"
#: The tmpfs that holds the user's images: the stand-in is about 900 MB.
STORAGE_SIZE = "3g"
#: Shell lines (run as root in the service's new mount namespace) that make each layout.
LAYOUTS = {
    "host": "",
    "v1": "umount /sys/fs/cgroup/unified\n",
    "v2": "umount --recursive --lazy /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup\n",
}


def podman_missing() -> str | None:
    """Why rootless Podman cannot run here, or None."""
    for tool in ("podman", "newuidmap", "newgidmap", "useradd", "userdel"):
        if shutil.which(tool) is None:
            return f"{tool} is missing: apt-get install -y podman uidmap"
    if os.getuid() != 0:
        return "the rootless Podman tests make a throwaway user: run them as root"
    return None


class RootlessPodman:
    """A throwaway user and its Podman service; ``url`` is the socket's ``unix://`` URL."""

    def __init__(self, toolchain_root: Path | None) -> None:
        self.toolchain_root = Path(toolchain_root).resolve() if toolchain_root else None
        self.user = f"cvdp-pod-{uuid.uuid4().hex[:8]}"
        self.base = Path(tempfile.mkdtemp(prefix="cvdp-gym-podman-")).resolve()
        mark_owner(self.base)
        self.view: Path | None = None
        self.storage: Path | None = None
        self.uid = self.gid = -1
        self.url = ""

    def start(self) -> RootlessPodman:
        subprocess.run(
            ["useradd", "--create-home", "--shell", "/bin/sh", "--comment", USER_COMMENT + owner_token(), self.user],
            check=True, capture_output=True,
        )
        entry = pwd.getpwnam(self.user)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        for path in ("/etc/subuid", "/etc/subgid"):
            if not any(line.startswith(f"{self.user}:") for line in Path(path).read_text().splitlines()):
                raise RuntimeError(f"useradd gave {self.user} no subordinate ids in {path}")
        self.base.chmod(0o755)
        if self.toolchain_root is not None:
            # Before the service starts: its mount namespace is a copy of ours at that moment.
            self.view = self.base / "root"
            self.view.mkdir()
            subprocess.run(["mount", "--bind", "-o", "ro", str(self.toolchain_root), str(self.view)], check=True)
        # The user's image storage on a tmpfs: importing the stand-in is quicker, and the
        # 900 MB are gone at once at the end instead of being deleted file by file.
        self.storage = self.base / "storage"
        self.storage.mkdir()
        options = f"size={STORAGE_SIZE},mode=0700,uid={self.uid},gid={self.gid}"
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "cvdp-gym-podman", str(self.storage)], check=True)
        config = Path(entry.pw_dir) / ".config" / "containers"
        config.mkdir(parents=True)
        (config / "storage.conf").write_text(f'[storage]\ndriver = "overlay"\ngraphroot = "{self.storage}"\n')
        for folder in (config.parent, config, config / "storage.conf"):
            os.chown(folder, self.uid, self.gid)
        self.url, self.started = self.start_service("host")
        return self

    def start_service(self, layout: str, *, name: str | None = None, runtime: str | None = None) -> tuple[str, str]:
        """Start a service of this user seeing cgroup ``layout`` (``LAYOUTS``), with the
        ``runtime`` given (else the one ``scripts/podman.sh`` picks); its ``unix://`` URL and
        what the script printed. It runs until ``stop``; ``name`` its runtime folder's."""
        if layout not in LAYOUTS:
            raise ValueError(f"unknown cgroup layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
        folder = self.base / (name or ("run" if layout == "host" else f"run-{layout}"))
        folder.mkdir(mode=0o700)
        os.chown(folder, self.uid, self.gid)
        socket = folder / "podman" / "podman.sock"
        home = pwd.getpwnam(self.user).pw_dir
        env = {
            "HOME": home, "USER": self.user, "LOGNAME": self.user, "PATH": "/usr/local/bin:/usr/bin:/bin",
            "XDG_RUNTIME_DIR": str(folder), "PODMAN_SOCKET": str(socket), "LANG": "C.UTF-8",
            **({"PODMAN_RUNTIME": runtime} if runtime else {}),
        }
        if folder.name != "run":
            # A database of its own (else Podman takes the first service's folders from the shared
            # one, and joins its namespaces); the images stay shared.
            conf = folder / "containers.conf"
            conf.write_text(f'[engine]\nstatic_dir = "{folder}/libpod"\ntmp_dir = "{folder}/libpod-tmp"\n')
            os.chown(conf, self.uid, self.gid)
            env["CONTAINERS_CONF"] = str(conf)
        # As root in a mount namespace of the service's own (the layout's cgroups), then as the user.
        script = LAYOUTS[layout] + 'exec setpriv --reuid="$1" --regid="$2" --clear-groups bash "$3"\n'
        argv = ["sh", "-c", script, "sh", str(self.uid), str(self.gid), str(PODMAN_SH)]
        if layout != "host":
            argv = ["unshare", "--mount", "--propagation", "private", *argv]
        done = subprocess.run(argv, env=env, cwd=home, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"scripts/podman.sh failed ({done.returncode}): {done.stdout}{done.stderr}")
        return f"unix://{socket}", (done.stdout + done.stderr).strip()

    def processes(self) -> list[int]:
        """PIDs of the throwaway user's processes (the service, its pause process, conmons)."""
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError):
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    if entry.stat().st_uid == self.uid and state != "Z":  # a zombie is gone already
                        found.append(int(entry.name))
        return found

    def stop(self) -> None:
        """Kill the user's processes (each by its pid), unmount the view, delete the user."""
        self._t0 = time.monotonic()
        self._stop()

    def _stop(self) -> None:
        steps = []
        if self.uid >= 0:
            remove_user(self.user, self.uid)
            steps.append(f"killed and deleted {time.monotonic() - self._t0:.1f} s")
        for mount in (self.view, self.storage):
            if mount is not None:
                subprocess.run(["umount", str(mount)], check=False, capture_output=True)
        steps.append(f"unmounted {time.monotonic() - self._t0:.1f} s")
        shutil.rmtree(self.base, ignore_errors=True)
        print(f"[rootless podman] {self.user} removed: {', '.join(steps)}")

    # -- handing a run's files to the user -------------------------------------------------

    def hand_over(self, mount: Mount) -> Mount:
        """``mount`` as the user's own run would have it (see the module docstring)."""
        source = Path(mount.source).resolve()
        if self.view is not None and self.toolchain_root is not None and source.is_relative_to(self.toolchain_root):
            return replace(mount, source=self.view / source.relative_to(self.toolchain_root))
        if mount.writable:
            self.own(source)
        self.reachable(source)
        return mount

    def own(self, path: Path) -> None:
        """Give ``path`` and everything under it to the user."""
        if not path.exists():
            return
        os.chown(path, self.uid, self.gid, follow_symlinks=False)
        if path.is_dir() and not path.is_symlink():
            for folder, dirs, files in os.walk(path):
                for name in dirs + files:
                    os.chown(os.path.join(folder, name), self.uid, self.gid, follow_symlinks=False)

    def reachable(self, path: Path) -> None:
        """Let the user traverse the folders above ``path`` in the temporary directory
        (``mkdtemp`` and pytest make them 0700; pytest puts its own back at its next session)."""
        temp = Path(tempfile.gettempdir()).resolve()
        for folder in path.parents:
            if folder == temp or not folder.is_relative_to(temp):
                break
            mode = folder.stat().st_mode
            if not mode & stat.S_IXOTH:
                folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)


class HandedOver:
    """A podman sandbox whose runs' files are handed to its engine's user first."""

    def __init__(self, inner: Any, engine: RootlessPodman) -> None:
        self.inner = inner
        self.engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def prepare(self, scratch: Path) -> None:
        """Hand over a scratch folder (its ``tmp`` becomes the container's ``/tmp``)."""
        (scratch / "tmp").mkdir(parents=True, exist_ok=True)
        self.engine.own(scratch / "tmp")
        self.engine.reachable(scratch / "tmp")

    def run(self, argv: list[str], *, mounts: Any = (), scratch: Path, **kwargs: Any) -> Any:
        self.prepare(Path(scratch))
        handed = [self.engine.hand_over(mount) for mount in mounts]
        return self.inner.run(argv, mounts=handed, scratch=scratch, **kwargs)
