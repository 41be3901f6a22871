"""Red team: what a hostile answer tries, and what it gets.

Each test plays one attack on the real runner (bubblewrap on the simulation root unless
it says otherwise) and asserts the verdict it must get. The threat model is in the
README ("What an answer can and cannot influence").
"""

from __future__ import annotations

import uuid

import pytest

from cvdp_gym.gate import Scan
from cvdp_gym.sandbox import Limits, Mount
from cvdp_gym.sandbox.workspace import Workspace
from tests.cvdp_gym.harness.test_runner import RTL, make_problem

pytestmark = pytest.mark.sandbox

WRONG = RTL.replace("assign y = ~a;", "assign y = a;")
PASSING_XML = (
    '<testsuites name="results"><testsuite name="all" package="all">'
    '<testcase name="test_all" classname="test_inv" /><testcase name="test_zero" classname="test_inv" />'
    "</testsuite></testsuites>"
)


@pytest.fixture
def ungated(monkeypatch):
    """The runtime defences alone: the answer gate (:mod:`cvdp_gym.gate`), which refuses each
    of these designs before anything runs, turned off, as if an attack had slipped past it."""

    def off() -> None:
        monkeypatch.setattr("cvdp_gym.harness.runner.check", lambda *args, **kwargs: Scan())

    return off


def _refused(result, words: str = "") -> None:
    """The answer gate's verdict: ``reach_in``, nothing run, ``words`` among its findings."""
    notes = "\n".join(note for service in result.services for note in service.notes)
    assert result.failure_class == "reach_in" and words in notes, (result.failure_class, result.reason)


def _with(body: str, rtl: str = WRONG) -> str:
    """``rtl`` with extra module items (before ``endmodule``)."""
    return rtl.replace("endmodule", body + "\nendmodule")


def _write_file(path: str, text: str, when: str = "final") -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'  integer fd;\n  {when} begin fd = $fopen("{path}", "w"); $fwrite(fd, "%s", "{escaped}"); $fclose(fd); end'


# -- secrets --------------------------------------------------------------------------


def test_a_canary_in_the_graders_environment_is_not_readable_by_a_harness_or_a_command(runner, monkeypatch, tmp_path):
    canary = f"cvdp-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    dump = (
        "import glob, os\n\ndef test_dump():\n"
        "    for path in glob.glob('/proc/*/environ'):\n"
        "        print(path, open(path, 'rb').read())\n"
        "    print('ENV', dict(os.environ))\n"
    )
    harness = {
        "docker-compose.yml": (
            "services:\n  dump:\n    image: __OSS_SIM_IMAGE__\n    volumes:\n      - ./src/:/src/:ro\n"
            "    command: pytest -s /src/test_dump.py\n"
        ),
        "src/test_dump.py": dump,
    }
    result = runner.run(make_problem(extra=harness), {"rtl/inv.sv": RTL})
    assert "/proc/1/environ" in result.log_tail and "ENV" in result.log_tail, result.log_tail
    assert canary not in result.log_tail
    with Workspace({"rtl/inv.sv": RTL}, sandbox=runner.sandbox) as workspace:
        out = workspace.run("cat /proc/1/environ /proc/self/environ; env; cat /proc/*/environ").output
    assert canary not in out


# -- forged counts and verdicts -------------------------------------------------------


def test_fake_cocotb_summaries_printed_by_a_design_count_for_nothing(runner):
    fake = '  initial $display("** TESTS=500 PASS=500 FAIL=0 SKIP=0 **");\n  final $display("TESTS=9 PASS=9 FAIL=0 SKIP=0");'
    result = runner.run(make_problem(), {"rtl/inv.sv": _with(fake)})
    assert result.failure_class == "test_failure"
    assert (result.tests.total, result.tests.passed, result.tests.failed) == (2, 0, 2)


@pytest.mark.parametrize("when", ["final", "initial"])
def test_a_design_that_writes_cocotbs_results_file_fails(runner, ungated, when):
    """A ``final`` block that rewrites the results file with passing cases makes pytest pass
    (the official harness believes it); writing it early is caught the same way. The gate
    refuses the write (a design writes only data files of its folder); past it, the watch
    counts the writes."""
    forge = _write_file("/code/rundir/sim_build/test_inv.result.xml", PASSING_XML, when)
    _refused(runner.run(make_problem(), {"rtl/inv.sv": _with(forge)}), "not a data file")
    ungated()
    result = runner.run(make_problem(), {"rtl/inv.sv": _with(forge)})
    assert not result.passed
    assert result.failure_class == "test_failure" and "results file" in result.reason, result.reason
    assert result.tests.passed == 0


