"""Shared fixtures: the real toolchain, skipping (with the reason) only where it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from cvdp_gym.toolchain import detect


@pytest.fixture(scope="session")
def toolchain():
    tc = detect()
    if not tc.bwrap.ok or not tc.iverilog.ok or not tc.env("cocotb2").installed:
        pytest.skip("simulation toolchain missing: run scripts/setup.sh (cvdp-gym doctor says what)")
    return tc


@pytest.fixture(scope="session")
def sandbox(toolchain):
    from cvdp_gym.sandbox import BubblewrapSandbox

    return BubblewrapSandbox(toolchain)


@pytest.fixture(scope="session")
def runner(sandbox):
    from cvdp_gym.harness import HarnessRunner

    return HarnessRunner(sandbox)


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
