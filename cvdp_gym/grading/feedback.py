"""Feedback to a model from the staged grader's verdict, at three levels of detail.

- ``compile``: the verdict in one line, and on a build error the compiler's messages.
- ``interface`` (default): also, on an interface error, the missing and extra ports and
  the wrong directions (against the reference, when the dataset has one) and the ports
  the tests drive that the module lacks.
- ``tests``: also the names of the failing cocotb tests and their assertion messages.
  These come from the problem's hidden harness: a model that sees them can fit the tests
  rather than the specification, so an evaluation with ``tests`` feedback is not
  comparable to the official (one-shot) one.

A benchmark's own test bench (VerilogEval, RTLLM) reports no interface of its own: its
interface errors show the compiler's messages (a port the test bench connects that the
module lacks), and ``tests`` shows the mismatch counts and what the test bench printed
(VerilogEval's ``Hint:`` lines: which outputs mismatched and when first).

An answer graded against a reference design (the ``reference`` grader: training sets) is
told, from ``interface`` on, how its ports differ from the reference's, and where its
behaviour first differs: the first mismatching cycle of the simulation with the inputs of
the cycles that led there and, per output, the expected and the actual value; or, when
only the formal stage found a difference, the counterexample's inputs step by step. That
is what the specification already implies, never the reference's code (only port names and
values are shown). ``tests`` adds the mismatch count of each output.

A verification task's answer (a test bench, assertions: :mod:`cvdp_gym.tasks.posing`)
is told its flow's one-line verdict in every mode: a false alarm on the reference with the line
that raised it, how many of the seeded bugs it caught (never which, nor their code), a build
error with the tool's message, or what a bench may not do.

Every part is bounded; the whole text is at most ``max_chars`` characters.
"""

from __future__ import annotations

import re

from cvdp_gym.data.problems import REFERENCE_GRADER, Problem
from cvdp_gym.errors import ConfigError
from cvdp_gym.grading.interface import check_interface
from cvdp_gym.grading.result import FORMAT_ERROR, INTERFACE_ERROR, NOT_EQUIVALENT, GradeResult
from cvdp_gym.harness.results import (
    BUILD_ERROR,
    REACH_IN,
    RESOURCE_LIMIT,
    TEST_FAILURE,
    TIMEOUT,
    UNDECIDED,
    UNSUPPORTED,
    compile_errors,
)
from cvdp_gym.tasks.posing import is_task_problem

FEEDBACK_MODES = ("compile", "interface", "tests")
DEFAULT_FEEDBACK = "interface"
MAX_FEEDBACK_CHARS = 3000
#: Compiler lines and failing tests shown at most.
MAX_COMPILER_LINES = 12
MAX_FAILED_TESTS = 5
#: Reference grader: cycles (or formal steps) shown before a difference, and the longest value shown.
MAX_HISTORY_ROWS = 8
MAX_VALUE_CHARS = 40
_WORKSPACE_PREFIX = re.compile(r"(?<![\w/])/code/")


def feedback_text(result: GradeResult, problem: Problem, mode: str = DEFAULT_FEEDBACK, *, max_chars: int = MAX_FEEDBACK_CHARS) -> str:
    """What the grader tells the model about ``result`` in ``mode`` (see the module docstring)."""
    if mode not in FEEDBACK_MODES:
        raise ConfigError(f"unknown feedback mode {mode!r}; expected one of {FEEDBACK_MODES}")
    level = FEEDBACK_MODES.index(mode)
    if is_task_problem(problem):
        return _bounded("\n".join([_task_verdict(result, problem), _TASK_REQUEST[problem.extra.get("task", "")]]), max_chars)
    against_reference = problem.flow == REFERENCE_GRADER
    lines = [_verdict(result, against_reference)]
    if result.failure_class == BUILD_ERROR:
        lines += ["Compiler messages:", *compiler_lines(result)]
    elif result.failure_class == INTERFACE_ERROR and level >= 1:
        if against_reference:
            lines += [f"- {part.strip()[:300]}" for part in result.reason.split(";")[:MAX_COMPILER_LINES]]
        else:
            lines += compiler_lines(result) if problem.flow is not None else interface_lines(result, problem)
    elif result.failure_class in (TEST_FAILURE, TIMEOUT, RESOURCE_LIMIT) and result.syntax_ok and level >= 1:
        lines.append(
            "The module's ports match the specification." if against_reference
            else "The module's interface matches what the tests expect."
        )
        if against_reference:
            lines += reference_lines(result, counts=level >= 2)
        elif level >= 2:
            lines += test_lines(result)
    lines.append(_REQUEST)
    return _bounded("\n".join(lines), max_chars)


