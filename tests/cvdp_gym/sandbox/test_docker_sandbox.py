"""The container sandbox against real engines and a real image imported from the simulation root.

Each test runs on Docker and on rootless Podman (``csandbox``, ``conftest.py``). Skipped
(with the reason) when the ``docker`` package, the engine (``bash scripts/dockerd.sh``;
Podman: ``apt-get install podman uidmap``) or the simulation root is missing; in CI
(``CI=true``) that fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cvdp_gym.sandbox import Limits, Mount, SandboxUnavailable
from tests.support import REPO

pytestmark = pytest.mark.docker

BUNDLED = REPO / "cvdp_gym" / "data" / "bundled"


@pytest.fixture
def scratch(tmp_path) -> Path:
    path = tmp_path / "scratch"
    path.mkdir()
    return path


def _ours(client, marker: str | None = None) -> list[str]:
    """Containers this module's sandboxes created (optionally: whose environment has ``marker``)."""
    found = client.containers.list(all=True, filters={"label": "cvdp-gym=1"})
    if marker is None:
        return [c.name for c in found]
    return [c.name for c in found if any(marker in e for e in c.attrs["Config"]["Env"] or [])]


@pytest.mark.parametrize(("generation", "cocotb"), [("cocotb2", "2.0.1"), ("cocotb1", "1.9.2")])
def test_runs_the_pinned_environment(csandbox, scratch, generation, cocotb):
    code = (
        "import cocotb, pytest, sys; print(cocotb.__version__, pytest.__version__, sys.executable)"
    )
    result = csandbox.run(
        ["python", "-c", code],
        scratch=scratch,
        env={"HOME": "/tmp"},
        sim_env=csandbox.toolchain.env(generation),
    )
    assert result.returncode == 0, result.output
    assert result.output.split()[0] == cocotb
    assert f"/opt/cvdp/{generation}/bin/python" in result.output
    assert not result.timed_out and not result.out_of_memory


def test_real_cocotb_harness_passes(csandbox, tmp_path):
    """A bundled problem's harness, unchanged, with its reference solution (Icarus + cocotb 2)."""
    problem = BUNDLED / "cvdp_gym_edge_detector_0001"
    code = tmp_path / "code"
    shutil.copytree(problem / "solution", code)
    (code / "rundir").mkdir()
    env = {"HOME": "/code/rundir"}
    for line in (problem / "harness" / "src" / ".env").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep:
            env[key.strip()] = value.strip()
    argv = ["pytest", "-s", "-o", "cache_dir=/code/rundir/.cache", "/src/test_runner.py", "-v"]
    result = csandbox.run(
        argv,
        mounts=[Mount(code, "/code", writable=True), Mount(problem / "harness" / "src", "/src")],
        scratch=tmp_path / "scratch",
        cwd="/code/rundir",
        env=env,
        sim_env=csandbox.toolchain.env("cocotb2"),
        limits=Limits(wall_s=120),
    )
    assert result.returncode == 0, result.output[-3000:]
    assert "1 passed" in result.output
    assert (code / "rundir" / "sim_build").is_dir()  # written through the writable mount


def test_no_network(csandbox, scratch):
    code = textwrap.dedent(
        """
        import os, socket
        print(sorted(os.listdir("/sys/class/net")))
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect(("1.1.1.1", 53))
            print("CONNECTED")
        except OSError as exc:
            print("refused:", exc)
        """
    )
    result = csandbox.run(["python3", "-c", code], scratch=scratch)
    assert result.returncode == 0, result.output
    assert "['lo']" in result.output
    assert "refused:" in result.output and "CONNECTED" not in result.output


def test_read_only_mount_cannot_be_written(csandbox, tmp_path, scratch):
    ro, rw = tmp_path / "ro", tmp_path / "rw"
    ro.mkdir()
    rw.mkdir()
    (ro / "data.txt").write_text("keep\n")
    script = "cat /ro/data.txt; echo x > /ro/data.txt; echo x > /ro/new; echo ok > /rw/out"
    result = csandbox.run(
        ["sh", "-c", script],
        mounts=[Mount(ro, "/ro"), Mount(rw, "/rw", writable=True)],
        scratch=scratch,
    )
    assert "keep" in result.output
    assert result.output.count("Read-only file system") == 2, result.output
    assert (ro / "data.txt").read_text() == "keep\n"
    assert not (ro / "new").exists()
    assert (rw / "out").read_text() == "ok\n"