@pytest.mark.parametrize("generation", ["cocotb2", "cocotb1"])
@pytest.mark.parametrize("rtl", [WRONG, RTL], ids=["wrong", "correct"])
def test_a_results_file_of_its_own_pads_no_counts(runner, ungated, generation, rtl):
    """Only the results file the simulation was told to write (``COCOTB_RESULTS_FILE`` in
    the simulator's environment, which the design cannot change) counts."""
    many = PASSING_XML.replace("</testsuite>", '<testcase name="x" classname="y" />' * 50 + "</testsuite>")
    extra = _write_file("/code/rundir/sim_build/padding.result.xml", many, "initial")
    extra += "\n" + _write_file("/code/rundir/results.xml", many, "initial").replace("integer fd;", "")
    _refused(runner.run(make_problem(generation), {"rtl/inv.sv": _with(extra, rtl)}), "not a data file")
    ungated()
    result = runner.run(make_problem(generation), {"rtl/inv.sv": _with(extra, rtl)})
    expected_pass = rtl is RTL
    assert result.passed is expected_pass, result.reason
    assert result.tests.total == 2 and result.tests.passed == (2 if expected_pass else 0), result.tests


def test_a_correct_design_is_not_mistaken_for_a_forger(runner):
    result = runner.run(make_problem(), {"rtl/inv.sv": RTL})
    assert result.passed and (result.tests.total, result.tests.passed) == (2, 2)


@pytest.mark.parametrize("ending", ['initial $finish;', 'initial begin #0; $fatal(1, "done"); end', "initial $stop;"])
def test_ending_the_simulation_early_does_not_pass(runner, ungated, ending):
    """No design needs to end the simulation (the gate's allowlist); past it, cocotb records
    the tests the simulation never ran as failed; ``$stop`` changes nothing."""
    _refused(runner.run(make_problem(), {"rtl/inv.sv": _with(f"  {ending}")}), "not one of the system tasks")
    ungated()
    result = runner.run(make_problem(), {"rtl/inv.sv": _with(f"  {ending}")})
    assert result.failure_class == "test_failure", result.reason
    assert result.tests.passed == 0


# -- the classifier -------------------------------------------------------------------


def test_sorry_in_a_log_the_design_writes_is_no_excuse_on_the_host(host_runner, ungated):
    """The host fallback's ``toolchain_gap`` rests on Icarus's own located diagnostics at
    build time; a log written by a simulated design cannot turn failed tests into one."""
    log = "/code/rtl/inv.sv:1: sorry: this construct is not supported\\n"
    _refused(host_runner.run(make_problem(), {"rtl/inv.sv": _with(_write_file("/code/rundir/sorry.log", log, "initial"))}))
    ungated()
    for path in ("/code/rundir/sim_build/build.log", "/code/rundir/sorry.log"):
        result = host_runner.run(make_problem(), {"rtl/inv.sv": _with(_write_file(path, log, "initial"))})
        assert result.failure_class == "test_failure", result.reason


def test_sorry_in_an_include_name_is_no_excuse(runner, host_runner, ungated):
    """The compiler echoes the include name: on the root nothing is excused anyway, and on
    the host only Icarus's own located ``file:line: sorry:`` counts."""
    broken = '`include "sorry: this construct is not supported"\n' + RTL.replace("endmodule", "")
    _refused(runner.run(make_problem(), {"rtl/inv.sv": broken}), "not one of the answer's own files")
    ungated()
    for chosen in (runner, host_runner):
        result = chosen.run(make_problem(), {"rtl/inv.sv": broken})
        assert result.failure_class == "build_error", result.reason + result.log_tail
        lint = chosen.lint(make_problem(), {"rtl/inv.sv": broken})
        assert not lint.ok and not lint.gap


# -- the harness ----------------------------------------------------------------------


