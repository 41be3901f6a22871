"""Shared fixtures: the real toolchain, skipping (with the reason) only where it is absent."""

from __future__ import annotations

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
