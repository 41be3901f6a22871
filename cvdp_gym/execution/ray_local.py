"""A Ray cluster of several nodes on this machine, on loopback only (tests and benchmarks).

``ray start`` binds its servers to every interface unless the node's address is 127.0.0.1,
and its command line rewrites 127.0.0.1 to the machine's network address, refusing a second
node otherwise. So the head starts with Ray's loopback-only setting
(``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``), and each further node through
``python -m cvdp_gym.execution.ray_local node ...``: Ray's own ``ray start`` with the node
address pinned to 127.0.0.1. Every process is ``ray start --block``, started in a session
of its own and stopped by its process group: nothing else on the machine is touched. Its
folder's ``owner`` file names the process that made it (``sandbox/owner.py``), so what a
maker killed first leaves can be told from a live cluster and swept.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cvdp_gym.errors import UnavailableError
from cvdp_gym.execution.ray_executor import NICENESS_ENV, WORKER_NICENESS
from cvdp_gym.sandbox.owner import owner_token

LOOPBACK = "127.0.0.1"
_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def use_loopback_driver() -> None:
    """Make this process's ``ray.init`` connect to a loopback cluster as it is (not to the
    machine's network address Ray would substitute for 127.0.0.1)."""
    os.environ[_LOOPBACK_ENV] = "0"
    if "ray" in sys.modules:
        import ray._private.ray_constants as constants

        constants.ENABLE_RAY_CLUSTER = False


class LocalRayCluster:
    """``with LocalRayCluster(nodes=2, cpus_per_node=1) as cluster: cluster.address``.

    ``env``: extra environment for the worker nodes (e.g. another ``CVDP_GYM_TOOLCHAIN``),
    so a test can make a node that lacks the toolchain.
    """

    def __init__(
        self,
        nodes: int = 2,
        cpus_per_node: int = 1,
        *,
        env: dict[str, str] | None = None,
        object_store_mb: int = 100,
        start_timeout_s: float = 90.0,
    ) -> None:
        self.nodes = nodes
        self.cpus_per_node = cpus_per_node
        self.env = env or {}
        self.object_store_mb = object_store_mb
        self.start_timeout_s = start_timeout_s
        self.port = _free_port()
        self.address = f"{LOOPBACK}:{self.port}"
        self.temp_dir = Path(tempfile.mkdtemp(prefix="cvdp-ray-"))
        (self.temp_dir / "owner").write_text(owner_token() + "\n")
        self.processes: list[subprocess.Popen[bytes]] = []

    def _launch(self, argv: list[str], env: dict[str, str], log: str) -> None:
        with open(self.temp_dir / log, "wb") as handle:
            self.processes.append(
                subprocess.Popen(argv, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
            )

    def start(self) -> LocalRayCluster:
        ray_cli = str(Path(sys.executable).with_name("ray"))
        # Workers at the niceness of the processes they are compared with, not Ray's 15.
        niceness = os.environ.get(NICENESS_ENV, WORKER_NICENESS)
        base = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", _LOOPBACK_ENV: "0", NICENESS_ENV: niceness}
        common = [
            f"--num-cpus={self.cpus_per_node}",
            f"--object-store-memory={self.object_store_mb * 1024 * 1024}",
            "--disable-usage-stats",
            "--block",
        ]
        self._launch(
            [ray_cli, "start", "--head", f"--node-ip-address={LOOPBACK}", f"--port={self.port}",
             "--include-dashboard=false", f"--temp-dir={self.temp_dir}", *common],
            base, "head.log",
        )
        self.wait_for_nodes(1)
        for index in range(1, self.nodes):
            self._launch(
                [sys.executable, "-m", "cvdp_gym.execution.ray_local", "node", f"--address={self.address}", *common],
                {**base, **self.env, _LOOPBACK_ENV: "1"}, f"node{index}.log",
            )
            self.wait_for_nodes(index + 1)
        return self

    def wait_for_nodes(self, count: int) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            dead = [p for p in self.processes if p.poll() is not None]
            if dead:
                raise UnavailableError(f"a Ray node exited during start; logs in {self.temp_dir}")
            if self._count_nodes() >= count:
                return
            time.sleep(0.5)
        raise TimeoutError(f"{count} Ray node(s) not up after {self.start_timeout_s:.0f} s; logs in {self.temp_dir}")

    def _count_nodes(self) -> int:
        """Live nodes per the head's GCS (``ray status`` would need the dashboard)."""
        result = subprocess.run(
            [sys.executable, "-c", _COUNT_NODES, self.address],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", _LOOPBACK_ENV: "0"},
        )
        try:
            return int(result.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return 0

    def stop(self) -> None:
        """Stop every process this cluster started (``ray start --block`` stops its own)."""
        for proc in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 3
        for proc in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> LocalRayCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


_COUNT_NODES = """
import sys
from ray._raylet import GcsClient
client = GcsClient(address=sys.argv[1])
print(sum(1 for n in client.get_all_node_info().values() if n.state == 0))
"""


def _start_node(argv: list[str]) -> None:
    """``ray start`` for a further node, with its address pinned to 127.0.0.1."""
    import ray._private.services as services
    from ray.scripts.scripts import main

    services.get_node_ip_address = lambda address=None: LOOPBACK
    sys.argv = ["ray", "start", *argv]
    main()


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "node":
        raise SystemExit("usage: python -m cvdp_gym.execution.ray_local node --address=HOST:PORT [ray start options]")
    _start_node(sys.argv[2:])
