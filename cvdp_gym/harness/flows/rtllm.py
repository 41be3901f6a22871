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
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cvdp_gym.data.problems import Problem
from cvdp_gym.harness.results import (
    BUILD_ERROR,
    TEST_FAILURE,
    TIMEOUT,
    HarnessResult,
    ServiceResult,
    TestCounts,
)
from cvdp_gym.harness.testbench import (
    fed_through_a_pipe,
    instrument,
    new_secret,
    read_log,
    run_script,
)
from cvdp_gym.sandbox.base import Limits, Sandbox

#: ``auto_run.py``'s limit on ``make sim``, and the open flows'.
AUTO_RUN_LIMIT_S, OPEN_LIMIT_S = 8.0, 15.0
TIMESCALE_FILE = "cvdp_timescale.v"
TIMESCALE = "`timescale 1ns/1ns\n"
COMPILE = "iverilog -g2012 -o simv"
RULE_AUTO_RUN, RULE_OPEN = "auto_run", "open"


def auto_run_pass(output: str, seconds: float | None) -> bool:
    """``auto_run.py``: ended within its limit, and "Pass" or "pass" in the output."""
    return seconds is not None and seconds < AUTO_RUN_LIMIT_S and ("Pass" in output or "pass" in output)


def open_pass(output: str) -> bool:
    """TuRTLe's rule: "Passed" in the output and no "ERROR" (a pass printed before its 15 s
    limit counts even if the run was cut there)."""
    return "Passed" in output and "ERROR" not in output


def _script(design: str) -> str:
    return (
        f"{COMPILE} {TIMESCALE_FILE} {design} testbench.v > compile.log 2>&1\n"
        "rm -f testbench.v\n"
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
    ) -> HarnessResult:
        target = problem.targets[0]
        secret = new_secret()
        work = {name: text for name, text in problem.harness.items() if name != "testbench.v"}
        work.update({
            TIMESCALE_FILE: TIMESCALE,
            target: files.get(target, ""),
            "testbench.v": instrument(problem.harness.get("testbench.v", ""), secret),
        })
        run = run_script(
            sandbox, problem.toolchain, _script(target), work, ("compile.log", "output.txt", "stderr.txt", "status.txt"),
            limits=limits, keep_dir=keep_dir,
        )
        compiled = "status.txt" in run.left
        seconds = _seconds(run.logs["status.txt"]) if compiled else None
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
        if run.outcome.timed_out:
            failure, reason, passed = TIMEOUT, "killed after the sandbox's wall-time limit", False
        log = run.logs["compile.log"] + output.official + run.logs["stderr.txt"]
        service = ServiceResult(
            name=self.name, passed=passed, failure_class=failure, reason=reason, returncode=run.outcome.returncode,
            tests=TestCounts(1, int(passed), int(not passed)), wall_s=run.outcome.wall_s, log_tail=log[-4000:],
        )
        return HarnessResult(
            problem_id=problem.id, passed=passed, failure_class=failure, reason=reason, services=[service],
            wall_s=run.outcome.wall_s, official=official, defect=problem.defect,
        )


def _seconds(status: str) -> float | None:
    """The simulation's duration from ``status.txt`` (None when it was killed by its limit)."""
    parts = status.split()
    try:
        code, start, end = int(parts[0]), float(parts[1]), float(parts[2])
    except (IndexError, ValueError):
        return None
    return None if code == 124 else max(0.0, end - start)


def _first_error(log: str) -> str:
    return next((line.strip() for line in log.splitlines() if "error" in line.lower()), "")


def _summary(lines: list[str]) -> str:
    """The test bench's last words on a failing run (bounded)."""
    text = " / ".join(line.strip() for line in lines if line.strip())
    return text[-300:]