def test_environment_is_exactly_the_callers(csandbox, scratch, monkeypatch):
    canary = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("CVDP_GYM_CANARY", canary)
    result = csandbox.run(
        ["/usr/bin/env"],
        scratch=scratch,
        env={"FOO": "bar"},
        sim_env=csandbox.toolchain.env("cocotb2"),
    )
    assert result.returncode == 0, result.output
    assert canary not in result.output
    variables = dict(line.split("=", 1) for line in result.output.splitlines() if "=" in line)
    assert variables["FOO"] == "bar"
    assert variables["PATH"] == "/opt/cvdp/cocotb2/bin:/usr/local/bin:/usr/bin:/bin"
    # The engine adds HOSTNAME (and HOME when the caller gives none): nothing of the host's.
    assert set(variables) <= {"FOO", "PATH", "HOSTNAME", "HOME"}, variables


def test_timeout_kills_the_container(csandbox, scratch):
    marker = f"timeout-{uuid.uuid4().hex}"
    start = time.monotonic()
    result = csandbox.run(
        ["sh", "-c", "echo started; sleep 500 & sleep 500"],
        scratch=scratch,
        env={"MARKER": marker},
        limits=Limits(wall_s=1.5),
    )
    assert result.timed_out and result.returncode == -9
    assert "started" in result.output
    assert result.wall_s >= 1.5 and time.monotonic() - start < 300  # killed, not left to sleep 500 s
    assert _ours(csandbox.client, marker) == []


def test_output_is_bounded(csandbox, scratch):
    result = csandbox.run(
        ["python3", "-c", "import sys; sys.stdout.write('x' * 5_000_000); sys.stdout.flush()"],
        scratch=scratch,
        limits=Limits(output_bytes=2000),
    )
    assert result.returncode == 0
    assert result.truncated and result.output_bytes == 5_000_000
    assert len(result.output) < 2200 and "bytes of output elided" in result.output


def test_memory_limit_reports_out_of_memory(csandbox, scratch):
    if not getattr(csandbox, "cgroup_limits", True):
        # Rootless Podman on cgroups v1 has no memory cgroup: the limit is RLIMIT_DATA, so
        # an allocation past it fails in the process, and nothing is OOM-killed.
        result = csandbox.run(
            ["python3", "-c", "x = bytearray(1 << 30); print('survived')"], scratch=scratch, limits=Limits(memory_mb=128)
        )
        assert "MemoryError" in result.output and result.returncode != 0 and not result.out_of_memory
        return
    result = csandbox.run(
        ["python3", "-c", "x = bytearray(400 << 20); print('survived')"],
        scratch=scratch,
        limits=Limits(memory_mb=128),
    )
    assert result.out_of_memory and result.returncode != 0
    assert "survived" not in result.output


def test_failing_commands_leave_no_container(csandbox, scratch):
    marker = f"fail-{uuid.uuid4().hex}"
    failed = csandbox.run(["sh", "-c", "echo oops >&2; exit 7"], scratch=scratch, env={"M": marker})
    assert failed.returncode == 7 and "oops" in failed.output
    missing = csandbox.run(["no-such-program"], scratch=scratch, env={"M": marker})
    assert missing.returncode == 127 and "executable file not found" in missing.output
    with pytest.raises(Exception, match=r"(?i)bind source path does not exist|no such file"):
        csandbox.run(
            ["true"], mounts=[Mount(scratch / "absent", "/x")], scratch=scratch, env={"M": marker}
        )
    assert _ours(csandbox.client, marker) == []


