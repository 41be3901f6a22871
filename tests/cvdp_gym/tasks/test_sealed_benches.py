"""Benches that never read the specification earn nothing: sealed design runs, the answer gate on
Verilog benches, and the runtime guard on cocotb benches (real Icarus and cocotb runs in the
real sandbox, on the made-up counter).

Each probe here is a bench that would tell the reference from the mutants by something other
than behaviour, as issue 45 measured (kill rate 1.0 on the shared run folder): a marker file
left for later runs, a text diff against another design's file, a replay of the first run's
trace, a `$dumpfile` over the reference's log, a hierarchical name a macro builds, and cocotb
benches reaching ``open`` through ``dataclasses.sys.modules["builtins"]``. Through the task's
flow each is ``reach_in`` or earns kill rate 0; run past the flow's readers (the runners called
directly), the sealed runs and the guard still give it nothing. A thorough honest bench keeps
kill rate 1.0, with a waveform dump too.
"""

from __future__ import annotations

import pytest

from cvdp_gym.harness.results import REACH_IN
from cvdp_gym.sandbox.base import Limits
from cvdp_gym.tasks.bench_verdicts import DesignRun
from cvdp_gym.tasks.cocotb_bench import run_cocotb_designs
from cvdp_gym.tasks.cocotb_bench_rules import cocotb_bench_findings
from cvdp_gym.tasks.names import BENCH_FILE, COCOTB_FILE, TESTBENCH, TESTBENCH_COCOTB
from cvdp_gym.tasks.posing import task_problem
from cvdp_gym.tasks.verilog_bench import reference_verdict, run_order, run_verilog_designs
from tests.cvdp_gym.tasks.test_cocotb_bench import THOROUGH as COCOTB_THOROUGH
from tests.cvdp_gym.tasks.verification_problems import COUNTER, THOROUGH_BENCH, counter_problem

pytestmark = pytest.mark.sandbox

#: Real bugs of the counter, for the runners called directly.
DESIGNS = [
    COUNTER,
    COUNTER.replace("q <= q + 4'd1", "q <= q + 4'd2"),
    COUNTER.replace("assign wrap = en && q == 4'd15;", "assign wrap = q == 4'd15;"),
    COUNTER.replace("if (rst) q <= 4'd0;", "if (rst) q <= 4'd3;"),
]

_HEAD = """module tb;
  reg clk = 0, rst = 1, en = 1; wire [3:0] q; wire wrap; integer fd, other, c, d, i;
  counter dut(.clk(clk), .rst(rst), .en(en), .q(q), .wrap(wrap));
  always #5 clk = ~clk;
  initial begin
    #20 rst = 0;
"""
_FOOT = "    $finish;\n  end\nendmodule\n"
VERILOG_PROBES = {
    # a marker: Icarus's $fopenr/$fopenw, outside the $fopen pattern; in the folder and above it
    "marker": _HEAD + """    fd = $fopenr("marker"); if (fd != 0) $error("a marker of an earlier run");
    fd = $fopenr("../marker"); if (fd != 0) $error("a marker of an earlier run");
    fd = $fopenr("/tmp/marker"); if (fd != 0) $error("a marker of an earlier run");
    fd = $fopenw("marker"); $fclose(fd); fd = $fopenw("../marker"); $fclose(fd); fd = $fopenw("/tmp/marker"); $fclose(fd);
""" + _FOOT,
    # this design's text against the reference's, with the file tasks pasted by macros
    "text diff": "`define OPEN(f) $fopen(f, \"r\")\n`define GET(h) $fgetc(h)\n" + _HEAD + """    fd = `OPEN("design.sv"); other = `OPEN("../d0/design.sv");
    if (other == 0) other = `OPEN("../designs/0.sv");
    if (fd != 0 && other != 0) for (i = 0; i < 4000; i = i + 1) begin
      c = `GET(fd); d = `GET(other); if (c != d) $error("differs from the reference's text");
    end
""" + _FOOT,
    # the first run's outputs recorded, the later runs compared with them
    "replay": _HEAD + """    fd = $fopen("../trace", "r");
    if (fd == 0) begin
      fd = $fopen("../trace", "w");
      for (i = 0; i < 30; i = i + 1) begin @(negedge clk); $fdisplay(fd, "%h %h", q, wrap); end
      $fclose(fd);
    end else
      for (i = 0; i < 30; i = i + 1) begin
        @(negedge clk); c = $fscanf(fd, "%h %h\\n", d, other);
        if (d !== q || other !== wrap) $error("differs from the first run's trace");
      end
""" + _FOOT,
    # a bench that fails every design, and writes its waveform over the reference's log
    "dumpfile over the reference's log": _HEAD + """    $dumpfile("../d0/sim.log"); $dumpvars(0, tb);
    #50 $error("every design fails");
""" + _FOOT,
    # a hierarchical name into the design, built by a macro (no `dut.` in the text)
    "macro-built hierarchical name": "`define H(a,b) a.b\n" + THOROUGH_BENCH.replace("if (q !== model)", "if (`H(dut, q) !== model)"),
}
#: The probes that reach a file (the macro-built name reads a port: a rule's matter, not a run's).
FILE_PROBES = sorted(set(VERILOG_PROBES) - {"macro-built hierarchical name"})
#: An honest bench that dumps its waveform (a plain name of its own folder): allowed.
DUMPING_BENCH = THOROUGH_BENCH.replace("$finish;", '$dumpfile("waves.vcd"); $dumpvars(0, tb); $finish;')

