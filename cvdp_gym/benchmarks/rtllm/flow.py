"""RTLLM's flow on Icarus: ``auto_run.py``'s steps and pass rule, the open flows' rule beside it.

RTLLM's own flow runs Synopsys VCS (``make vcs``: ``vcs -sverilog +v2k
-timescale=1ns/1ns <design>.v testbench.v``; ``make sim > output.txt``) and
``auto_run.py`` counts a design compiled when ``simv`` exists and passed when the
simulation ended within its 8 s limit and its output contains "Pass" or "pass". Here, as
in the open-source flows, Icarus stands in for VCS::

    iverilog -g2012 -o simv timescale.v <design>.v testbench.v     # timescale.v: `timescale 1ns/1ns
    vvp -n simv > output.txt

(``timescale.v`` gives files without a directive VCS's ``-timescale=1ns/1ns``; the design's
data files are in the working folder, as the makefile's run has them.) The simulator is the
root's Icarus 13: its 47 of 50 v2.0 references pass where Icarus 12's 46 do (12 rejects
``asyn_fifo``'s ``break``). Both rules are read from every run: ``auto_run`` ("Pass" or
"pass" anywhere in the output, within 8 s) and ``open``, TuRTLe's (HPAI-BSC/TuRTLe,
``eval_rtllm``: "Passed" and no "ERROR" in the output; a run cut at 15 s keeps a pass it
printed). ``official`` holds both over the whole output, which the answer can print into;
the verdict applies the problem's rule (``Problem.extra["rule"]``, ``auto_run`` by default)
to the test bench's own lines, and needs the simulation to end within the rule's limit.
The run renames the test bench's modules, scopes and file, and a design that names them (or
opens its data files) is ``reach_in`` (``testbench.isolated_run``). RTLLM's test benches
compare with ``!=`` in an ``if``, which takes an X output as equal: beside each renamed run an
X guard (:mod:`cvdp_gym.benchmarks.rtllm.xguard`) fails an output that is X or Z at the end of
a time step (every input known) where a copy of the reference, fed the same inputs in the same
simulation, has that bit known. Where the copy cannot be placed or built, a fallback guard fails
an output that never has a known bit while the inputs are known, where the reference drives it
under the same test bench (the reference's run, once per problem in a process). Where no guard
builds beside an answer that builds alone, a pass of its test bench is ``undecided``, never a
pass. The guard's lines never reach either reading.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cvdp_gym.benchmarks.rtllm import xguard
from cvdp_gym.harness.flows.flow_kit import (
    BUILD_ERROR,
    CALLS_FILE,
    RESOURCE_LIMIT,
    TEST_FAILURE,
    TIMEOUT,
    UNDECIDED,
    HarnessResult,
    Isolated,
    Limits,
    Problem,
    Sandbox,
    ServiceResult,
    TestCounts,
    calls_command,
    check,
    compiled_check,
    fed_through_a_pipe,
    instrument,
    isolate,
    isolated_run,
    new_secret,
    read_log,
    run_script,
)

#: ``auto_run.py``'s limit on ``make sim``, and the open flows'.
AUTO_RUN_LIMIT_S, OPEN_LIMIT_S = 8.0, 15.0
TIMESCALE_FILE = "cvdp_timescale.v"
TIMESCALE = "`timescale 1ns/1ns\n"
COMPILE = "iverilog -g2012 -o simv"
RULE_AUTO_RUN, RULE_OPEN = "auto_run", "open"
TESTBENCH = "testbench.v"


def auto_run_pass(output: str, seconds: float | None) -> bool:
    """``auto_run.py``: ended within its limit, and "Pass" or "pass" in the output."""
    return seconds is not None and seconds < AUTO_RUN_LIMIT_S and ("Pass" in output or "pass" in output)


def open_pass(output: str) -> bool:
    """TuRTLe's rule: "Passed" in the output and no "ERROR" (a pass printed before its 15 s
    limit counts even if the run was cut there)."""
    return "Passed" in output and "ERROR" not in output


def _script(design: str, testbench: str, guard: str = "") -> str:
    return (
        f"{COMPILE} {TIMESCALE_FILE} {design} {testbench}{' ' + guard if guard else ''} > compile.log 2>&1\n"
        f"{calls_command('simv')}\n"
        f"rm -f {testbench}\n"
        "if [ -f simv ]; then\n"
        "start=$(date +%s.%N)\n"
        + fed_through_a_pipe("simv", f"timeout {OPEN_LIMIT_S:.0f} vvp -n /dev/stdin > output.txt 2> stderr.txt")
        + "end=$(date +%s.%N)\n"
        'echo "$status $start $end" > status.txt\n'
        "fi\n"
    )


class RtllmFlow:
    """Compiles and simulates an RTLLM design with its test bench, and reads both rules."""

    name = "rtllm"

    def run(
        self, sandbox: Sandbox, problem: Problem, files: Mapping[str, str], *, limits: Limits, keep_dir: Path | None = None,
        seed: int | None = None,
    ) -> HarnessResult:
        target = problem.targets[0]
        answer = files.get(target, "")
        sources = {TESTBENCH: problem.harness.get(TESTBENCH, "")}

        def driven() -> frozenset[str] | None:  # asked only where the fallback guard flagged an answer that passed
            return self._driven(sandbox, problem, target, limits)

        def once(isolated: Isolated | None, keep: Path | None) -> HarnessResult:
            return self._run(sandbox, problem, target, answer, isolated, limits=limits, keep_dir=keep, driven=driven)[0]

        return isolated_run(check({target: answer}, protected=[*problem.harness, CALLS_FILE]), sources, once, keep_dir)

    def _driven(self, sandbox: Sandbox, problem: Problem, target: str, limits: Limits) -> frozenset[str] | None:
        """The outputs the reference drives under this test bench (known while the inputs are):
        the ones an answer may not leave X under the fallback guard (``xguard.py``: where the
        reference's copy cannot be placed beside the answer). Run once per problem and test
        bench in a process, with the fallback guard; None without a reference, or where its
        run says nothing (cut short, or no guard ran beside it: it does not build): then every
        output counts."""
        reference = (problem.reference or {}).get(target)
        if not reference:
            return None
        key = hashlib.sha256(f"{problem.id}\0{problem.harness.get(TESTBENCH, '')}\0{reference}".encode()).hexdigest()
        if key not in _DRIVEN:
            isolated = isolate({TESTBENCH: problem.harness.get(TESTBENCH, "")})
            result, never_known, outputs = self._run(
                sandbox, problem, target, reference, isolated, limits=limits, keep_dir=None, driven=frozenset, checked=False,
            )
            if result.failure_class in (TIMEOUT, RESOURCE_LIMIT) or not outputs:
                return None
            _DRIVEN[key] = frozenset(outputs) - frozenset(never_known)
        return _DRIVEN[key]

    def _run(
        self, sandbox: Sandbox, problem: Problem, target: str, answer: str, isolated: Isolated | None, *,
        limits: Limits, keep_dir: Path | None, driven: Callable[[], frozenset[str] | None], checked: bool = True,
    ) -> tuple[HarnessResult, list[str], tuple[str, ...]]:
        """One run, as the makefile runs it: with the run's names (``isolated``), or untouched;
        also the outputs the X guard flagged, and those it watched. ``checked``: the guard
        judges the answer against the reference's copy where it can be placed (False: the
        fallback guard, as ``_driven`` runs the reference). ``driven()``: the outputs the
        fallback guard may fail (None: all), asked only when the test bench passed an answer
        the fallback guard flagged (it may cost a run of the reference)."""
        secret = new_secret()
        testbench, text, restore = TESTBENCH, problem.harness.get(TESTBENCH, ""), str
        if isolated is not None:
            testbench, restore = isolated.file(TESTBENCH), isolated.restore
            text = isolated.files[testbench]
        work = {name: data for name, data in problem.harness.items() if name != TESTBENCH}
        work.update({TIMESCALE_FILE: TIMESCALE, target: answer, testbench: instrument(text, secret)})
        guard = _guard(problem, target, answer, isolated, checked=checked)
        if guard is not None:
            work[guard.file] = guard.text
        logs = ("compile.log", "output.txt", "stderr.txt", "status.txt", CALLS_FILE)
        run = run_script(
            sandbox, problem.toolchain, _script(target, testbench, guard.file if guard else ""), work, logs,
            limits=limits, keep_dir=keep_dir,
        )
        guard_broke = False
        while guard is not None and "status.txt" not in run.left and guard.file in run.logs["compile.log"]:
            # It did not build with the guard beside it (a reference that does not compile, or an
            # answer that does not): then the fallback guard, then none. The answer's own errors
            # come from a run without one; an answer that builds alone was never judged by one.
            del work[guard.file]
            guard = _guard(problem, target, answer, isolated, checked=False) if guard.checked else None
            guard_broke = guard is None
            if guard is not None:
                work[guard.file] = guard.text
            run = run_script(
                sandbox, problem.toolchain, _script(target, testbench, guard.file if guard else ""), work, logs,
                limits=limits, keep_dir=keep_dir,
            )
        run.logs.update({name: restore(log) for name, log in run.logs.items()})
        compiled = "status.txt" in run.left
        seconds = _seconds(run.logs["status.txt"]) if compiled else None
        flagged: list[str] = []
        if guard is not None:
            run.logs["output.txt"], flagged = xguard.split(run.logs["output.txt"], guard.marker)
        output = read_log(run.logs["output.txt"], secret)
        trusted = "\n".join(output.trusted)
        rule = str(problem.extra.get("rule") or RULE_AUTO_RUN)
        limit = OPEN_LIMIT_S if rule == RULE_OPEN else AUTO_RUN_LIMIT_S
        ended = seconds is not None and seconds < limit
        passed = compiled and ended and (open_pass(trusted) if rule == RULE_OPEN else auto_run_pass(trusted, seconds))
        official = {
            "compiled": compiled,
            "auto_run": compiled and auto_run_pass(output.official, seconds),
            "open": compiled and open_pass(output.official),
            "seconds": seconds,
            "rule": rule,
        }
        if not compiled:
            failure, reason = BUILD_ERROR, _first_error(run.logs["compile.log"]) or "does not compile"
        elif not ended:
            failure, reason = TIMEOUT, "the simulation did not end within the limit"
        elif passed:
            failure, reason = None, "the test bench reported a pass"
        else:
            failure, reason = TEST_FAILURE, _summary(output.trusted) or "the test bench reported no pass"
        if guard is not None and guard.checked:
            left_x = flagged
        else:
            watched = driven() if passed and flagged else frozenset()
            left_x = [name for name in flagged if watched is None or name in watched]
        if passed and left_x:
            passed, failure = False, TEST_FAILURE
            reason = (
                f"output {', '.join(left_x[:4])} was X or Z where the reference's copy, fed the same inputs, was known "
                "(judged at the end of each time step with every input known); the test bench's comparisons cannot see an X"
                if guard is not None and guard.checked else
                f"output {', '.join(left_x[:4])} never had a known bit (all X or Z) while the inputs were known, "
                "where the reference drives it; the test bench's comparisons cannot see an X"
            )
        if passed and guard_broke:  # a pass needs the guard's word
            passed, failure = False, UNDECIDED
            reason = "the test bench passed it, but the X guard could not be built beside it, so its outputs were not checked for X"
        signal = _signal(run.logs["status.txt"])
        if signal:  # cut short, never a pass: whatever the test bench printed before the cut
            failure, reason, passed = RESOURCE_LIMIT, f"the simulation was killed by signal {signal}", False
        if run.outcome.timed_out:
            failure, reason, passed = TIMEOUT, "killed after the sandbox's wall-time limit", False
        log = run.logs["compile.log"] + output.official + run.logs["stderr.txt"]
        service = ServiceResult(
            name=self.name, passed=passed, failure_class=failure, reason=reason, returncode=run.outcome.returncode,
            tests=TestCounts(1, int(passed), int(not passed)), wall_s=run.outcome.wall_s, log_tail=log[-4000:],
        )
        result = HarnessResult(
            problem_id=problem.id, passed=passed, failure_class=failure, reason=reason, services=[service],
            wall_s=run.outcome.wall_s, official=official, defect=problem.defect,
        )
        result = compiled_check(result, run.logs.get(CALLS_FILE, ""), [target])
        return result, flagged, tuple(name for name, _ in guard.outputs) if guard is not None else ()


#: The outputs each problem's reference drives (``RtllmFlow._driven``), by problem and texts.
_DRIVEN: dict[str, frozenset[str]] = {}


@dataclass(frozen=True)
class _RunGuard:
    """The X guard of one isolated run (``xguard.py``): its file, text and line marker, the
    outputs it watches, and whether it judges them against the reference's copy."""

    file: str
    text: str
    marker: str
    outputs: tuple[tuple[str, int], ...]
    checked: bool