def test_parallel_runs(csandbox, tmp_path):
    marker = f"parallel-{uuid.uuid4().hex}"

    def one(i: int):
        scratch = tmp_path / f"s{i}"
        scratch.mkdir()
        return csandbox.run(
            ["sh", "-c", 'date +%s.%N; sleep 2; echo "run $N"; date +%s.%N'],
            scratch=scratch,
            env={"N": str(i), "M": marker},
        )

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(4)))
    assert [r.returncode for r in results] == [0, 0, 0, 0], [r.output for r in results]
    lines = [r.output.split() for r in results]
    assert [line[1:3] for line in lines] == [["run", str(i)] for i in range(4)]
    starts, ends = [float(line[0]) for line in lines], [float(line[3]) for line in lines]
    assert max(starts) < min(ends)  # all four containers were running at once
    assert _ours(csandbox.client, marker) == []


_INTERRUPTED = """
import signal
import sys
from pathlib import Path
signal.signal(signal.SIGINT, signal.default_int_handler)  # even when the suite's SIGINT is ignored (a background job)
from cvdp_gym.sandbox import make_sandbox
sandbox = make_sandbox(sys.argv[4])
assert sandbox.standin_tag == sys.argv[1]
sandbox.run(["sleep", "500"], scratch=Path(sys.argv[2]), env={"M": sys.argv[3]})
"""


def test_ctrl_c_leaves_no_container(csandbox, scratch):
    marker = f"sigint-{uuid.uuid4().hex}"
    env = dict(os.environ)
    if csandbox.name == "podman":
        env["CONTAINER_HOST"] = csandbox.engine.url
        csandbox.prepare(scratch)
    proc = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED, csandbox.standin_tag, str(scratch), marker, csandbox.name],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        # Events, not deadlines: the container appears (or the child ends), then the child
        # ends after its Ctrl-C; the test's own timeout bounds a loaded machine's wait.
        while not _ours(csandbox.client, marker):
            assert proc.poll() is None, proc.communicate()[0].decode()
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out = proc.communicate()[0].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "KeyboardInterrupt" in out
    assert _ours(csandbox.client, marker) == []


