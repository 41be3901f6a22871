"""A suite killed halfway leaves nothing that the next one keeps: a throwaway user with its
rootless Podman service, processes and mounts (swept by ``tests/leftovers.py`` at the start
of every session), and a sandbox's container (removed by the next ``DockerSandbox``).

A child process plays the killed suite: it makes a ``RootlessPodman`` and starts a container
in Docker, then is killed with SIGKILL, before any cleanup of its own can run.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests import leftovers
from tests.support import REPO, missing

pytestmark = [pytest.mark.docker, pytest.mark.slow]

_KILLED_SUITE = """
import sys, threading, time
from pathlib import Path
from cvdp_gym.sandbox.docker import DockerSandbox
from cvdp_gym.toolchain import detect
from tests.cvdp_gym.sandbox.rootless import RootlessPodman

engine = RootlessPodman(None).start()
sandbox = DockerSandbox(detect(), standin_tag=sys.argv[1])
scratch = Path(sys.argv[2])
threading.Thread(target=sandbox.run, args=(["sleep", "300"],), kwargs={"scratch": scratch, "env": {"M": sys.argv[3]}}, daemon=True).start()
print(engine.user, engine.uid, engine.base, flush=True)
time.sleep(600)
"""


def _mounted(folder: Path) -> list[str]:
    return [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(folder) in line.split()[4]]


def test_what_a_killed_suite_left_is_swept(dsandbox, tmp_path):
    from tests.cvdp_gym.sandbox.rootless import podman_missing

    reason = podman_missing()
    if reason:
        missing(reason)
    marker = f"killed-{uuid.uuid4().hex}"
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_SUITE, dsandbox.standin_tag, str(tmp_path), marker],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        line = child.stdout.readline().split()
        assert len(line) == 3, child.stderr.read() if child.poll() is not None else line
        user, uid, base = line[0], int(line[1]), Path(line[2])

        def container() -> list:
            found = dsandbox.client.containers.list(all=True, filters={"label": "cvdp-gym=1"})
            return [c for c in found if any(marker in e for e in c.attrs["Config"]["Env"] or [])]

        while not container():  # waits on the event; the test's own timeout bounds it
            assert child.poll() is None, child.stderr.read()
            time.sleep(0.2)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    # What the killed maker left: its user and service, mounts, folder, and a running container.
    assert pwd.getpwnam(user).pw_uid == uid and _mounted(base) and base.is_dir()
    assert any(Path(f"/proc/{pid}").stat().st_uid == uid for pid in os.listdir("/proc") if pid.isdigit())
    assert container()[0].status == "running"

    swept = leftovers.sweep()
    assert f"user {user}" in swept and str(base) in swept, swept
    assert user not in {entry.pw_name for entry in pwd.getpwall()}
    assert not _mounted(base) and not base.exists()
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and _uid(pid) == uid]

    from cvdp_gym.sandbox.docker import DockerSandbox

    DockerSandbox(dsandbox.toolchain, standin_tag=dsandbox.standin_tag, client=dsandbox.client)
    assert container() == []


def _uid(pid: str) -> int | None:
    try:
        return Path(f"/proc/{pid}").stat().st_uid
    except OSError:
        return None
