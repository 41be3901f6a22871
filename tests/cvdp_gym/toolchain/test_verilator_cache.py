"""The root's Verilator runtime cache: builds reuse it in both sandboxes, verdicts stay the
same, nothing writes it.

The root build compiles Verilator's C++ runtime once into ``/opt/cvdp/ccache`` and
harnesses get ``OBJCACHE=ccache`` with that cache read-only (``toolchain/root.py``); the
Docker stand-in image carries the same cache, and a label that images made from it
inherit. These tests run the bundled Verilator problem on the real root (bubblewrap) and
its image (Docker) and read ccache's own per-object record (``/tmp/ccache-stats.log`` of
the run, kept with ``keep_dir``).
"""

from __future__ import annotations

import dataclasses
import io
import uuid

import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.data.bundle import bundled_candidates
from cvdp_gym.harness import HarnessRunner, RunOptions
from cvdp_gym.sandbox import Limits, Mount
from cvdp_gym.toolchain import detect
from cvdp_gym.toolchain.root import RUNTIME_CACHE
from cvdp_gym.toolchain.tools import VERILATOR_VERSION_LINE
from tests.support import missing

pytestmark = pytest.mark.sandbox

PROBLEM = "cvdp_gym_event_counter_0001"
RUNTIME_SOURCES = ("verilated.cpp", "verilated_vpi.cpp", "verilated_threads.cpp", "verilated_dpi.cpp")


@pytest.fixture(scope="module")
def cached_toolchain(toolchain):
    if not toolchain.runtime_cache:
        missing(f"the root at {toolchain.root} has no Verilator runtime cache: run cvdp-gym toolchain install")
    return toolchain


def _outcomes(stats_log: str) -> dict[str, list[str]]:
    """ccache's stats log: ``# <source>`` then one counter per line -> {source file name: counters}."""
    out: dict[str, list[str]] = {}
    current = None
    for line in stats_log.splitlines():
        if line.startswith("# "):
            current = line[2:].rsplit("/", 1)[-1]
            out[current] = []
        elif current and line.strip():
            out[current].append(line.strip())
    return out


def _snapshot(folder) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


@pytest.fixture(params=["bubblewrap", pytest.param("docker", marks=pytest.mark.docker)])
def any_sandbox(request, cached_toolchain):
    return request.getfixturevalue("sandbox" if request.param == "bubblewrap" else "dsandbox")


def test_a_verilator_answer_reuses_the_runtime_objects_and_keeps_its_verdict(cached_toolchain, any_sandbox, tmp_path):
    sandbox = any_sandbox
    problem = load_dataset("bundled")[PROBLEM]
    wrong = next(c for c in bundled_candidates() if c.problem_id == PROBLEM and c.name == "functional_bug")
    runner = HarnessRunner(sandbox, RunOptions(keep_dir=tmp_path / "reference"))
    reference = runner.run(problem, problem.reference)
    assert reference.passed, reference.reason + reference.log_tail
    runner = HarnessRunner(sandbox, RunOptions(keep_dir=tmp_path / "wrong"))
    failed = runner.run(problem, wrong.files)
    assert not failed.passed and failed.failure_class == wrong.expected_class == "test_failure", failed.reason

    kept = tmp_path / "wrong" / PROBLEM
    build_log = (kept / "code" / "rundir" / "build.log").read_text()
    assert "ccache g++" in build_log and "verilated.cpp" in build_log, build_log[-2000:]
    outcomes = _outcomes((kept / "scratch" / "tmp" / "ccache-stats.log").read_text())
    for source in RUNTIME_SOURCES:
        assert "direct_cache_hit" in outcomes.get(source, []), (source, outcomes)
    # The answer's own model is compiled, never served from the cache.
    assert "cache_miss" in outcomes["Vtop__ALL.cpp"], outcomes
    # ... by the pinned Verilator, the official image's 5.038.
    assert failed.toolchain["verilator"] == VERILATOR_VERSION_LINE
    assert "/opt/cvdp/tools/" in build_log