def test_keyboard_interrupt_in_process_leaves_no_container(csandbox, scratch):
    """The same, with the interrupt landing in this process's main thread mid-run."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach only the main thread")
    marker = f"kbd-{uuid.uuid4().hex}"

    stop = threading.Event()

    def interrupt_when_running():
        while not stop.is_set():  # until the container exists, however long a loaded engine takes
            if _ours(csandbox.client, marker):
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
                return
            time.sleep(0.1)

    # Python's own Ctrl-C handler, whatever the suite was started with (a shell starts a
    # background job with SIGINT ignored, and then Python installs none).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    thread = threading.Thread(target=interrupt_when_running, daemon=True)
    thread.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            csandbox.run(
                ["sleep", "500"], scratch=scratch, env={"M": marker}, limits=Limits(wall_s=500)
            )
    finally:
        stop.set()
        thread.join()
        signal.signal(signal.SIGINT, previous)
    assert _ours(csandbox.client, marker) == []


def test_resolve_image(csandbox):
    from cvdp_gym.sandbox.docker_images import OFFICIAL_IMAGE, resolve_image

    client, standin_tag = csandbox.client, csandbox.standin_tag
    official_here = bool(client.images.list(name=OFFICIAL_IMAGE))
    for name in ("__OSS_SIM_IMAGE__", "__OSS_PNR_IMAGE__", "nvidia/cvdp-sim:v1.0.0"):
        expected = OFFICIAL_IMAGE if official_here else standin_tag
        assert resolve_image(name, standin_tag, client) == expected
    for name in (
        None,
        "",
        "hdlc/sim:osvb",
        "ghcr.io/hdl/sim/osvb",
        "gcr.io/hdl-containers/sim/osvb",
    ):
        assert resolve_image(name, standin_tag, client) == standin_tag
    # An official image present locally is used as named (a throwaway tag stands in for it).
    temporary = f"nvidia/cvdp-sim:cvdp-gym-test-{uuid.uuid4().hex[:8]}"
    client.images.get(standin_tag).tag(*temporary.rsplit(":", 1))  # Podman ignores a tag in repo
    try:
        assert resolve_image(temporary, standin_tag, client) == temporary
        assert (
            resolve_image(f"docker.io/{temporary}", standin_tag, client)
            == f"docker.io/{temporary}"
        )
    finally:
        client.images.remove(temporary)


def test_build_image_is_idempotent(csandbox, toolchain):
    from cvdp_gym.sandbox.docker_images import build_image

    client, standin_tag = csandbox.client, csandbox.standin_tag
    before = client.images.get(standin_tag).id
    assert build_image(toolchain.root, standin_tag, client=client) == standin_tag
    assert client.images.get(standin_tag).id == before  # not imported again


def test_no_engine_is_one_clear_line(monkeypatch):
    pytest.importorskip(
        "docker", reason="the docker package is missing: pip install -e '.[docker]'"
    )
    from cvdp_gym.sandbox.docker import DockerSandbox
    from cvdp_gym.toolchain import detect

    monkeypatch.setenv("DOCKER_HOST", f"unix:///nonexistent-{uuid.uuid4().hex}/docker.sock")
    with pytest.raises(SandboxUnavailable) as info:
        DockerSandbox(detect(), standin_tag="cvdp-gym/sim:unused")
    message = str(info.value)
    assert "\n" not in message and "dockerd --iptables=false --bridge=none" in message


def test_no_podman_service_is_one_clear_line(monkeypatch):
    pytest.importorskip(
        "docker", reason="the docker package is missing: pip install -e '.[docker]'"
    )
    from cvdp_gym.sandbox import make_sandbox

    monkeypatch.setenv("CONTAINER_HOST", f"unix:///nonexistent-{uuid.uuid4().hex}/podman.sock")
    with pytest.raises(SandboxUnavailable) as info:
        make_sandbox("podman")
    message = str(info.value)
    assert "\n" not in message and "bash scripts/podman.sh" in message and "nonexistent-" in message


def test_podman_runs_rootless(podman_sandbox, podman_engine, scratch):
    """No daemon runs as root: the service and every container process are the throwaway
    user's; the container's root is that user (its user namespace maps 0 to it alone)."""
    assert podman_sandbox.rootless
    assert podman_engine.processes(), "the user's service is not running"
    service = [pid for pid in podman_engine.processes() if b"system\0service" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert service, "no podman system service among the user's processes"
    result = podman_sandbox.run(["sh", "-c", "cat /proc/self/uid_map; sleep 0.5"], scratch=scratch)
    assert result.returncode == 0, result.output
    first = result.output.split("\n")[0].split()
    assert first[:3] == ["0", str(podman_engine.uid), "1"], result.output
    assert result.command[:2] == ["podman", "run"]
    print(f"podman: {podman_engine.started}; stand-in import {podman_sandbox.import_s:.1f} s")


def test_official_image_keeps_its_own_path(csandbox, scratch):
    """In an official image (a throwaway ``nvidia/cvdp-sim`` tag here) the image's PATH is kept."""
    temporary = f"nvidia/cvdp-sim:cvdp-gym-test-{uuid.uuid4().hex[:8]}"
    csandbox.client.images.get(csandbox.standin_tag).tag(*temporary.rsplit(":", 1))
    try:
        result = csandbox.run(
            ["sh", "-c", 'echo "PATH=$PATH"'],
            scratch=scratch,
            sim_env=csandbox.toolchain.env("cocotb2"),
            image=temporary,
        )
        assert "cvdp-gym/sim" not in " ".join(result.command)
        assert temporary in result.command
    finally:
        csandbox.client.images.remove(temporary)
    assert result.returncode == 0, result.output
    assert "/opt/cvdp" not in result.output and "/usr/bin" in result.output


