"""The harness runner on real harnesses: verdicts, failure classes, generations, limits."""

from __future__ import annotations

import time
import uuid

import pytest

from cvdp_gym.data.problems import problem_from_record
from cvdp_gym.sandbox import Limits

pytestmark = pytest.mark.sandbox

RTL = """module inv #(parameter W = 4) (input logic [W-1:0] a, output logic [W-1:0] y);
  assign y = ~a;
endmodule
"""
TEST = """import cocotb
from cocotb.triggers import Timer

@cocotb.test()
async def test_all(dut):
    for v in range(16):
        dut.a.value = v
        await Timer(1, {unit}="ns")
        assert int(dut.y.value) == (~v) & 0xF, f"a={{v}} y={{int(dut.y.value)}}"

@cocotb.test()
async def test_zero(dut):
    dut.a.value = 0
    await Timer(1, {unit}="ns")
    assert int(dut.y.value) == 0xF
"""
RUNNER = """import os
from {module} import get_runner

def test_inv():
    runner = get_runner(os.getenv("SIM", "icarus"))
    runner.build(sources=os.getenv("VERILOG_SOURCES").split(), hdl_toplevel=os.getenv("TOPLEVEL"),
                 always=True, clean=True, timescale=("1ns", "1ps"), log_file="build.log")
    runner.test(hdl_toplevel=os.getenv("TOPLEVEL"), test_module=os.getenv("MODULE"))
"""
ENV = "SIM = icarus\nTOPLEVEL_LANG = verilog\nVERILOG_SOURCES = /code/rtl/inv.sv\nTOPLEVEL = inv\nMODULE = test_inv\nPYTHONPATH = /src\n"
SERVICE = """  {name}:
    image: {image}
    volumes:
      - ./src/:/src/:ro
    env_file    : ./src/.env
    command     : pytest -s -o cache_dir=/rundir/harness/.cache /src/{runner} -v
"""


def make_problem(generation="cocotb2", image="__OSS_SIM_IMAGE__", services=("direct",), extra=None, agentic=False):
    module = "cocotb_tools.runner" if generation == "cocotb2" else "cocotb.runner"
    unit = "unit" if generation == "cocotb2" else "units"
    compose = "services:\n" + "".join(
        SERVICE.format(name=n, image=image, runner="test_runner.py") for n in services
    )
    harness = {
        "docker-compose.yml": compose,
        "src/.env": ENV,
        "src/test_runner.py": RUNNER.format(module=module),
        "src/test_inv.py": TEST.format(unit=unit),
        **(extra or {}),
    }
    if agentic:
        record = {"id": f"agentic_inv_{generation}", "categories": ["cid003", "easy"], "system_message": "",
                  "prompt": "p", "context": {"docs/spec.md": "invert"}, "patch": {"rtl/inv.sv": ""}, "harness": harness}
    else:
        record = {"id": f"inv_{generation}", "categories": ["cid003", "easy"],
                  "input": {"prompt": "p", "context": {}}, "output": {"context": {"rtl/inv.sv": RTL}},
                  "harness": {"files": harness}}
    return problem_from_record(record)


def test_reference_passes_with_counts_and_times(runner):
    result = runner.run(make_problem(), {"rtl/inv.sv": RTL})
    assert result.passed and result.failure_class is None, result.reason + result.log_tail
    assert (result.tests.total, result.tests.passed, result.tests.failed) == (2, 2, 0)
    assert result.generation == "cocotb2"
    assert 0 < result.harness_s < result.wall_s


def test_agentic_layout_runs_in_rundir(runner):
    result = runner.run(make_problem(agentic=True), {"rtl/inv.sv": RTL})
    assert result.passed, result.log_tail


def test_cocotb1_harness_runs_in_the_cocotb1_environment(runner, toolchain):
    if not toolchain.env("cocotb1").installed:
        pytest.skip("cocotb1 environment not installed")
    result = runner.run(make_problem("cocotb1"), {"rtl/inv.sv": RTL})
    assert result.passed, result.log_tail
    assert result.generation == "cocotb1"
    # counts come from cocotb's results file for this generation too
    assert (result.tests.total, result.tests.passed) == (2, 2)
    wrong = runner.run(make_problem("cocotb1"), {"rtl/inv.sv": RTL.replace("~a", "a")})
    assert wrong.failure_class == "test_failure"
    assert (wrong.tests.total, wrong.tests.failed) == (2, 2)