def _runs_with_cache(runner, problem, keep) -> tuple[bool, bool]:
    """(verdict passed, ccache served the runtime objects) of the reference run in ``keep``."""
    result = runner.run(problem, problem.reference)
    stats = keep / problem.id / "scratch" / "tmp" / "ccache-stats.log"
    served = stats.exists() and all("direct_cache_hit" in _outcomes(stats.read_text()).get(s, []) for s in RUNTIME_SOURCES)
    return result.passed, served


@pytest.mark.docker
def test_images_made_from_the_standin_serve_the_cache_and_others_do_not(cached_toolchain, dsandbox, tmp_path):
    """An image named like the official one but made from the stand-in (as ``cvdp-gym parity``
    or a user makes one) holds the cache; one without the stand-in's label gets no cache
    variables (a real ``nvidia/cvdp-sim`` has no ccache), and both keep the verdict."""
    from cvdp_gym.sandbox.docker_images import RUNTIME_CACHE_LABEL

    client, standin = dsandbox.client, dsandbox.ensure_standin()
    assert client.images.get(standin).labels[RUNTIME_CACHE_LABEL] == cached_toolchain.runtime_cache_id
    problem = load_dataset("bundled")[PROBLEM]
    made = []
    try:
        for kind, extra in (("derived", ""), ("foreign", f'LABEL {RUNTIME_CACHE_LABEL}=""\n')):
            tag = f"nvidia/cvdp-sim:cvdp-gym-test-{kind}-{uuid.uuid4().hex[:8]}"
            dockerfile = f"FROM {standin}\nENV PATH=/opt/cvdp/cocotb2/bin:/usr/local/bin:/usr/bin:/bin\n{extra}"
            client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, network_mode="none")
            made.append(tag)
        derived, foreign = made
        assert dsandbox.serves_runtime_cache(derived) and not dsandbox.serves_runtime_cache(foreign)
        for tag, expected in ((derived, True), (foreign, False)):
            harness = {**problem.harness, "docker-compose.yml": problem.harness["docker-compose.yml"].replace("__OSS_SIM_IMAGE__", tag)}
            named = dataclasses.replace(problem, harness=harness)
            runner = HarnessRunner(dsandbox, RunOptions(keep_dir=tmp_path / tag.rsplit(":", 1)[1]))
            assert _runs_with_cache(runner, named, tmp_path / tag.rsplit(":", 1)[1]) == (True, expected), tag
    finally:
        for tag in made:
            client.images.remove(tag)


def test_nothing_in_the_sandbox_can_write_the_runtime_cache(cached_toolchain, sandbox, tmp_path):
    cache = cached_toolchain.root / str(RUNTIME_CACHE).lstrip("/")
    before = _snapshot(cache)
    entry = next(p for p in sorted(cache.rglob("*")) if p.is_file() and len(p.name) > 16)
    inside = f"{RUNTIME_CACHE}/{entry.relative_to(cache)}"
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "x.cpp").write_text("int answer() { return 42; }\n")
    script = (
        f"echo poison > {RUNTIME_CACHE}/poison; "
        f"echo poison > {inside}; "
        f"rm -f {inside}; "
        f"mkdir {RUNTIME_CACHE}/0/new; "
        # A harness that asks ccache to store (read-only off, recache on) still cannot.
        "env -u CCACHE_READONLY CCACHE_RECACHE=1 ccache g++ -c x.cpp -o x.o && echo compiled; "
        "ccache --zero-stats; ccache --clear; echo done"
    )
    out = sandbox.run(
        ["sh", "-c", script],
        mounts=[Mount(tmp_path / "work", "/work", writable=True)],
        scratch=tmp_path / "scratch",
        cwd="/work",
        env=cached_toolchain.build_cache_env(),
        sim_env=cached_toolchain.env("cocotb2"),
        limits=Limits(wall_s=60),
    )
    assert "compiled" in out.output and "done" in out.output, out.output
    assert out.output.count("Read-only file system") >= 4, out.output
    assert _snapshot(cache) == before
    # The host fallback has no such cache and gets none of its variables.
    assert detect("host").build_cache_env() == {}
