"""The pinned simulation root: what it holds, its lock, idempotence, and a clear failure."""

from __future__ import annotations

import pytest

from cvdp_gym.toolchain import GENERATIONS, RootBuildError, install
from cvdp_gym.toolchain.envs import requirement_lines
from cvdp_gym.toolchain.root import OUTSIDE_ENVS, build_root, read_lock, root_env


@pytest.mark.sandbox
def test_the_lock_lists_the_official_simulators_and_every_pin(toolchain):
    lock = read_lock(toolchain.root)
    assert lock["tools"]["iverilog"].startswith("Icarus Verilog version 13.0 (stable) (v13_0)")
    assert lock["tools"]["verilator"].startswith("Verilator 5.")
    assert lock["tools"]["yosys"].startswith("Yosys ")
    for package in ("iverilog", "verilator", "yosys", "g++", "python3"):
        assert package in lock["debian"], package
    for generation in GENERATIONS:
        installed = lock["python"][generation]
        for line in requirement_lines(generation, without=OUTSIDE_ENVS):
            name, version = line.split("==")
            assert installed[name.lower()] == version, (generation, name)
        assert root_env(toolchain.root, generation).installed
    assert toolchain.fingerprint().startswith("root-") and "missing" not in toolchain.fingerprint()


@pytest.mark.sandbox
def test_install_again_is_a_no_op(toolchain, tmp_path):
    before = (toolchain.root / "opt/cvdp/lock.json").stat().st_mtime_ns
    tc = install("root", log=lambda message: pytest.fail(f"rebuilt: {message}"))
    assert tc.root == toolchain.root and tc.fingerprint() == toolchain.fingerprint()
    assert (toolchain.root / "opt/cvdp/lock.json").stat().st_mtime_ns == before


def test_an_unreachable_archive_is_one_clear_error(tmp_path):
    logged = []
    with pytest.raises(RootBuildError) as info:
        build_root(tmp_path, mirror="http://127.0.0.1:9/debian", log=logged.append)
    message = str(info.value)
    assert "mmdebstrap could not build the forky root from http://127.0.0.1:9/debian" in message
    assert "reachable" in message
    assert not (tmp_path / "root").exists() and not (tmp_path / "root.partial").exists()
