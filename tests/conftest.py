"""Shared fixtures: the real toolchain, skipping (with the reason) only where it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cvdp_gym.sandbox.bwrap import SandboxUnavailable
from cvdp_gym.toolchain import detect


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


def _missing(reason: str):
    """Skip, except in CI, where every backend must be there (setup.sh installs them)."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_client():
    try:
        import docker  # noqa: F401
    except ImportError:
        _missing("the docker package is missing: pip install -e '.[docker]'")
    from cvdp_gym.sandbox.docker import connect

    try:
        return connect()
    except SandboxUnavailable as exc:
        _missing(str(exc))


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


def _processes_with(marker: str) -> list[int]:
    """PIDs whose command line or environment contains ``marker`` (to prove nothing is left)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if any(marker.encode() in (entry / f).read_bytes() for f in ("cmdline", "environ")):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture
def processes_with():
    return _processes_with