def _guard(problem: Problem, target: str, answer: str, isolated: Isolated | None, *, checked: bool = True) -> _RunGuard | None:
    """The X guard for an isolated run (None untouched, or where it cannot be placed);
    ``checked``: with the reference's copy where it can be placed."""
    if isolated is None:
        return None
    top = str(problem.extra.get("module") or Path(target).stem)
    reference = (problem.reference or {}).get(target) if checked else None
    found = xguard.plan(problem.harness.get(TESTBENCH, ""), answer, top, reference)
    if found is None:
        return None
    tag = secrets.token_hex(8)
    scope = isolated.module(found.scope)
    renamed = isolated.module_prefix + found.instance
    instance = renamed if renamed in isolated.files[isolated.file(TESTBENCH)] else found.instance
    marker = f"@@cvdp-xguard-{tag}@@"
    text = found.source(f"cvdp{tag}_guard", scope, instance, marker)
    return _RunGuard(f"cvdp{tag}_guard.v", text, marker, found.outputs, found.copy is not None)


def _seconds(status: str) -> float | None:
    """The simulation's duration from ``status.txt`` (None when it was killed by its limit)."""
    parts = status.split()
    try:
        code, start, end = int(parts[0]), float(parts[1]), float(parts[2])
    except (IndexError, ValueError):
        return None
    return None if code == 124 else max(0.0, end - start)


def _signal(status: str) -> int:
    """The signal that ended the simulation, from ``status.txt`` (0: it exited on its own or
    hit its own time limit)."""
    code = status.split()[0] if status.split() else ""
    return int(code) - 128 if code.isdigit() and int(code) > 128 else 0


def _first_error(log: str) -> str:
    return next((line.strip() for line in log.splitlines() if "error" in line.lower()), "")


def _summary(lines: list[str]) -> str:
    """The test bench's last words on a failing run (bounded)."""
    text = " / ".join(line.strip() for line in lines if line.strip())
    return text[-300:]


#: This plug-in's flows (:mod:`cvdp_gym.plugins`).
FLOWS = (RtllmFlow(),)