@pytest.mark.parametrize("generation", ["cocotb1", "cocotb2"])
def test_compile_error_inside_the_runner_is_a_build_error_with_the_compilers_lines(runner, generation):
    """cocotb 1.x ends a failed compile as ``SystemExit: Process 'iverilog' terminated``."""
    result = runner.run(make_problem(generation), {"rtl/inv.sv": RTL.replace("assign y = ~a;", "assign y = ~a")})
    assert result.failure_class == "build_error", result.reason + "\n" + result.log_tail
    assert "/code/rtl/inv.sv:3: syntax error" in result.log_tail
    assert "syntax error" in result.reason


PARAM_RUNNER = """import os
import pytest
from cocotb_tools.runner import get_runner

@pytest.mark.parametrize("W", [4, 5, 6])
def test_inv(W):
    runner = get_runner(os.getenv("SIM", "icarus"))
    runner.build(sources=os.getenv("VERILOG_SOURCES").split(), hdl_toplevel=os.getenv("TOPLEVEL"),
                 always=True, clean=True, parameters={"W": 4}, timescale=("1ns", "1ps"), log_file="build.log")
    runner.test(hdl_toplevel=os.getenv("TOPLEVEL"), test_module=os.getenv("MODULE"))
"""


def test_counts_cover_every_simulation_when_the_harness_cleans_its_build_folder(runner):
    """``clean=True`` deletes each parameter set's results file before the next simulation."""
    problem = make_problem(extra={"src/test_runner.py": PARAM_RUNNER})
    result = runner.run(problem, {"rtl/inv.sv": RTL})
    assert result.passed, result.log_tail
    assert (result.tests.total, result.tests.passed) == (6, 6)
    assert (result.services[0].pytest.total, result.services[0].pytest.passed) == (3, 3)


def test_result_records_the_toolchain_that_graded_it(runner, toolchain):
    result = runner.run(make_problem(), {"rtl/inv.sv": RTL})
    assert result.toolchain["toolchain"] == toolchain.kind == "root"
    assert result.toolchain["iverilog"].startswith("Icarus Verilog version 13.0")
    assert result.toolchain["fingerprint"] == toolchain.fingerprint()
    assert type(result).from_dict(result.to_dict()).toolchain == result.toolchain


def test_icarus13_accepts_what_icarus11_rejects(runner, host_runner):
    """``parameter int unsigned`` in a parameter port list: a syntax error for Icarus 11."""
    typed = RTL.replace("parameter W = 4", "parameter int unsigned W = 4")
    on_root = runner.run(make_problem(), {"rtl/inv.sv": typed})
    assert on_root.passed, on_root.reason + on_root.log_tail
    on_host = host_runner.run(make_problem(), {"rtl/inv.sv": typed})
    assert on_host.failure_class == "toolchain_gap" and "slang" in on_host.reason
    assert on_host.toolchain["toolchain"] == "host"


@pytest.mark.parametrize(
    "rtl, failure_class, reason",
    [
        (RTL.replace("endmodule", ""), "build_error", "syntax error"),
        (RTL.replace("~a", "a ^ 4'b0001"), "test_failure", "2 of 2 cocotb tests failed"),
        (RTL.replace("output logic [W-1:0] y", "output logic [W-1:0] y_o").replace("assign y", "assign y_o"), "test_failure", "cocotb tests failed"),
        (RTL.replace("module inv", "module not_inv"), "build_error", ""),
    ],
    ids=["syntax", "functional", "port_name", "top_name"],
)
def test_wrong_candidates_get_their_class(runner, rtl, failure_class, reason):
    result = runner.run(make_problem(), {"rtl/inv.sv": rtl})
    assert not result.passed
    assert result.failure_class == failure_class, result.reason + "\n" + result.log_tail
    assert reason in result.reason