_COCOTB_HEAD = '''\
import dataclasses
import typing

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge

OPEN = {reach}


def tries(path, mode="r"):
    try:
        with OPEN(path, mode) as handle:
            return handle.read() if mode == "r" else True
    except Exception:
        return None


@cocotb.test()
async def probe(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.en.value = 1
    await FallingEdge(dut.clk)
    dut.rst.value = 0
'''
_COCOTB_BODIES = {
    "marker": '''\
    seen = [p for p in ("marker", "../marker", "/tmp/marker", "/work/marker") if tries(p) is not None]
    for p in ("marker", "../marker", "/tmp/marker"):
        tries(p, "w")
    assert not seen, f"a marker of an earlier run: {seen}"
''',
    "text diff": '''\
    mine = tries("/work/design.sv") or tries("design.sv") or tries("../design.sv")
    other = tries("/work/d0/design.sv") or tries("../d0/design.sv")
    assert mine is None or other is None or mine == other, "differs from the reference's text"
''',
    "replay": '''\
    trace = []
    for _ in range(30):
        await FallingEdge(dut.clk)
        trace.append(f"{int(dut.q.value)} {int(dut.wrap.value)}")
    recorded = tries("/tmp/trace") or tries("../trace") or tries("/work/trace")
    if recorded is None:
        for p in ("/tmp/trace", "../trace", "/work/trace"):
            with OPEN(p, "w") as handle:
                handle.write("\\n".join(trace))
    else:
        assert recorded == "\\n".join(trace), "differs from the first run's trace"
''',
}
_REACHES = {
    "dataclasses.sys": 'dataclasses.sys.modules["builtins"].open',
    "typing.sys": 'typing.sys.modules["builtins"].open',
    "getattr": 'getattr(getattr(getattr(dataclasses, "sys"), "modules")["builtins"], "open")',
}


#: An honest cocotb bench that uses every module the rules allow, cocotb's helpers and a failing
#: assertion's message: the guard refuses none of it.
COCOTB_WIDE = '''
import random
import math
import itertools
import functools
import operator
from collections import deque, namedtuple, Counter
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Optional

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Combine, FallingEdge, First, RisingEdge, Timer, with_timeout
from cocotb.types import LogicArray, Range
from cocotb.queue import Queue


class Mode(Enum):
    COUNT = auto()
    HOLD = auto()


@dataclass
class Step:
    en: int
    expected: list = field(default_factory=list)


@cocotb.test()
async def model_check(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.en.value = 0
    await ClockCycles(dut.clk, 2)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    q = 0
    hist = deque(maxlen=4)
    queue = Queue()
    for i in range(80):
        en = random.randint(0, 1)
        dut.en.value = en
        await Timer(1, unit="ns")
        assert int(dut.wrap.value) == int(en and q == 15), f"wrap {dut.wrap.value} q={q}"
        await with_timeout(FallingEdge(dut.clk), 100, "ns")
        if en:
            q = (q + 1) % 16
        hist.append(q)
        await queue.put(q)
        got = int(dut.q.value)
        v = LogicArray(got, Range(3, "downto", 0))
        dut._log.debug("q %s %s", v, Counter(hist))
        assert got == q, f"q={got} expected {q} (mode {Mode.COUNT.name}, {math.floor(1.5)}, {functools.reduce(operator.add, [1, 2])})"
    print("done", list(itertools.islice(hist, 2)))
'''