@pytest.mark.parametrize("cgroups", [True, False])
def test_podman_container_spec(tmp_path, cgroups):
    """What a Podman container is created with (no engine needed): the Docker backend's run,
    Podman's user and limits: cgroups where the service has them, rlimits where it does not."""
    pytest.importorskip("docker", reason="the docker package is missing: pip install -e '.[docker]'")
    from types import SimpleNamespace

    from cvdp_gym.sandbox import SANDBOXES
    from cvdp_gym.sandbox.podman import PodmanSandbox, libpod_spec

    assert "podman" in SANDBOXES
    engine = SimpleNamespace(rootless=True, cgroup_limits=cgroups)
    config = PodmanSandbox.container_config(
        engine, ["true"], image="cvdp-gym/sim:x", mounts=[Mount(tmp_path, "/ro")], scratch=tmp_path / "s",
        cwd="/", env={"A": "b"}, limits=Limits(memory_mb=100, processes=50), name="n",
    )
    spec = libpod_spec(config)
    assert spec["user"] == "0:0" and spec["netns"] == {"nsmode": "none"} and spec["no_new_privileges"]
    assert spec["env"] == {"A": "b"} and set(spec["unsetenv"]) == {"TERM", "container"}
    assert {"destination": "/ro", "source": str(tmp_path.resolve()), "type": "bind", "options": ["rbind", "ro"]} in spec["mounts"]
    rlimits = {r["type"]: r["hard"] for r in spec["r_limits"]}
    assert rlimits["fsize"] == 1024 << 20 and rlimits["core"] == 0
    if cgroups:
        assert spec["resource_limits"] == {"memory": {"limit": 100 << 20, "swap": 100 << 20}, "pids": {"limit": 50}}
        assert "nproc" not in rlimits and "data" not in rlimits
    else:
        assert "resource_limits" not in spec
        assert rlimits["nproc"] == 50 and rlimits["data"] == 100 << 20


@pytest.mark.parametrize("layout", ["host", "v1", "v2"])
def test_podman_runs_on_each_cgroup_layout(podman_engine, podman_sandbox, tmp_path, layout):
    """A service started by ``scripts/podman.sh`` runs containers whatever the host's cgroup
    layout: this host's (hybrid here: crun refuses it, so runc), and pure v1 and v2 made in a
    mount namespace of the service's own (crun); the runtime is the one ``choose_runtime``
    names for that layout. Shares the session user's image storage: nothing is imported."""
    import docker

    from cvdp_gym.sandbox.oci_runtime import (
        CgroupLayout,
        cgroup_layout,
        choose_runtime,
        installed_runtimes,
    )
    from cvdp_gym.sandbox.podman import PodmanSandbox
    from tests.cvdp_gym.sandbox.rootless import HandedOver

    here = cgroup_layout()
    seen = {"host": here, "v1": CgroupLayout("v1"), "v2": CgroupLayout("v2", here.v2_controllers)}[layout]
    expected = choose_runtime(None, installed_runtimes(), seen).runtime
    url = podman_engine.url if layout == "host" else podman_engine.start_service(layout)[0]
    sandbox = HandedOver(PodmanSandbox(podman_sandbox.toolchain, client=docker.DockerClient(base_url=url, timeout=120)), podman_engine)
    assert sandbox.runtime == expected, (layout, seen)
    result = sandbox.run(["sh", "-c", "echo ran on $0", layout], scratch=tmp_path / "scratch")
    assert (result.returncode, result.output.strip()) == (0, f"ran on {layout}"), result.output


def test_a_runtime_that_refuses_the_host_is_one_clear_line(podman_engine, podman_sandbox, tmp_path):
    """A service whose runtime refuses this host's cgroups (crun on a hybrid host) makes no
    verdict: ``SandboxUnavailable``, one line naming the runtime to restart it with."""
    import docker

    from cvdp_gym.sandbox.oci_runtime import cgroup_layout, refusal
    from cvdp_gym.sandbox.podman import PodmanSandbox
    from tests.cvdp_gym.sandbox.rootless import HandedOver

    if shutil.which("crun") is None or refusal("crun", cgroup_layout()) is None:
        pytest.skip(f"crun runs on this host's {cgroup_layout().describe()}: nothing refuses it")
    url = podman_engine.start_service("host", name="run-crun", runtime="crun")[0]
    sandbox = HandedOver(PodmanSandbox(podman_sandbox.toolchain, client=docker.DockerClient(base_url=url, timeout=120)), podman_engine)
    with pytest.raises(SandboxUnavailable) as info:
        sandbox.run(["true"], scratch=tmp_path / "scratch")
    message = str(info.value)
    assert "\n" not in message and "crun" in message and "restart it with runc" in message, message