def test_every_service_must_pass(runner):
    compose = "services:\n" + SERVICE.format(name="direct", image="__OSS_SIM_IMAGE__", runner="test_runner.py")
    compose += SERVICE.format(name="extra", image="__OSS_SIM_IMAGE__", runner="test_extra.py")
    extra = {
        "docker-compose.yml": compose,
        "src/test_extra.py": "def test_more():\n    assert False, 'second service checks more'\n",
    }
    result = runner.run(make_problem(extra=extra), {"rtl/inv.sv": RTL})
    assert [s.name for s in result.services] == ["direct", "extra"]
    assert [s.passed for s in result.services] == [True, False]
    assert not result.passed and result.reason.startswith("extra:")
    # The results files the first service left are not the second's: it ran no simulation.
    assert result.services[0].tests.total == 2 and result.services[1].tests.total == 0
    assert result.reason == "extra: AssertionError: second service checks more"
    # A compile error outranks the order of services (a lint service often comes first);
    # each service is judged on its own logs, not those an earlier one left.
    for first, second in (("extra", "direct"), ("direct", "extra")):
        order = {**extra, "docker-compose.yml": "services:\n" + "".join(
            SERVICE.format(name=n, image="__OSS_SIM_IMAGE__", runner="test_extra.py" if n == "extra" else "test_runner.py")
            for n in (first, second))}
        broken = runner.run(make_problem(extra=order), {"rtl/inv.sv": RTL.replace("endmodule", "")})
        classes = {s.name: (s.failure_class, s.reason) for s in broken.services}
        assert classes["extra"] == ("test_failure", "AssertionError: second service checks more"), classes
        assert classes["direct"][0] == "build_error"
        assert broken.failure_class == "build_error" and broken.reason.startswith("direct: "), broken.reason


def test_a_missing_working_dir_in_a_writable_mount_is_created_as_docker_does(runner):
    """CVDP's lint services run in ``/src/rundir/`` with ``./src`` mounted writable; no harness ships it."""
    lint = (
        "  lint:\n    image: __OSS_SIM_IMAGE__\n    volumes:\n      - ./src/:/src/\n"
        "    env_file: ./src/.env\n    working_dir: /src/rundir/\n    command: pytest /src/test_where.py -s\n"
    )
    check = "import os\n\ndef test_where():\n    assert os.getcwd() == '/src/rundir'\n    open('lint_results.log', 'w').write('ok')\n"
    extra = {"docker-compose.yml": "services:\n" + lint, "src/test_where.py": check}
    result = runner.run(make_problem(extra=extra), {"rtl/inv.sv": RTL})
    assert result.passed, result.reason + result.log_tail
    # In a read-only mount it cannot be made, there or in Docker: the service fails.
    read_only = {**extra, "docker-compose.yml": "services:\n" + lint.replace("./src/:/src/", "./src/:/src/:ro")}
    assert not runner.run(make_problem(extra=read_only), {"rtl/inv.sv": RTL}).passed


def test_harness_import_error_is_a_harness_error(runner):
    broken = {"src/test_runner.py": "import not_a_module_anywhere\n\ndef test_x():\n    pass\n"}
    result = runner.run(make_problem(extra=broken), {"rtl/inv.sv": RTL})
    assert result.failure_class == "harness_error", result.reason
    assert "not_a_module_anywhere" in result.reason


def test_unsupported_images_and_packages_are_not_run(runner):
    result = runner.run(make_problem(image="ubuntu:22.04"), {"rtl/inv.sv": RTL})
    assert result.failure_class == "unsupported" and "ubuntu:22.04" in result.reason
    compose = "services:\n  direct:\n    build: .\n    env_file: ./src/.env\n    command: pytest /src/test_runner.py\n"
    needs_pkg = {"docker-compose.yml": compose, "Dockerfile": "FROM __OSS_SIM_IMAGE__\nRUN pip install surely-not-installed-pkg\n"}
    result = runner.run(make_problem(extra=needs_pkg), {"rtl/inv.sv": RTL})
    assert result.failure_class == "unsupported" and "surely-not-installed-pkg" in result.reason


def test_candidate_paths_cannot_escape(runner):
    result = runner.run(make_problem(), {"../../etc/evil.sv": RTL})
    assert not result.passed and "not inside the workspace" in result.reason


def test_simulation_that_never_finishes_is_killed_without_orphans(runner, processes_with):
    marker = f"cvdpmark{uuid.uuid4().hex[:12]}"
    forever = RTL.replace("endmodule", "  reg clk = 0;\n  always #1 clk = ~clk;\nendmodule")
    hang = {"src/test_inv.py": "import cocotb\nfrom cocotb.triggers import Timer\n\n@cocotb.test()\nasync def test_hang(dut):\n    while True:\n        await Timer(1000, unit='ns')\n"}
    problem = make_problem(extra={**hang, "src/.env": ENV + f"MARKER = {marker}\n"})
    start = time.monotonic()
    result = runner.run(problem, {"rtl/inv.sv": forever}, limits=Limits(wall_s=4))
    assert result.failure_class == "timeout", result.reason
    assert time.monotonic() - start < 250  # never ends by itself: the 4 s limit ended it, not the default 300 s
    time.sleep(0.2)
    assert processes_with(marker) == []