#: Every way out the guard refuses, each tried and caught: the bench passes only if none worked.
GUARD_PROBE = '''\
import dataclasses

import cocotb

sys = dataclasses.sys
os = sys.modules["os"]
b = sys.modules["builtins"]


def attempts():
    yield "open design", lambda: b.open("/work/design.sv").read()
    yield "open the process's memory", lambda: b.open("/proc/self/mem", "rb").read(1)
    yield "write a file", lambda: b.open("/work/x.txt", "w").write("x")
    yield "os.open", lambda: os.open("/etc/passwd", os.O_RDONLY)
    yield "os.system", lambda: os.system("true")
    yield "subprocess", lambda: sys.modules["subprocess"].run(["/bin/true"])
    yield "os.execv", lambda: os.execv("/bin/true", ["/bin/true"])
    yield "os.posix_spawn", lambda: os.posix_spawn("/bin/true", ["/bin/true"], {})
    yield "os.fork", lambda: os.fork()
    yield "os.kill", lambda: os.kill(os.getpid(), 0)
    yield "ctypes", lambda: b.__import__("ctypes")
    yield "socket", lambda: b.__import__("socket").socket()
    yield "an import outside the list", lambda: b.__import__("http.client")
    yield "os.remove", lambda: os.remove("/work/test_tb.py")
    yield "gc", lambda: sys.modules["gc"].get_objects() if "gc" in sys.modules else b.__import__("gc").get_objects()


@cocotb.test()
async def guarded(dut):
    worked = []
    for name, attempt in attempts():
        try:
            attempt()
            worked.append(name)
        except BaseException as exc:  # noqa: BLE001
            dut._log.info("%s: %s", name, exc)
    assert not worked, worked
'''


def cocotb_probe(kind: str, reach: str = "dataclasses.sys") -> str:
    return _COCOTB_HEAD.format(reach=_REACHES[reach]) + _COCOTB_BODIES[kind]


def kill_rate_zero(runs: list[DesignRun]) -> bool:
    """Nothing caught: a false alarm on the reference, or every mutant passed."""
    reference, *mutants = runs
    return not (reference.built and reference.passed) or all(m.passed for m in mutants if m.built)


@pytest.fixture(scope="module")
def verilog_task():
    posed = task_problem(counter_problem(), TESTBENCH)
    posed.extra["testbench"] = {"coverage": False, "sim_s": 3}
    return posed


@pytest.fixture(scope="module")
def cocotb_task():
    posed = task_problem(counter_problem(), TESTBENCH_COCOTB)
    posed.extra["testbench"] = {"sim_s": 10}
    return posed


@pytest.fixture(scope="module")
def flow(runner, verilog_task, cocotb_task):
    """Every probe and honest bench through the task's flow (the runner, seed 7)."""
    graded = {f"v:{name}": runner.run(verilog_task, {BENCH_FILE: text}, seed=7) for name, text in VERILOG_PROBES.items()}
    graded["v:thorough"] = runner.run(verilog_task, {BENCH_FILE: THOROUGH_BENCH}, seed=7)
    graded["v:dumping"] = runner.run(verilog_task, {BENCH_FILE: DUMPING_BENCH}, seed=7)
    for kind in _COCOTB_BODIES:
        for reach in _REACHES:
            graded[f"c:{kind}:{reach}"] = runner.run(cocotb_task, {COCOTB_FILE: cocotb_probe(kind, reach)}, seed=7)
    graded["c:thorough"] = runner.run(cocotb_task, {COCOTB_FILE: COCOTB_THOROUGH}, seed=7)
    return graded


@pytest.fixture(scope="module")
def direct(sandbox):
    """The probes run past the flow's readers: the sealed runs and the guard alone."""
    limits = Limits(wall_s=120)
    out = {f"v:{name}": run_verilog_designs(sandbox, VERILOG_PROBES[name], DESIGNS, sim_s=3, limits=limits, seed=5) for name in FILE_PROBES}
    out |= {f"c:{kind}": run_cocotb_designs(sandbox, cocotb_probe(kind), DESIGNS, "counter", sim_s=10, limits=limits, seed=5) for kind in _COCOTB_BODIES}
    out["c:guard"] = run_cocotb_designs(sandbox, GUARD_PROBE, DESIGNS[:1], "counter", sim_s=20, limits=limits, seed=5)
    out["c:wide"] = run_cocotb_designs(sandbox, COCOTB_WIDE, DESIGNS, "counter", sim_s=20, limits=limits, seed=5)
    return out


@pytest.mark.parametrize("name", sorted(VERILOG_PROBES))
def test_a_verilog_probe_is_reach_in_through_the_flow(flow, name):
    result = flow[f"v:{name}"]
    assert result.failure_class == REACH_IN and result.tests.total == 0 and not result.passed, (result.failure_class, result.reason)


