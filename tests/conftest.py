"""Shared fixtures: the real toolchain, skipping (with the reason) only where it is absent."""

from __future__ import annotations

import logging
import time

import pytest

from cvdp_gym.sandbox import SandboxUnavailable
from cvdp_gym.toolchain import detect
from tests import leftovers, support
from tests.support import missing


@pytest.fixture(scope="session", autouse=True)
def machine_left_as_found():
    """Sweep what a killed earlier suite left (``tests/leftovers.py``); at the end, fail the
    session if anything of its own is left, or if the host's device nodes changed mode (no
    sandboxed process may change the host)."""
    swept = leftovers.sweep()
    if swept:
        print(f"[leftovers] removed what a killed earlier suite left: {', '.join(swept)}")
    modes = leftovers.device_modes()
    yield
    problems = [f"left behind: {item}" for item in leftovers.ours()]
    now = leftovers.device_modes()
    problems += [f"{node} changed mode: {mode} -> {now.get(node)}" for node, mode in modes.items() if now.get(node) != mode]
    if problems:
        pytest.fail("the suite changed the machine: " + "; ".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def toolchain():
    """The default toolchain: the pinned simulation root (Icarus 13)."""
    tc = detect()
    if not tc.ready:
        pytest.skip("simulation toolchain missing: run scripts/setup.sh (cvdp-gym doctor says what)")
    return tc


@pytest.fixture(scope="session")
def host_toolchain():
    """The explicit host fallback (Debian 12's Icarus 11 and two venvs)."""
    tc = detect("host")
    if not tc.ready:
        pytest.skip("host toolchain missing: run cvdp-gym toolchain install --toolchain host")
    return tc


@pytest.fixture(scope="session")
def host_runner(host_toolchain):
    from cvdp_gym.harness import HarnessRunner
    from cvdp_gym.sandbox import BubblewrapSandbox

    return HarnessRunner(BubblewrapSandbox(host_toolchain))


@pytest.fixture(scope="session")
def sandbox(toolchain):
    from cvdp_gym.sandbox import BubblewrapSandbox

    return BubblewrapSandbox(toolchain)


@pytest.fixture(scope="session")
def runner(sandbox):
    from cvdp_gym.harness import HarnessRunner

    return HarnessRunner(sandbox)


@pytest.fixture(scope="session")
def docker_client():
    try:
        import docker  # noqa: F401
    except ImportError:
        missing("the docker package is missing: pip install -e '.[docker]'")
    from cvdp_gym.sandbox.docker_images import connect

    try:
        return connect()
    except SandboxUnavailable as exc:
        missing(str(exc))


@pytest.fixture(scope="session")
def standin_tag(docker_client, toolchain) -> str:
    """The stand-in image imported from the simulation root (once; kept for later runs)."""
    from cvdp_gym.sandbox.docker import DockerSandbox

    return DockerSandbox(toolchain, client=docker_client).ensure_standin()


@pytest.fixture(scope="session")
def dsandbox(docker_client, standin_tag, toolchain):
    from cvdp_gym.sandbox.docker import DockerSandbox

    return DockerSandbox(toolchain, standin_tag=standin_tag, client=docker_client)


@pytest.fixture(scope="session")
def docker_runner(dsandbox):
    from cvdp_gym.harness import HarnessRunner

    return HarnessRunner(dsandbox)


@pytest.fixture
def processes_with():
    return support.processes_with


@pytest.fixture(scope="session")
def bundled_jobs():
    """Every bundled reference and known-wrong candidate, as ``cvdp-gym check`` jobs."""
    from cvdp_gym.check import build_jobs
    from cvdp_gym.data import bundled_candidates, load_dataset

    return build_jobs(load_dataset("bundled"), bundled_candidates())


@pytest.fixture(scope="session")
def bundled_results(runner, bundled_jobs):
    """Each bundled job's ``HarnessResult`` on bubblewrap (threads), run once per session and
    shared by the bundled-set, backend-parity and Ray tests."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda job: runner.run(job.problem, job.files), bundled_jobs))
    return {job.key: result for job, result in zip(bundled_jobs, results, strict=True)}


@pytest.fixture(scope="session")
def podman_engine(toolchain):
    """A throwaway user's rootless Podman service (removed with the user at the end)."""
    from tests.cvdp_gym.sandbox.rootless import RootlessPodman, podman_missing

    reason = podman_missing()
    if reason:
        missing(reason)
    engine = RootlessPodman(toolchain.root)
    try:
        engine.start()
        yield engine
    finally:
        engine.stop()


@pytest.fixture(scope="session")
def podman_sandbox(podman_engine, toolchain):
    """The podman sandbox on that service, its stand-in image imported from the simulation
    root (the same tag as Docker's), as the root test process uses it (``HandedOver``)."""
    try:
        import docker
    except ImportError:
        missing("the docker package is missing: pip install -e '.[docker]'")
    from cvdp_gym.sandbox.podman import PodmanSandbox
    from tests.cvdp_gym.sandbox.rootless import HandedOver

    client = docker.DockerClient(base_url=podman_engine.url, max_pool_size=64, timeout=120)
    try:
        sandbox = PodmanSandbox(toolchain, client=client)
    except SandboxUnavailable as exc:
        missing(str(exc))
    start = time.monotonic()
    sandbox.ensure_standin()
    sandbox.import_s = time.monotonic() - start  # reported by the rootless test
    return HandedOver(sandbox, podman_engine)


@pytest.fixture(scope="session")
def podman_runner(podman_sandbox):
    from cvdp_gym.harness import HarnessRunner

    return HarnessRunner(podman_sandbox)


@pytest.fixture(autouse=True)
def root_logging():
    """Each test gets the root logger's own handlers back as it found them: tinker-cookbook's
    ``ml_log`` replaces them with a file in the run's folder, which goes with the test's
    tmp_path, and every later log line would fail on the missing file. pytest's own capture
    handlers (added and removed by pytest around each phase) are left to pytest."""

    def foreign(handler: logging.Handler) -> bool:
        return not type(handler).__module__.startswith("_pytest")

    root = logging.getLogger()
    handlers, level = [h for h in root.handlers if foreign(h)], root.level
    yield
    for handler in [h for h in root.handlers if foreign(h) and h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
