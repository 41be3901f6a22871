"""A model's cocotb test bench run on the reference design and on mutants, in one sandbox run.

Contract: ``run_cocotb_designs(sandbox, bench_py, design_texts, top, sim_s=, limits=)`` returns
one :class:`~cvdp_gym.harness.bench_verdicts.DesignRun` per design (the reference first) and
never raises on what the bench or the designs hold. The Verilog bench's run
(:mod:`cvdp_gym.harness.flows.testbench_task`) is the model; here the bench is Python:

- ``/work/test_tb.py`` holds the bench, ``/work/d<i>/design.sv`` each design (same file and
  module names); a generated driver (``/work/cocotb_driver.py``), run by the toolchain's
  cocotb 2.0.1 Python, builds each design with cocotb's own Icarus runner
  (``get_runner("icarus").build``, ``-g2012``, default time scale 1ns/1ps so a
  ``Clock(dut.clk, 10, unit="ns")`` works on a design without `` `timescale``) and runs the
  bench on it (``.test(test_module="test_tb", ...)``), each step under ``timeout -s KILL sim_s``;
- the build step first compiles the bench's text (never runs it): a syntax error is a design
  that did not build, with the error as its reason, as a Verilog bench that does not compile;
- every design's run uses the same cocotb seed, so a bench drawing stimulus from ``random``
  drives every design alike;
- the reference runs first; a bench that does not pass it is not run on the mutants.

The verdict per design is read from cocotb's results file (JUnit XML), never from what the
log says: passed when it holds at least one test case and no ``failure`` or ``error``; a
bench with no test passes nothing.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import xml.etree.ElementTree as ElementTree
from pathlib import Path, PurePosixPath

from cvdp_gym.data.verification_tasks import COCOTB_FILE, DESIGN_FILE
from cvdp_gym.harness.bench_verdicts import KILLED_RC, DesignRun
from cvdp_gym.harness.testbench import run_script
from cvdp_gym.sandbox.base import Limits, Sandbox

__all__ = ["run_cocotb_designs"]

BENCH_PY = COCOTB_FILE
BENCH_MODULE = PurePosixPath(COCOTB_FILE).stem
DRIVER = "cocotb_driver.py"
RESULTS = "results.xml"
_WHY_CHARS = 300
_NO_TESTS = "the bench holds no cocotb test"
_ERROR_LINES = (
    re.compile(r"^[^\s:]+:\d+:.*\b(?:error|I give up)\b", re.I),
    re.compile(r"^[\w.]*(?:Error|Exception)\b:?"),
    re.compile(r"\berror\b", re.I),
)
#: Runs in the sandbox (``python cocotb_driver.py build|test TOP SEED`` in a design's folder).
_DRIVER = f'''\
"""Builds one design with cocotb's Icarus runner, or runs the bench on it (cvdp-gym)."""
import os
import sys
import xml.etree.ElementTree as ElementTree