def test_the_flow_names_what_each_verilog_probe_does(flow):
    assert "`$fopenr`: not one of the system tasks" in flow["v:marker"].reason
    assert "`$fopen`: not one of the system tasks" in flow["v:text diff"].reason
    assert '`$dumpfile` of "../d0/sim.log"' in flow["v:dumpfile over the reference's log"].reason
    assert "`dut.q`: a hierarchical name into the design" in flow["v:macro-built hierarchical name"].reason


@pytest.mark.parametrize("kind", sorted(_COCOTB_BODIES))
@pytest.mark.parametrize("reach", sorted(_REACHES))
def test_a_cocotb_probe_is_reach_in_through_the_flow(flow, kind, reach):
    result = flow[f"c:{kind}:{reach}"]
    assert result.failure_class == REACH_IN and result.tests.total == 0, (result.failure_class, result.reason)
    assert "leads to files, processes or the interpreter" in result.reason


@pytest.mark.parametrize("name", FILE_PROBES)
def test_a_verilog_probe_past_the_gate_catches_nothing_in_sealed_runs(direct, name):
    runs = direct[f"v:{name}"]
    assert kill_rate_zero(runs), runs


@pytest.mark.parametrize("kind", sorted(_COCOTB_BODIES))
def test_a_cocotb_probe_past_the_rules_catches_nothing_under_the_guard(direct, kind):
    runs = direct[f"c:{kind}"]
    assert kill_rate_zero(runs), runs
    # each open is refused: the probe sees nothing, or fails on the reference as on every design
    assert runs[0].passed or "cvdp-gym: a test bench may not open" in runs[0].why, runs[0]


@pytest.mark.parametrize("name", ["v:thorough", "v:dumping", "c:thorough"])
def test_an_honest_thorough_bench_keeps_kill_rate_one(flow, name):
    result = flow[name]
    assert result.passed and result.official["kill_rate"] == 1.0 and result.tests.total >= 4, (result.reason, result.official)


@pytest.mark.parametrize("line", [
    'x = dataclasses.sys.modules["builtins"].open', "x = typing.sys", "x = enum.sys", 'x = getattr(enum, "sys")',
    "x = dataclasses.inspect.getsource", "x = (lambda: (yield)).__call__().gi_frame.f_globals",
])
def test_the_rules_name_each_way_to_a_module_by_attribute(line):
    found = cocotb_bench_findings(f"import dataclasses\nimport enum\nimport typing\n{line}\n", ports=["clk", "os"])
    assert found and all(f.startswith("test_tb.py:4:") for f in found), found


def test_an_honest_benchs_own_attributes_and_a_port_of_such_a_name_are_no_finding():
    bench = COCOTB_THOROUGH.replace("self.q = 0", "self.q = 0\n        self.input = self.open = 1") + (
        "\n\n@cocotb.test()\nasync def by_port(dut):\n    dut.os.value = 1\n"
    )
    assert cocotb_bench_findings(bench, ports=["clk", "rst", "en", "q", "wrap", "os"]) == []


def test_the_guard_refuses_files_processes_sockets_ctypes_and_imports(direct):
    (run,) = direct["c:guard"]
    assert run.built and run.passed, run.why  # each attempt raised: none of them worked


def test_an_honest_cocotb_bench_using_all_it_may_runs_unhindered_under_the_guard(direct):
    assert cocotb_bench_findings(COCOTB_WIDE, ports=["clk", "rst", "en", "q", "wrap"]) == []
    reference, *mutants = direct["c:wide"]
    assert reference.built and reference.passed, reference
    assert all(m.built and not m.passed and m.why.startswith("model_check: AssertionError") for m in mutants), mutants


def test_the_reference_runs_first_and_again_at_a_drawn_position():
    orders = {tuple(run_order(9, seed)) for seed in range(40)}
    assert all(o[0] == 0 and o.count(0) == 2 and sorted(o[1:]) == [0, *range(1, 9)] and o[1] != 0 for o in orders)
    assert len({o.index(0, 1) for o in orders}) > 3  # the second position varies with the seed
    assert run_order(9, 3) == run_order(9, 3) and run_order(1, 3) == [0]
    passed, failed = DesignRun(True, True), DesignRun(True, False, "ERROR: seen before")
    assert reference_verdict(passed, passed) == passed
    changed = reference_verdict(passed, failed)
    assert not changed.passed and "changed when it ran again" in changed.why and "seen before" in changed.why
    assert reference_verdict(failed, passed) == failed