def _bounded(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 20].rstrip() + "\n[... truncated]"


_REQUEST = "Fix the design and answer again with the complete corrected file(s)."
_TASK_REQUEST = {
    "testbench": "Improve the test bench and answer again with the complete file.",
    "testbench-cocotb": "Improve the test bench and answer again with the complete file.",
    "assertion": "Improve the assertions and answer again with all of them.",
}


def _task_verdict(result: GradeResult, problem: Problem) -> str:
    """A verification task's verdict: the flow's reason, written for the model (no bug's code)."""
    what = "set of assertions" if problem.extra.get("task") == "assertion" else "test bench"
    if result.passed:
        return f"Your {what} holds on a correct design and catches every seeded bug."
    if result.failure_class == FORMAT_ERROR:
        return f"No code could be taken from the answer: {result.reason}. Put it in a fenced code block."
    if result.failure_class == BUILD_ERROR:
        return f"Your {what} does not build with the design: {result.reason[:600]}"
    return f"{result.reason[:600]}."


def _verdict(result: GradeResult, against_reference: bool = False) -> str:
    """One line every mode gives: how far the answer got."""
    cls = result.failure_class
    if result.passed:
        return "Every test passed."
    if cls == UNSUPPORTED:
        return f"The answer could not be graded: {result.reason[:300]}"
    if against_reference and cls == TEST_FAILURE:
        return "The design compiles, but it does not behave as specified."
    if against_reference and cls == INTERFACE_ERROR:
        return "The module or its ports do not match the specified interface."
    if cls == FORMAT_ERROR:
        return f"No code could be taken from the answer: {result.reason}. Put each file in a fenced code block."
    if cls == BUILD_ERROR:
        return "The design does not compile."
    if cls == INTERFACE_ERROR:
        return "The design compiles, but its module or ports do not match what the tests expect."
    if cls == TIMEOUT:
        return "The design compiles, but the simulation did not finish within the time limit."
    if cls == RESOURCE_LIMIT:
        return "The design compiles, but the simulation ran out of memory."
    if cls == REACH_IN:  # its own construct and line: nothing of the test bench's
        return f"The design reaches outside itself, which no answer may do: {result.reason[:300]}"
    if cls == NOT_EQUIVALENT:  # no detail: the tests passed, the rest would name the reference's behaviour
        return "The design passes the tests, but it does not behave as specified in cases they do not check."
    if cls == UNDECIDED:  # no detail: it would name the reference's registers
        return "The design compiles and no difference was found, but the checks could not decide that it is correct."
    return "The design compiles, but it fails the tests."


def compiler_lines(result: GradeResult) -> list[str]:
    """The compiler's diagnostics (paths relative to the workspace), bounded."""
    found = compile_errors(result.log_tail, MAX_COMPILER_LINES) or [result.reason]
    return [_WORKSPACE_PREFIX.sub("", line)[:300] for line in found]


def interface_lines(result: GradeResult, problem: Problem) -> list[str]:
    """Missing and extra ports, wrong directions, and ports the tests drive that are absent."""
    verdict = check_interface(problem, result.files) if result.files else None
    if verdict is None or verdict.ok:
        return [_WORKSPACE_PREFIX.sub("", result.reason)[:500]]
    top = verdict.top or "the top module"
    if verdict.detail.startswith("module "):
        return [f"{_WORKSPACE_PREFIX.sub('', verdict.detail)[:500]}; the tests instantiate {top}."]
    lines = []
    if verdict.missing_ports:
        lines.append(f"Missing ports of {top}: {', '.join(verdict.missing_ports)}")
    if verdict.extra_ports:
        lines.append(f"Ports {top} declares that are not expected: {', '.join(verdict.extra_ports)}")
    if verdict.direction_mismatch:
        lines.append(f"Wrong port directions: {', '.join(verdict.direction_mismatch)}")
    if verdict.untouchable:
        lines.append(f"The tests drive {', '.join(verdict.untouchable)}, which {top} does not declare")
    return lines