step, top, seed = sys.argv[1], sys.argv[2], sys.argv[3]
here = os.getcwd()
build_dir = os.path.join(here, "sim_build")
bench = os.path.join(os.path.dirname(os.path.abspath(__file__)), "{BENCH_PY}")
if step == "build":
    try:
        with open(bench, encoding="utf-8", errors="replace") as handle:
            compile(handle.read(), "{BENCH_PY}", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        print(f"{BENCH_PY}:{{getattr(exc, 'lineno', '?')}}: {{type(exc).__name__}}: {{getattr(exc, 'msg', exc)}}", flush=True)
        sys.exit(3)
from cocotb_tools.runner import get_runner

runner = get_runner("icarus")
if step == "build":
    runner.build(
        sources=[os.path.join(here, "{DESIGN_FILE}")], hdl_toplevel=top, build_dir=build_dir, always=True,
        timescale=("1ns", "1ps"),
    )
    sys.exit(0)
results = os.path.join(here, "{RESULTS}")
runner.test(
    test_module="{BENCH_MODULE}", hdl_toplevel=top, hdl_toplevel_lang="verilog", build_dir=build_dir, test_dir=build_dir,
    results_xml=results, seed=seed,
)
# The status the shell script reads to stop after a failed reference; the verdict itself is
# read from the results file outside the sandbox.
cases = list(ElementTree.parse(results).getroot().iter("testcase"))
bad = [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
sys.exit(0 if cases and not bad else 1)
'''


def _script(count: int, *, python: str, top: str, sim_s: float, seed: int) -> str:
    """The shell script: each design in turn, the reference first, stopping when it fails."""
    folders = " ".join(f"d{i}" for i in range(count))
    run = f"timeout -s KILL {sim_s:g} {shlex.quote(python)} ../{DRIVER}"
    top = shlex.quote(top)
    return (
        "export PYTHONDONTWRITEBYTECODE=1\n"
        f"for d in {folders}; do ( cd $d; "
        f"{run} build {top} {seed} > build.log 2>&1; echo $? > build.rc; "
        f"if [ \"$(cat build.rc)\" = 0 ]; then {run} test {top} {seed} > sim.log 2>&1; echo $? > sim.rc; fi; "
        "rm -rf sim_build ); "
        "[ \"$(cat d0/sim.rc 2>/dev/null)\" = 0 ] || break; done"
    )


def run_cocotb_designs(
    sandbox: Sandbox, bench_py: str, design_texts: list[str], top: str, *, sim_s: float, limits: Limits,
    keep_dir: Path | None = None, seed: int = 1,
) -> list[DesignRun]:
    """The cocotb bench ``bench_py`` on each of ``design_texts`` (the reference first), whose
    top module ``top`` it drives; a design after a failed reference is not run (not built).
    ``seed``: cocotb's seed of Python's ``random``, the same for every design."""
    if not design_texts:
        return []
    env = sandbox.toolchain.env("cocotb2")
    python = str(env.sandbox_prefix / "bin" / "python")
    files = {BENCH_PY: bench_py, DRIVER: _DRIVER} | {f"d{i}/{DESIGN_FILE}": t for i, t in enumerate(design_texts)}
    names = ("build.rc", "build.log", "sim.rc", "sim.log", RESULTS)
    logs = [f"d{i}/{name}" for i in range(len(design_texts)) for name in names]
    wall = min(limits.wall_s, len(design_texts) * (2 * sim_s + 15.0))
    ran = run_script(
        sandbox, "icarus", _script(len(design_texts), python=python, top=top, sim_s=sim_s, seed=seed), files, logs,
        limits=dataclasses.replace(limits, wall_s=wall), keep_dir=keep_dir, sim_env=env,
    )
    out = ran.logs
    return [_verdict(*(out.get(f"d{i}/{name}", "") for name in names)) for i in range(len(design_texts))]


def _verdict(build_rc: str, build_log: str, sim_rc: str, sim_log: str, results: str) -> DesignRun:
    """What one design's run says, from its return codes, logs and cocotb's results file."""
    killed = {str(c) for c in KILLED_RC}
    if build_rc.strip() in killed:
        return DesignRun(False, False, "the build did not finish in its time limit")
    if not build_rc.strip():
        return DesignRun(False, False, "not run (the bench did not pass the reference, or the run stopped first)")
    if build_rc.strip() != "0":
        return DesignRun(False, False, _first_error(build_log) or f"the build exited with status {build_rc.strip()}")
    rc = sim_rc.strip()
    if rc in killed:
        return DesignRun(True, False, "did not finish in its time limit")
    if not rc:
        return DesignRun(True, False, "the bench did not run (the sandbox run stopped first)")
    if not results.strip():
        why = _first_error(sim_log) or f"status {rc}"
        return DesignRun(True, False, why if why.startswith(_NO_TESTS) else _cut(f"cocotb wrote no results file: {why}"))
    try:
        cases = list(ElementTree.fromstring(results).iter("testcase"))
    except ElementTree.ParseError as exc:
        return DesignRun(True, False, f"cocotb's results file is unreadable: {exc}")
    if not cases:
        return DesignRun(True, False, f"{_NO_TESTS} (no @cocotb.test() ran): it checks nothing")
    for case in cases:
        bad = case.find("failure")
        bad = bad if bad is not None else case.find("error")
        if bad is not None:
            kind, message = bad.get("error_type") or bad.get("type") or "", bad.get("error_msg") or bad.get("message") or ""
            first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")  # cocotb adds pytest's explanation
            detail = ": ".join(part for part in (kind, first) if part) or "failed"
            return DesignRun(True, False, _cut(f"{case.get('name') or 'test'}: {detail}"))
    if rc != "0":
        return DesignRun(True, False, f"the simulation exited with status {rc}")
    return DesignRun(True, True)


def _first_error(log: str) -> str:
    """The line of ``log`` that best says what went wrong, bounded: a compiler's
    ``file:line:`` error, else a Python exception's line, else any error line, else the last."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    if any("No tests were discovered" in ln for ln in lines):
        return f"{_NO_TESTS} (no @cocotb.test() function): it checks nothing"
    for pattern in _ERROR_LINES:
        found = next((ln for ln in lines if pattern.search(ln)), None)
        if found:
            return _cut(found)
    return _cut(lines[-1] if lines else "")


def _cut(text: str) -> str:
    return text if len(text) <= _WHY_CHARS else text[: _WHY_CHARS - 3] + "..."