def test_a_design_cannot_edit_the_harness(runner, ungated):
    """``/src`` is mounted read-only: a design that rewrites the tests still fails them."""
    always_pass = "def test_inv():\\n    pass\\n"
    attack = _write_file("/src/test_runner.py", always_pass, "initial")
    problem = make_problem()
    before = dict(problem.harness)
    _refused(runner.run(problem, {"rtl/inv.sv": _with(attack)}), "not a data file")
    ungated()
    result = runner.run(problem, {"rtl/inv.sv": _with(attack)})
    assert result.failure_class == "test_failure", result.reason
    assert problem.harness == before


def test_a_design_that_reads_the_tests_is_refused_though_the_official_image_lets_it(runner, ungated):
    """cocotb imports the tests from ``/src`` inside the simulator, so a design could read
    them, as in the official image; the gate refuses a read outside the answer's working
    folder (we do not hide them: that would change harness semantics). The agentic workspace
    never holds them (tests/test_agentic.py)."""
    peek = (
        "  integer fd, n; reg [8*64-1:0] line;\n"
        '  initial begin fd = $fopen("/src/test_inv.py", "r"); n = $fgets(line, fd);'
        ' $display("PEEK[%0s]", line); end'
    )
    _refused(runner.run(make_problem(), {"rtl/inv.sv": _with(peek, RTL)}), "outside the answer's working folder")
    ungated()
    result = runner.run(make_problem(), {"rtl/inv.sv": _with(peek, RTL)})
    assert result.passed  # judged on behaviour only
    assert "PEEK[import cocotb" in result.log_tail, result.log_tail


def test_a_command_cannot_write_the_toolchain_or_the_harness(runner, tmp_path):
    scratch = tmp_path / "scratch"
    harness = tmp_path / "src"
    harness.mkdir()
    (harness / "test_x.py").write_text("original")
    out = runner.sandbox.run(
        ["sh", "-c", "echo x > /src/test_x.py; echo x > /usr/bin/iverilog; echo x > /opt/cvdp/cocotb2/bin/python; echo done"],
        mounts=[Mount(harness, "/src")],
        scratch=scratch,
        limits=Limits(wall_s=30),
    )
    assert "done" in out.output and out.output.count("Read-only file system") == 3, out.output
    assert (harness / "test_x.py").read_text() == "original"


def test_a_verilator_design_rewriting_the_results_file_from_a_shell_fails(runner):
    """Verilator has ``$system``: a design can start a shell that replaces the results file
    after cocotb wrote it (even removing it first). No design needs ``$system``: the static
    check stops it before the harness runs (``reach_in``); the writes it would make are the
    ones the results watch counts (the tests above)."""
    from cvdp_gym.data import load_dataset
    from cvdp_gym.data.bundle import bundled_candidates

    problem = load_dataset("bundled")["cvdp_gym_event_counter_0001"]
    wrong = next(c for c in bundled_candidates() if c.problem_id == problem.id and c.name == "functional_bug")
    (path, rtl), = wrong.files.items()
    target = "/code/rundir/sim_build/test_runner.result.xml"
    fake = PASSING_XML.replace("test_inv", "test_event_counter")
    attack = _write_file("/code/rundir/fake.xml", fake, "initial")
    attack += f'\n  final $system("rm -f {target}; cp /code/rundir/fake.xml {target}");'
    result = runner.run(problem, {path: _with(attack, rtl)})
    assert not result.passed
    _refused(result, "`$system`: not one of the system tasks")


@pytest.mark.docker
def test_the_docker_backend_catches_the_same_forgeries(docker_runner, ungated):
    ungated()  # the runtime defences, as past the gate
    many = PASSING_XML.replace("</testsuite>", '<testcase name="x" classname="y" />' * 50 + "</testsuite>")
    padded = docker_runner.run(make_problem(), {"rtl/inv.sv": _with(_write_file("/code/rundir/sim_build/padding.result.xml", many, "initial"), RTL)})
    assert padded.passed and (padded.tests.total, padded.tests.passed) == (2, 2), padded.tests
    forged = docker_runner.run(make_problem(), {"rtl/inv.sv": _with(_write_file("/code/rundir/sim_build/test_inv.result.xml", PASSING_XML))})
    assert forged.failure_class == "test_failure" and "results file" in forged.reason, forged.reason