def test_lines(result: GradeResult) -> list[str]:
    """Test counts, and each failing test with its assertion message (bounded); for a
    benchmark's own test bench, the mismatches and its ``Hint:`` lines."""
    tests = result.tests
    if result.official:
        hints = [line.strip() for line in result.log_tail.splitlines() if line.startswith("Hint:")]
        counts = f"{tests.failed} of {tests.total} samples mismatched." if tests.total > 1 else result.reason[:300]
        return [counts, *(h[:300] for h in hints[:MAX_FAILED_TESTS] if "has no mismatches" not in h)]
    lines = [f"{tests.failed} of {tests.total} tests failed." if tests.total else f"The tests failed: {result.reason}"]
    for failure in result.failures[:MAX_FAILED_TESTS]:
        message = failure.get("message", "").strip().splitlines()
        lines.append(f"- {failure.get('test', '?')}: {message[0][:300] if message else '(no message)'}")
    hidden = len(result.failures) - MAX_FAILED_TESTS
    if hidden > 0:
        lines.append(f"- ... and {hidden} more")
    return lines


def reference_lines(result: GradeResult, *, counts: bool = False) -> list[str]:
    """Where an answer first behaves differently from the reference design: the simulation's
    first mismatch, else the formal counterexample (port names and values only)."""
    official = result.official or {}
    simulation, formal = official.get("simulation") or {}, official.get("formal") or {}
    first = simulation.get("first")
    lines: list[str] = []
    if first:
        compared = simulation.get("cycles", 0)
        failed = compared - simulation.get("matched", 0)
        clocks = ", ".join(first.get("clocks") or [])
        timing = (
            f"one row per period of {clocks}: inputs applied after its edge, outputs read before the next"
            if clocks else "one row per input vector"
        )
        lines.append(
            f"In simulation, {failed} of {compared} compared cycles differ;"
            f" the first is cycle {first.get('cycle')} ({timing})."
        )
        last = {"cycle": first.get("cycle"), "inputs": first.get("inputs", {})}
        rows = [*first.get("history", [])[-(MAX_HISTORY_ROWS - 1):], last]
        lines += ["Inputs:", *(_row("cycle", r.get("cycle"), r.get("inputs", {})) for r in rows)]
        lines += ["Outputs at that cycle:", *_expected_got(first)]
        if counts:
            per_output = ", ".join(f"{name}: {n}" for name, n in (simulation.get("mismatches") or {}).items() if n)
            lines.append(f"Mismatching cycles per output: {per_output}")
    elif formal.get("verdict") == "counterexample" and formal.get("trace"):
        trace = formal["trace"]
        if not (official.get("interface") or {}).get("sequential", True):
            lines.append("A formal check found inputs for which the outputs differ:")
        else:
            steps = (
                "one step per clock cycle" if formal.get("model") == "cycle"
                else "one step per instant: clocks are inputs too"
            )
            lines.append(
                f"A formal check found an input sequence, starting from reset, after which the outputs differ at step"
                f" {trace[-1].get('step')} ({steps}; the reset is held in the first step(s)):"
            )
        shown = trace[-MAX_HISTORY_ROWS:]
        if len(trace) > len(shown):
            lines.append(f"  ... {len(trace) - len(shown)} earlier step(s) not shown")
        lines += [_row("step", step.get("step"), step.get("inputs", {})) for step in shown]
        lines += ["Outputs at that step:", *_expected_got(trace[-1])]
    else:
        lines.append(result.reason[:500])
    return lines


def _row(unit: str, index: object, inputs: dict) -> str:
    values = " ".join(f"{name}={_short(value)}" for name, value in inputs.items())
    return f"  {unit} {index}: {values}"[:600]


def _expected_got(where: dict) -> list[str]:
    expected, got = where.get("expected") or {}, where.get("got") or {}
    shown = list(expected)[: MAX_FAILED_TESTS * 2]
    return [f"  {name}: expected {_short(expected[name])}, got {_short(got.get(name, '?'))}" for name in shown]


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."
