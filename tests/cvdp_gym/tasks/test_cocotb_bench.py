"""cocotb test benches on a made-up counter and two hand-written bugs, with real runs in the sandbox.

The runs (cocotb 2.0.1 and Icarus in the pinned root) happen once in a module fixture: a
thorough bench fails both bugs, a weak one passes everything, a false alarm stops at the
reference, a broken, an empty and an endless bench fail with their reason. The rules
(``cocotb_bench_findings``) are unit-tested on their own: each forbidden use is one finding.
"""

from __future__ import annotations

import time

import pytest

from cvdp_gym.equivalence.ports import read_design
from cvdp_gym.sandbox.base import Limits
from cvdp_gym.tasks.cocotb_bench import _script, _verdict, run_cocotb_designs
from cvdp_gym.tasks.cocotb_bench_rules import cocotb_bench_findings
from tests.cvdp_gym.tasks.verification_problems import COUNTER

pytestmark = pytest.mark.sandbox

BY_TWO = COUNTER.replace("q <= q + 4'd1", "q <= q + 4'd2")
WRAP_WRONG = COUNTER.replace("assign wrap = en && q == 4'd15;", "assign wrap = q == 4'd15;")
DESIGNS = [COUNTER, BY_TWO, WRAP_WRONG]
PORTS = [p.name for p in read_design(COUNTER, "counter").ports]

#: Every output on every cycle against a Python model; uses the helpers the rules allow.
THOROUGH = '''\
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, Timer


class Model:
    def __init__(self, dut):
        self.dut = dut
        self.q = 0

    def check(self, en):
        assert int(self.dut.wrap.value) == int(en and self.q == 15), f"wrap {self.dut.wrap.value} with q={self.q}"


async def reset(dut):
    dut.rst.value = 1
    dut["en"].value = 0
    await FallingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0


@cocotb.test()
async def counts_and_wraps(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    await reset(dut)
    model = Model(dut)
    for i in range(60):
        en = i % 3 != 1 or random.random() < 0.0
        dut.en.value = int(en)
        await Timer(1, unit="ns")
        model.check(en)
        await FallingEdge(getattr(dut, "clk"))
        if en:
            model.q = (model.q + 1) % 16
        assert int(dut.q.value) == model.q, f"q={int(dut.q.value)} expected {model.q}"
    dut._log.info("done")
'''
#: Only the value after reset: misses both bugs.
WEAK = '''\
import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge


@cocotb.test()
async def resets(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.en.value = 0
    await FallingEdge(dut.clk)
    assert int(dut.q.value) == 0
'''
FALSE_ALARM = WEAK.replace("int(dut.q.value) == 0", "int(dut.q.value) == 1, 'q is not 1 after reset'")
BROKEN = "import cocotb\n\n@cocotb.test()\nasync def t(dut)\n    pass\n"
EMPTY = "import cocotb\n\n\nasync def not_a_test(dut):\n    pass\n"
ENDLESS = WEAK.replace("assert int(dut.q.value) == 0", "while True:\n        await FallingEdge(dut.clk)")


@pytest.fixture(scope="module")
def runs(sandbox):
    """Each bench's verdicts and its seconds per design run (one sandbox run a design)."""
    out = {}
    for name, bench, sim_s in (
        ("thorough", THOROUGH, 20), ("weak", WEAK, 20), ("false alarm", FALSE_ALARM, 20), ("broken", BROKEN, 20),
        ("empty", EMPTY, 20), ("endless", ENDLESS, 2),
    ):
        start = time.monotonic()
        verdicts = run_cocotb_designs(sandbox, bench, DESIGNS, "counter", sim_s=sim_s, limits=Limits(wall_s=120))
        ran = sum(1 for v in verdicts if v.built or "not run" not in v.why)
        out[name] = (verdicts, (time.monotonic() - start) / max(ran, 1))
    return out


def test_a_thorough_bench_passes_the_reference_and_fails_both_bugs(runs):
    (reference, by_two, wrap), per_design = runs["thorough"]
    assert reference.built and reference.passed, reference.why
    assert by_two.built and not by_two.passed and "q=2 expected 1" in by_two.why
    assert wrap.built and not wrap.passed and wrap.why.startswith("counts_and_wraps: AssertionError")
    assert "wrap 1" in wrap.why
    print(f"\n[cocotb bench] {per_design:.2f} s per design")
    assert per_design < 10


def test_a_weak_bench_passes_everything(runs):
    verdicts, _ = runs["weak"]
    assert all(v.built and v.passed for v in verdicts), verdicts


def test_a_false_alarm_stops_at_the_reference(runs):
    (reference, *mutants), _ = runs["false alarm"]
    assert reference.built and not reference.passed and "q is not 1 after reset" in reference.why
    assert all(not m.built and "not run" in m.why for m in mutants)


def test_a_bench_with_a_syntax_error_does_not_build(runs):
    (reference, *mutants), _ = runs["broken"]
    assert not reference.built and not reference.passed
    assert reference.why == "test_tb.py:4: SyntaxError: expected ':'"
    assert all("not run" in m.why for m in mutants)