def test_nothing_is_written_outside_the_run_folder(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    result = runner.run(make_problem(), {"rtl/inv.sv": RTL})
    assert result.passed
    assert list(tmp_path.iterdir()) == []  # the run folder was created here and removed


def test_links_made_in_the_sandbox_do_not_leak_host_files(runner, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("/code/rtl/inv.sv:1: syntax error HOST-SECRET-MARKER\n")  # looks like a compiler log
    leaky = {
        "src/test_runner.py": (
            "import os\n\ndef test_leak():\n"
            f"    os.symlink({str(secret)!r}, 'leak.log')\n"
            "    assert False, 'fail so that logs are read'\n"
        )
    }
    result = runner.run(make_problem(extra=leaky), {"rtl/inv.sv": RTL})
    assert not result.passed
    assert "HOST-SECRET-MARKER" not in result.log_tail + result.reason


@pytest.mark.parametrize("generation", ["cocotb1", "cocotb2"])
def test_results_file_not_found_tells_a_broken_harness_from_a_design(runner, generation):
    """cocotb says "Results file ... not found" both when the harness's test module does
    not import (the harness is broken) and when the simulation ends before cocotb wrote
    results; only the first is a ``harness_error``."""
    broken = make_problem(generation, extra={"src/.env": ENV.replace("MODULE = test_inv", "MODULE = test_nowhere")})
    result = runner.run(broken, {"rtl/inv.sv": RTL})
    assert result.failure_class == "harness_error", result.reason
    assert "not found" in result.reason or "No module named" in result.reason


def test_a_working_dir_is_never_made_through_a_link(tmp_path):
    """A link in the workspace (an agent can make one) is not followed on this machine."""
    from cvdp_gym.harness.runner import _make_working_dir
    from cvdp_gym.sandbox import Mount

    outside, code = tmp_path / "outside", tmp_path / "code"
    outside.mkdir()
    code.mkdir()
    (code / "rundir").symlink_to(outside)
    mounts = [Mount(code, "/code", writable=True), Mount(tmp_path / "ro", "/src")]
    _make_working_dir("/code/rundir/lint", mounts)
    assert list(outside.iterdir()) == []
    _make_working_dir("/code/new/lint/", mounts)
    assert (code / "new" / "lint").is_dir()
    _make_working_dir("/src/rundir", mounts)
    assert not (tmp_path / "ro").exists()


#: A harness whose one test passes at once: pytest prints "1 passed", then ``after`` runs.
PASSING = "import atexit, subprocess, sys, time\n\ndef test_ok():\n    {during}\n\n{after}\n"


def test_a_run_cut_short_after_its_tests_passed_is_no_pass(runner):
    """pytest printed its pass, then the run hung at exit until the sandbox's limit killed it."""
    hang = {"src/test_runner.py": PASSING.format(during="pass", after="atexit.register(time.sleep, 600)")}
    result = runner.run(make_problem(extra=hang), {"rtl/inv.sv": RTL}, limits=Limits(wall_s=4))
    assert "1 passed" in result.log_tail
    assert not result.passed and result.failure_class == "timeout", result.reason


def test_a_process_killed_for_memory_is_no_pass_even_when_the_harness_ignores_it(runner, tmp_path):
    probe = runner.sandbox.run(
        ["python3", "-c", "bytearray(1 << 30)"], scratch=tmp_path, limits=Limits(memory_mb=128, wall_s=30),
    )
    if not probe.out_of_memory:
        pytest.skip("the sandbox enforces memory with rlimits here, not a cgroup that reports kills")
    hog = "subprocess.run([sys.executable, '-c', 'bytearray(1 << 30)'])  # killed; its status ignored"
    harness = {"src/test_runner.py": PASSING.format(during=hog, after="")}
    result = runner.run(make_problem(extra=harness), {"rtl/inv.sv": RTL}, limits=Limits(memory_mb=256, wall_s=60))
    assert "1 passed" in result.log_tail
    assert not result.passed and result.failure_class == "resource_limit", result.reason
