"""VerilogEval v2's flow: its ``Makefile`` commands, and ``scripts/sv-iv-analyze``'s classes.

One sample is compiled and run as ``Makefile.in`` does, on Icarus 12::

    iverilog -Wall -Winfloop -Wno-timescale -g2012 -s tb -o X answer.sv test.sv ref.sv  &> log
    timeout 30 ./X  &>> log            # then "TIMEOUT" appended when it timed out

and the log is classified as ``sv-iv-analyze`` classifies it, line by line, first match
winning: ``S`` syntax error, ``e`` explicit cast needed, ``0`` zero-width constant, ``n``
an always block without sensitivities (a *warning* it fails), ``w`` a wire assigned in a
procedural block, ``m`` unknown module, ``c`` ``clk`` unbound, ``T`` timeout; after the
scan ``p`` an unbound wire/reg, ``C`` any other line with "error", ``.`` (pass) only on
``Mismatches: 0 in N samples``; otherwise ``r`` (mismatches, and the answer has ``posedge
reset``...) or ``R``. ``official`` holds that class over the whole log; the verdict is the
same rule over the test bench's own lines (:mod:`cvdp_gym.harness.testbench`), where
mismatch counts come only from the test bench, and a pass needs positive evidence: the
test bench's ``Mismatches: 0 in N samples`` with N > 0. ``Mismatches: 0 in 0 samples``
(what a simulation ended at time 0 prints) passes the script and is ``R``/``r`` here, as is a
log without the test bench's line; the reason says which. (The reference's own count is
not required: it is known only by simulating the reference, one more run per problem.)
Partial credit: ``tests`` counts the
samples that matched (``1 − mismatches / samples`` of them). The run renames the test
bench's and reference's modules, scopes and files (``-s`` the renamed ``tb``), and an answer
that names them is ``reach_in`` (``testbench.isolated_run``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cvdp_gym.benchmarks.verilog_eval_v2.data import PROVIDED
from cvdp_gym.harness.flows.flow_kit import (
    BUILD_ERROR,
    CALLS_FILE,
    RESOURCE_LIMIT,
    TEST_FAILURE,
    TIMEOUT,
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
    isolated_run,
    new_secret,
    read_log,
    run_script,
)

INTERFACE_ERROR = "interface_error"
#: The simulation's own time limit (``timeout 30 ./X``).
SIM_TIMEOUT_S = 30
COMPILE = "iverilog -Wall -Winfloop -Wno-timescale -g2012"
#: The test bench's root module (``-s tb``).
ROOT = "tb"
#: ``sv-iv-analyze``'s classes and what each means.
LABELS = {
    "S": "syntax error",
    "e": "an assignment needs an explicit cast",
    "0": "a sized constant of zero width",
    "n": "an always block with no sensitivities (a warning VerilogEval counts as a failure)",
    "w": "a wire assigned in a procedural block",
    "m": "an unknown module type",
    "c": "clk cannot be bound",
    "T": "timeout",
    "p": "a wire/reg that cannot be bound",
    "C": "a compile error",
    "r": "mismatches (the answer has a reset edge in a sensitivity list)",
    "R": "mismatches",
    ".": "pass",
}
#: Each class's failure class here; ``m``/``c`` (and port errors) are interface failures.
FAILURE_CLASSES = {
    "S": BUILD_ERROR, "e": BUILD_ERROR, "0": BUILD_ERROR, "n": BUILD_ERROR, "w": BUILD_ERROR,
    "m": INTERFACE_ERROR, "c": INTERFACE_ERROR, "T": TIMEOUT, "p": BUILD_ERROR, "C": BUILD_ERROR,
    "r": TEST_FAILURE, "R": TEST_FAILURE,
}
_MISMATCHES = re.compile(r"^Mismatches: (\d+) in (\d+) samples$")
_PORT_ERROR = re.compile(r"is not a port of|port .* not found|Unknown module type: TopModule")


@dataclass
class Analysis:
    """One reading of a log: the class, the mismatches (and samples) the test bench reported."""

    cls: str
    mismatches: int = 0
    samples: int | None = None
    line: str = ""  # the line that decided a failure class (for the reason)

    @property
    def passed(self) -> bool:
        return self.cls == "."


def analyze(
    lines: Iterable[str], verilog: str, *, counts_from: Iterable[str] | None = None, need_samples: bool = False,
) -> Analysis:
    """``sv-iv-analyze``'s class of a log's ``lines`` for the answer ``verilog``.

    ``counts_from``: when given, ``Mismatches:`` lines are taken only from these (the test
    bench's own lines), never from ``lines``; every other check reads ``lines`` as the
    script does (an answer's own output can only make it fail those). ``need_samples``: a
    pass needs positive evidence, a ``Mismatches: 0 in M samples`` line with M > 0 (the
    verdict's reading; the script's own passes ``Mismatches: 0 in 0 samples``); without
    one the class is ``r``/``R`` and ``line`` says why.
    """
    found = Analysis("?")
    error_c = error_p = no_mismatch = False
    first_unbound = ""
    for line in lines:
        if "syntax error" in line:
            return Analysis("S", line=line)
        if "error" in line and not error_c:
            error_c, found.line = True, line
        for needle, cls in _FIRST_MATCH:
            if needle in line:
                return Analysis(cls, line=line)
        if "Unable to bind wire/reg" in line and not error_p:
            error_p, first_unbound = True, line
        if "Unable to bind wire/reg/memory `clk'" in line:
            return Analysis("c", line=line)
        if "TIMEOUT" in line:
            return Analysis("T", line=line)
        if counts_from is None:
            no_mismatch = _count(line, found, need_samples) or no_mismatch
    for line in counts_from or ():
        no_mismatch = _count(line, found, need_samples) or no_mismatch
    if error_p:
        return Analysis("p", line=first_unbound)
    if error_c:
        return Analysis("C", line=found.line)
    if no_mismatch:
        return Analysis(".", found.mismatches, found.samples)
    why = ""
    if need_samples and found.samples is None:
        why = "no pass: the test bench printed no `Mismatches: N in M samples` line"
    elif need_samples and found.samples == 0 and not found.mismatches:
        why = "no pass: the test bench checked 0 samples (`Mismatches: 0 in 0 samples`), and a pass needs at least one"
    for text in verilog.splitlines():
        if "posedge reset" in text or "negedge reset" in text or "posedge r)" in text:
            return Analysis("r", found.mismatches, found.samples, line=why)
    return Analysis("R", found.mismatches, found.samples, line=why)


#: The checks of the scan that end it at once, in the script's order (after "syntax error"
#: and the "error" flag, before the bind and timeout checks).
_FIRST_MATCH = (
    ("error: This assignment requires an explicit cast", "e"),
    ("error: Sized numeric constant must have a size greater than zero", "0"),
    ("warning: always_comb process has no sensitivities", "n"),
    ("found no sensitivities so it will never trigger", "n"),
    ("is declared here as wire", "w"),
    ("Unknown module type", "m"),
)


def _count(line: str, found: Analysis, need_samples: bool = False) -> bool:
    """Record a ``Mismatches: N in M samples`` line; True when N is 0 (and, with
    ``need_samples``, M is not)."""
    match = _MISMATCHES.match(line.rstrip("\n"))
    if not match:
        return False
    mismatches, samples = int(match.group(1)), int(match.group(2))
    found.samples = samples
    if mismatches == 0:
        return samples > 0 or not need_samples
    found.mismatches = mismatches
    return False


def _script(answer: str, test: str, ref: str, exe: str, root: str) -> str:
    """The flow's commands (``answer``: the answer's file, and any provided beside it); the test bench's copy (it holds the secret) and the compiled
    simulation are gone before the answer runs."""
    return (
        f"{COMPILE} -s {root} -o {exe} {answer} {test} {ref} > compile.log 2>&1\n"
        f"{calls_command(exe)}\n"
        f"rm -f {test} {ref}\n"
        f"if [ -f {exe} ]; then\n"
        + fed_through_a_pipe(exe, f"timeout {SIM_TIMEOUT_S} vvp /dev/stdin > sim.log 2>&1")
        + "if [ $status = 124 ]; then echo TIMEOUT > timeout.flag; elif [ $status -gt 128 ]; then echo $status > killed.flag; fi\n"
        "else\n"
        f"  echo \"timeout: failed to run command './{exe}': No such file or directory\" > sim.log\n"
        "fi\n"
    )


class VerilogEvalV2Flow:
    """Runs a VerilogEval v2 sample as its Makefile does and classifies it as its script does."""

    name = "verilog-eval-v2"
    logs = ("compile.log", "sim.log", "timeout.flag", CALLS_FILE)

    def run(
        self, sandbox: Sandbox, problem: Problem, files: Mapping[str, str], *, limits: Limits, keep_dir: Path | None = None,
        seed: int | None = None,
    ) -> HarnessResult:
        name = str(problem.extra.get("name") or problem.id)
        target = problem.targets[0]
        answer = files.get(target, "")
        test, ref = f"{name}_test.sv", f"{name}_ref.sv"
        sources = {test: problem.harness.get(test, ""), ref: problem.harness.get(ref, "")}
        provided = self.supplied(problem)

        def once(isolated: Isolated | None, keep: Path | None) -> HarnessResult:
            return self._run(sandbox, problem, target, answer, sources, isolated, provided=provided, limits=limits, keep_dir=keep)

        found = check({target: answer}, supplied=provided, protected=[*sources, *provided, CALLS_FILE])
        return isolated_run(found, sources, once, keep_dir)

    def supplied(self, problem: Problem) -> dict[str, str]:
        """The files the problem gives the answer, compiled beside it (ChipBench's shared modules
        and headers): the answer gate counts their definitions as given."""
        return {path: text for path, text in problem.harness.items() if path.endswith(PROVIDED)}

    def _run(
        self, sandbox: Sandbox, problem: Problem, target: str, answer: str, sources: Mapping[str, str],
        isolated: Isolated | None, *, provided: Mapping[str, str], limits: Limits, keep_dir: Path | None,
    ) -> HarnessResult:
        """One run, as the Makefile runs it: with the run's names (``isolated``), or untouched;
        ``provided`` compiled beside the answer, never renamed."""
        (test, test_text), (ref, ref_text) = sources.items()
        root, restore = ROOT, str
        if isolated is not None:
            (test, test_text), (ref, ref_text) = isolated.files.items()
            root, restore = isolated.module(ROOT), isolated.restore
        secret = new_secret()
        exe = f"{problem.extra.get('name') or problem.id}_sample01"
        work = {target: answer, **provided, test: instrument(test_text, secret), ref: ref_text}
        run = run_script(
            sandbox, problem.toolchain, _script(" ".join([target, *provided]), test, ref, exe, root), work, self.logs, limits=limits,
            keep_dir=keep_dir,
        )
        compile_log = restore(run.logs["compile.log"])
        sim = read_log(restore(run.logs["sim.log"]), secret)
        # A run the sandbox cut short never reached the flow's own `timeout 30`, which would have
        # ended it the same way (TIMEOUT).
        timed_out = "timeout.flag" in run.left or run.outcome.timed_out
        official_log = compile_log + sim.official + ("TIMEOUT\n" if timed_out else "")
        official = analyze(official_log.splitlines(), answer)
        trusted = analyze(official_log.splitlines(), answer, counts_from=sim.trusted, need_samples=True)
        killed = "killed.flag" in run.left  # by a signal (a file-size limit): it did not end on its own
        judged = result(self.name, problem, run.outcome, trusted, official, official_log, compile_log, killed=killed)
        return compiled_check(judged, run.logs.get(CALLS_FILE, ""), [target, *provided])


def result(
    flow: str, problem: Problem, outcome: object, trusted: Analysis, official: Analysis, log: str, compile_log: str,
    *, killed: bool = False,
) -> HarnessResult:
    """The ``HarnessResult`` of a VerilogEval run: the verdict from the trusted reading. A run
    cut short (the sandbox's limits, or ``killed``: the simulation ended by a signal) is never
    a pass, whatever the test bench printed before the cut."""
    wall_s = float(getattr(outcome, "wall_s", 0.0))
    if getattr(outcome, "timed_out", False) or getattr(outcome, "out_of_memory", False) or killed:
        why = (
            "the sandbox's wall-time limit" if getattr(outcome, "timed_out", False)
            else "the memory limit" if getattr(outcome, "out_of_memory", False)
            else "a signal (a file-size or memory limit)"
        )
        trusted = Analysis("T" if getattr(outcome, "timed_out", False) else "R", line=f"killed by {why}")
    failure = None if trusted.passed else FAILURE_CLASSES.get(trusted.cls, TEST_FAILURE)
    if (getattr(outcome, "out_of_memory", False) or killed) and not getattr(outcome, "timed_out", False):
        failure = RESOURCE_LIMIT
    if trusted.cls == "C" and _PORT_ERROR.search(trusted.line):
        failure = INTERFACE_ERROR
    samples = trusted.samples or 0
    tests = TestCounts(samples, samples - trusted.mismatches, trusted.mismatches) if samples else TestCounts(1, int(trusted.passed), int(not trusted.passed))
    reason = _reason(trusted, log)
    service = ServiceResult(
        name=flow, passed=trusted.passed, failure_class=failure, reason=reason,
        returncode=getattr(outcome, "returncode", None), tests=tests, wall_s=wall_s, log_tail=log[-4000:],
    )
    if compile_log.strip() and trusted.cls in FAILURE_CLASSES and FAILURE_CLASSES[trusted.cls] != TEST_FAILURE:
        service.log_tail = compile_log[-4000:]
    return HarnessResult(
        problem_id=problem.id, passed=trusted.passed, failure_class=failure, reason=reason, services=[service],
        wall_s=wall_s, official={
            "class": official.cls, "label": LABELS.get(official.cls, "?"), "passed": official.passed,
            "mismatches": official.mismatches, "samples": official.samples, "verdict_class": trusted.cls,
        },
        defect=problem.defect,
    )


def _reason(analysis: Analysis, log: str) -> str:
    label = f"{analysis.cls}: {LABELS.get(analysis.cls, '?')}"
    if analysis.cls in ("r", "R") and analysis.samples:
        hints = [line.strip() for line in log.splitlines() if line.startswith("Hint: Output") and "has no mismatches" not in line]
        detail = f"{analysis.mismatches} of {analysis.samples} samples mismatched"
        return f"{label}: {detail}" + (f"; {hints[0]}" if hints else "")
    if analysis.cls in ("r", "R"):
        return f"{label}: {analysis.line.strip() or 'the test bench reported no result'}"
    return f"{label}" + (f": {analysis.line.strip()[:300]}" if analysis.line.strip() else "")


#: This plug-in's flows (:mod:`cvdp_gym.plugins`).
FLOWS = (VerilogEvalV2Flow(),)