def test_a_bench_without_tests_passes_nothing(runs):
    (reference, *_), _ = runs["empty"]
    assert reference.built and not reference.passed and "no cocotb test" in reference.why


def test_an_endless_bench_is_cut_at_its_time_limit(runs):
    (reference, *mutants), _ = runs["endless"]
    assert reference.built and not reference.passed and reference.why == "did not finish in its time limit"
    assert all("not run" in m.why for m in mutants)


def test_the_verdict_reads_the_results_file_not_the_log():
    failing = '<testsuites><testsuite><testcase name="t"><failure error_type="AssertionError" error_msg="no&#10;more" /></testcase></testsuite></testsuites>'
    passing = '<testsuites><testsuite><testcase name="t" /></testsuite></testsuites>'
    assert _verdict("0", "", "0", "TESTS=1 PASS=1", failing).why == "t: AssertionError: no"
    assert _verdict("0", "", "0", "FAIL", passing).passed
    assert not _verdict("0", "", "0", "", "").passed
    assert not _verdict("0", "", "0", "", "<testsuites><testsuite/></testsuites>").passed
    assert "unreadable" in _verdict("0", "", "0", "", "<testsuites").why
    assert not _verdict("0", "", "1", "", passing).passed
    iverilog = "INFO cocotb: Running command iverilog\n/work/d0/design.sv:3: syntax error\nsubprocess.CalledProcessError: x"
    assert _verdict("2", iverilog, "", "", "").why == "/work/d0/design.sv:3: syntax error"


def test_one_designs_script_builds_then_deletes_the_design_before_the_bench_runs():
    script = _script(python="/opt/cvdp/cocotb2/bin/python", top="counter", sim_s=5, seed=1, marker="@@m@@")
    assert "timeout -s KILL 5 /opt/cvdp/cocotb2/bin/python cocotb_driver.py build counter 1 2>&1; rc=$?" in script
    assert 'echo "@@m@@ $rc"' in script  # the build's log and status go to the sandbox's own output
    build, test = script.index(" build counter"), script.index(" test counter")
    assert build < script.index("rm -f design.sv") < script.index("! -name sim.vvp -delete") < test


# --- the rules -------------------------------------------------------------------------------

def test_a_clean_bench_has_no_finding():
    assert cocotb_bench_findings(THOROUGH, ports=PORTS) == []
    assert cocotb_bench_findings(WEAK, ports=PORTS) == []


BODY = '''\
import random

import cocotb


async def helper(h):
    return h.q


@cocotb.test()
async def t(dut):
    await helper(dut)
    {line}
'''


@pytest.mark.parametrize(("line", "says"), [
    ("import os", "`import os`"),
    ("import sys", "`import sys`"),
    ("import subprocess", "`import subprocess`"),
    ("import pathlib", "`import pathlib`"),
    ("import socket", "`import socket`"),
    ("from cocotb import simulator", "raw part"),
    ("open('design.sv')", "`open`"),
    ("exec('1')", "`exec`"),
    ("eval('1')", "`eval`"),
    ("compile('1', 'x', 'exec')", "`compile`"),
    ("__import__('os')", "`__import__`"),
    ("x = random._os", "`random._os`"),
    ("x = ().__class__", "dunder"),
    ("x = dut._handle", "`._handle`"),
    ("x = dut._sub_handles", "`._sub_handles`"),
    ("dut._discover_all()", "`._discover_all`"),
    ("x = dut._id('state')", "`dut._id`"),
    ("x = dut.state", "`dut.state`: not a port"),
    ("x = dut['state']", "by a port's name"),
    ("x = cocotb.top.state", "`cocotb.top.state`"),
    ("name = 'q'; x = getattr(dut, name)", "computed name"),
    ("x = getattr(dut, 'state')", "not a port"),
    ("x = [s for s in dut]", "iterates over `dut`"),
    ("h = dut; x = h.state", "`h.state`"),
    ("x = dir(dut)", "handed to `dir`"),
    ("x = [dut]", "cannot follow"),
])
def test_each_forbidden_use_is_one_finding(line, says):
    findings = cocotb_bench_findings(BODY.format(line=line), ports=PORTS)
    assert len(findings) == 1, findings
    assert says in findings[0] and findings[0].startswith("test_tb.py:13:"), findings


def test_the_handle_is_followed_into_the_benchs_own_functions_and_classes():
    text = BODY.format(line="x = 1") + (
        "\n\nasync def peek(d):\n    return d.state\n\n\nclass Spy:\n    def __init__(self, d):\n        self.d = d\n\n"
        "    def look(self):\n        return self.d.count\n\n\n@cocotb.test()\nasync def u(dut):\n    await peek(dut)\n"
        "    Spy(dut)\n"
    )
    assert [f.split(": ", 1)[1] for f in cocotb_bench_findings(text, ports=PORTS)] == [
        "`d.state`: not a port of the design (a bench may use only its ports)",
        "`self.d.count`: not a port of the design (a bench may use only its ports)",
    ]


def test_a_bench_that_does_not_parse_is_a_finding():
    (finding,) = cocotb_bench_findings(BROKEN, ports=PORTS)
    assert finding.startswith("test_tb.py:4: does not parse")
