"""Results of harness runs, and how a failing run is classified.

Failure classes (``failure_class``):

- ``build_error``: the candidate does not compile or elaborate (syntax error, unknown
  module, bad port connection) with the harness's simulator.
- ``toolchain_gap``: only with the host fallback toolchain: its Icarus 11 rejected code that
  a full SystemVerilog parser accepts, or printed ``sorry: ... not supported``; the official
  image (Icarus 13) may accept it, so it is not the candidate's fault and a trainer can
  leave it out. Under the pinned root (Icarus 13, as the official image) a rejection is a
  ``build_error``.
- ``test_failure``: it built, and the harness's tests failed.
- ``timeout``: the service ran past its wall-time limit and was killed.
- ``resource_limit``: killed for exceeding memory (or another hard limit).
- ``harness_error``: the harness itself broke (import error, collection error, a compose
  file naming a missing file): a defect of the problem, not of the answer, and the same on
  every try, so it is kept like any verdict and never re-graded.
- ``infra_error``: the grading machinery failed on this run, not the answer: the sandbox
  refused to start, the machine ran short laying out the run (disk, file handles, memory),
  or the worker grading it was lost. A second try may give a verdict.
- ``unsupported``: the local toolchain cannot run this harness; ``reason`` names what is
  missing (a commercial image, a Python package, an unmapped image).
- ``undecided``: the checks ran and found no difference, but none of them decided: the
  reference grader's simulation did not cover the design (state never reached) and its
  formal stage neither proved equivalence nor reached its minimum bound (a timeout, a
  shallow bound). Never a pass (``equivalence.flow``; ``docs/grading.md``).
- ``reach_in``: the answer names or opens something outside its own design (the test
  bench's or the reference's instances, tasks or modules, ``$root``, ``force`` or
  ``defparam`` on them, ``bind``, files it was not given, DPI): found by a static check
  before it runs (the answer gate, :mod:`cvdp_gym.gate`). The reason names the construct and its line. It
  is graded like a build error (its ``syntax`` stage fails), never a pass, whatever the
  benchmark's own reading (``official``) says.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from xml.parsers import expat

BUILD_ERROR = "build_error"
TOOLCHAIN_GAP = "toolchain_gap"
TEST_FAILURE = "test_failure"
TIMEOUT = "timeout"
RESOURCE_LIMIT = "resource_limit"
HARNESS_ERROR = "harness_error"
INFRA_ERROR = "infra_error"
UNSUPPORTED = "unsupported"
UNDECIDED = "undecided"
REACH_IN = "reach_in"
PASSED = "passed"
FAILURE_CLASSES = (
    BUILD_ERROR, TOOLCHAIN_GAP, TEST_FAILURE, TIMEOUT, RESOURCE_LIMIT, HARNESS_ERROR, INFRA_ERROR, UNSUPPORTED,
    UNDECIDED, REACH_IN,
)
#: Failure classes that blame the grading machinery, not the answer, and may not recur:
#: a trainer re-grades the same answer once and otherwise leaves it out of its statistics.
#: (``harness_error``, ``toolchain_gap`` and ``unsupported`` also spare the answer, but every
#: try ends the same.)
INFRA_FAILURES = (INFRA_ERROR,)
#: ``errno`` values of an ``OSError`` that say the machine ran short, not that the harness is broken.
_MACHINE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EIO})

_PYTEST_SUMMARY = re.compile(r"^=+ (.+?) in ([\d.]+)s(?: \([^)]*\))? =+\s*$", re.M)
_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")
_BUILD_FRAME = re.compile(r"runner\.py:\d+: in build\b")
#: cocotb 1.x's runner ends a failed compile with this (from inside the test, not ``build``).
_BUILD_EXIT = re.compile(r"SystemExit: Process '(iverilog|verilator|verilator_bin|make|g\+\+)' terminated with error \d+")
#: Names cocotb gives its results file: ``results.xml``; under pytest, cocotb 2.x uses
#: ``<test>.result.xml`` and cocotb 1.9 ``<test>.None``.
_RESULTS_NAME = re.compile(r"(^results\.xml$|\.result\.xml$|\.None$)")
#: cocotb's runner when the simulator exited without writing results.
_NO_RESULTS = re.compile(r"Results file \S+ not found")
_COMPILE_ERROR = re.compile(
    r"^\s*(\S+:\d+:\s*(syntax error|error\b)|%Error|error: |.*I give up|.*Unknown module type"
    r"|.*Unable to find the root module|.*No top level modules|.*Elaboration failed)",
    re.I,
)
#: Icarus's own "not supported" diagnostic, at a source location in the workspace
#: (``/code/rtl/x.sv:12: sorry: ...``); free text elsewhere, such as an include name the
#: compiler echoes, does not count.
_SORRY = re.compile(r"^\s*/code/[^\s:]+:\d+: sorry: .*$", re.M)
_HARNESS_BROKEN = re.compile(
    r"(ModuleNotFoundError|ImportError while importing|ERROR collecting|INTERNALERROR|"
    r"no tests ran|file or directory not found:|usage: pytest)"
)


@dataclass
class TestCounts:
    total: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0

    def __add__(self, other: TestCounts) -> TestCounts:
        return TestCounts(
            self.total + other.total,
            self.passed + other.passed,
            self.failed + other.failed,
            self.skipped + other.skipped,
        )


@dataclass
class ServiceResult:
    """One compose service's run."""

    name: str
    passed: bool
    failure_class: str | None
    reason: str
    returncode: int | None
    tests: TestCounts = field(default_factory=TestCounts)
    pytest: TestCounts = field(default_factory=TestCounts)
    harness_s: float | None = None  # the harness's own time, as pytest reports it
    wall_s: float = 0.0
    generation: str | None = None
    log_tail: str = ""
    notes: list[str] = field(default_factory=list)
    #: Failing cocotb tests from the results files: ``{"test", "message"}`` (bounded).
    failures: list[dict[str, str]] = field(default_factory=list)


@dataclass
class HarnessResult:
    """The verdict on one candidate for one problem (all services must pass)."""

    problem_id: str
    passed: bool
    failure_class: str | None
    reason: str
    services: list[ServiceResult] = field(default_factory=list)
    wall_s: float = 0.0
    toolchain: dict[str, str] = field(default_factory=dict)  # which toolchain graded it
    #: The seed the run's Python randomness and cocotb used (``randomness.seed_environment``);
    #: None when no harness ran. The same seed reproduces the run.
    seed: int | None = None
    #: A benchmark flow's own verdict, by the benchmark's own rule over the whole log
    #: (``harness.flows``: VerilogEval's failure class, RTLLM's pass rules); empty for CVDP.
    official: dict[str, Any] = field(default_factory=dict)
    #: The problem's known benchmark defect (``Problem.defect``): a failure is not the answer's.
    defect: str | None = None

    @property
    def verdict(self) -> str:
        return PASSED if self.passed else (self.failure_class or "failed")

    @property
    def tests(self) -> TestCounts:
        total = TestCounts()
        for service in self.services:
            total = total + service.tests
            if _failed_without_cocotb_failure(service):
                total = total + TestCounts(1, 0, 1, 0)
        return total

    @property
    def harness_s(self) -> float | None:
        times = [s.harness_s for s in self.services if s.harness_s is not None]
        return sum(times) if times else None

    @property
    def generation(self) -> str | None:
        return next((s.generation for s in self.services if s.generation), None)

    @property
    def log_tail(self) -> str:
        failing = [s for s in self.services if not s.passed] or self.services
        return failing[0].log_tail if failing else ""

    @property
    def failures(self) -> list[dict[str, str]]:
        """Failing cocotb tests of every service, in order (a failed check without cocotb
        tests, such as a lint or synthesis service, under its service's name)."""
        failures: list[dict[str, str]] = []
        for service in self.services:
            failures += service.failures
            if _failed_without_cocotb_failure(service):
                failures.append({"test": service.name, "message": service.reason})
        return failures

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict"] = self.verdict
        data["tests"] = asdict(self.tests)
        data["harness_s"] = self.harness_s
        data["generation"] = self.generation
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HarnessResult:
        services = [
            ServiceResult(
                **{
                    **s,
                    "tests": TestCounts(**s.get("tests", {})),
                    "pytest": TestCounts(**s.get("pytest", {})),
                }
            )
            for s in data.get("services", [])
        ]
        return cls(
            problem_id=data["problem_id"],
            passed=data["passed"],
            failure_class=data.get("failure_class"),
            reason=data.get("reason", ""),
            services=services,
            wall_s=data.get("wall_s", 0.0),
            toolchain=dict(data.get("toolchain") or {}),
            seed=data.get("seed"),
            official=dict(data.get("official") or {}),
            defect=data.get("defect"),
        )

    @classmethod
    def failure(cls, problem_id: str, failure_class: str, reason: str) -> HarnessResult:
        return cls(problem_id, False, failure_class, reason)

    @classmethod
    def of_one_check(
        cls, problem_id: str, name: str, passed: bool, failure_class: str | None, reason: str, *,
        tests: TestCounts, official: dict[str, Any], wall_s: float,
    ) -> HarnessResult:
        """The verdict of a flow that runs one check (``name``: a verification task's bench or properties)."""
        service = ServiceResult(name, passed, failure_class, reason, None, tests=tests, wall_s=wall_s)
        return cls(problem_id, passed, failure_class, reason, services=[service], wall_s=wall_s, official=official)


def _failed_without_cocotb_failure(service: ServiceResult) -> bool:
    """A service whose tests failed with no failing cocotb test in its results files (a lint
    or synthesis check written as a plain pytest test): it counts as one failed test, so a
    failing answer never shows every test passed and partial credit stays below a pass."""
    return not service.passed and service.failure_class == TEST_FAILURE and service.tests.failed == 0


def is_results_file(path: Path) -> bool:
    return bool(_RESULTS_NAME.search(path.name))


#: Failing tests kept per results file set, and characters kept of each assertion message
#: and of each test's name.
MAX_FAILURES = 20
FAILURE_MESSAGE_CHARS = 400
TEST_NAME_CHARS = 200
#: Python object addresses in assertion messages (`` at 0x7f3b...``): they differ run to run.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_RESULTS_ROOTS = ("testsuites", "testsuite")
_OUTCOMES = ("failure", "error", "skipped")
#: Nesting deeper than this is not cocotb's (testsuites > testsuite > testcase > failure).
_MAX_DEPTH = 64


@dataclass(frozen=True)
class ResultsSummary:
    """What a verdict needs of one cocotb results file: its test counts and its first
    ``MAX_FAILURES`` distinct failing tests, as ``(test, message)`` (both bounded)."""

    counts: TestCounts
    failures: tuple[tuple[str, str], ...] = ()


def read_results(data: bytes) -> ResultsSummary | None:
    """One cocotb xUnit results file, read in one pass of expat's events.

    A ``<testsuites>`` (or ``<testsuite>``) of ``<testcase>``: a ``<failure>``/``<error>``
    child marks a failed test, ``<skipped>`` a skipped one. None: not such XML (malformed,
    empty, another root, nested deeper than ``_MAX_DEPTH``). No tree is built (expat's
    events, text ignored): memory stays bounded by the open elements, not by the file (a
    million empty elements cost nothing), and time is linear in its size.
    """
    reader = _ResultsReader()
    parser = expat.ParserCreate(namespace_separator="}")  # namespaced tags never match, as in ElementTree
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    try:
        parser.Parse(data, True)
    except (expat.ExpatError, _NotResults, ValueError):
        return None
    return ResultsSummary(reader.counts, tuple(reader.failures))


class _NotResults(Exception):
    """The document is not a cocotb results file."""


class _ResultsReader:
    """expat's handlers for ``read_results``: a frame per open element, the test case's
    first ``<failure>``, ``<error>`` and ``<skipped>`` (their attributes) in its frame."""

    def __init__(self) -> None:
        self.counts = TestCounts()
        self.failures: list[tuple[str, str]] = []
        self._seen: set[tuple[str, str]] = set()
        self._stack: list[dict[str, Any] | None] = []  # a test case's frame, or None

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        stack = self._stack
        if (not stack and tag not in _RESULTS_ROOTS) or len(stack) >= _MAX_DEPTH:
            raise _NotResults
        parent = stack[-1] if stack else None
        if parent is not None and tag in _OUTCOMES:
            parent.setdefault(tag, attributes)
        stack.append({"name": attributes.get("name", "?")} if tag == "testcase" else None)

    def end(self, tag: str) -> None:
        case = self._stack.pop()
        if case is None:
            return
        counts = self.counts
        counts.total += 1
        failure = case.get("failure", case.get("error"))
        if failure is None:
            if "skipped" in case:
                counts.skipped += 1
            else:
                counts.passed += 1
            return
        counts.failed += 1
        if len(self.failures) >= MAX_FAILURES:
            return
        kind, text = failure.get("error_type", ""), failure.get("error_msg") or failure.get("message") or ""
        message = _ADDRESS.sub("", f"{kind}: {text}" if kind and text else kind or text).strip()[:FAILURE_MESSAGE_CHARS]
        key = (case["name"][:TEST_NAME_CHARS], message)
        if key not in self._seen:
            self._seen.add(key)
            self.failures.append(key)


def results_counts(documents: Iterable[bytes]) -> TestCounts:
    """Test counts from cocotb's xUnit results files (one document per simulation run), as
    ``read_results`` reads each; documents that are not such XML count nothing."""
    return summaries_counts(read_results(data) for data in documents)


def summaries_counts(summaries: Iterable[ResultsSummary | None]) -> TestCounts:
    counts = TestCounts()
    for summary in summaries:
        if summary is not None:
            counts = counts + summary.counts
    return counts


def failed_tests(documents: Iterable[bytes]) -> list[dict[str, str]]:
    """Failing test cases in cocotb's results files: ``{"test", "message"}``, each once.

    cocotb 2.x records the exception's type and text (``error_type``, ``error_msg``);
    cocotb 1.x only a generic ``message``. Bounded to ``MAX_FAILURES`` entries.
    """
    return summaries_failures(read_results(data) for data in documents)


def summaries_failures(summaries: Iterable[ResultsSummary | None]) -> list[dict[str, str]]:
    """The first ``MAX_FAILURES`` distinct failing tests over the summaries, in order (each
    summary keeps its own first ``MAX_FAILURES`` distinct ones: enough for any merge)."""
    out: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for summary in summaries:
        for key in summary.failures if summary is not None else ():
            if key in seen:
                continue
            seen.add(key)
            out.append({"test": key[0], "message": key[1]})
            if len(out) >= MAX_FAILURES:
                return out
    return out


def pytest_summary(text: str) -> tuple[TestCounts, float | None]:
    """Counts and duration from pytest's closing ``=== 1 passed in 0.61s ===`` line."""
    matches = list(_PYTEST_SUMMARY.finditer(text))
    if not matches:
        return TestCounts(), None
    summary, seconds = matches[-1].group(1), float(matches[-1].group(2))
    counts = TestCounts()
    for number, kind in _PYTEST_COUNT.findall(summary):
        n = int(number)
        if kind == "passed":
            counts.passed += n
        elif kind in ("failed", "error", "errors"):
            counts.failed += n
        elif kind == "skipped":
            counts.skipped += n
    counts.total = counts.passed + counts.failed + counts.skipped
    return counts, seconds


def compile_errors(text: str, limit: int = 12) -> list[str]:
    """Compiler diagnostic lines (Icarus, Verilator) found in ``text``."""
    lines = [line.strip() for line in text.splitlines() if _COMPILE_ERROR.match(line)]
    return lines[:limit]


def sorry_lines(text: str) -> list[str]:
    return [m.group(0).strip() for m in _SORRY.finditer(text)]


def classify_failure(
    output: str,
    build_logs: str,
    returncode: int | None,
    tests: TestCounts,
    *,
    gaps: bool = False,
) -> tuple[str, str]:
    """Failure class and a one-line reason for a service that did not pass.

    ``output`` is the console output; ``build_logs`` the compiler/simulator log files the
    harness wrote (cocotb sends the compiler's output there, not to the console);
    ``tests`` the counts from cocotb's results files (not from console text, which the
    design can print). ``gaps``: the toolchain is the host's older Icarus, whose located
    ``sorry:`` diagnostic means ``toolchain_gap``.
    """
    if tests.failed:
        return TEST_FAILURE, f"{tests.failed} of {tests.total} cocotb tests failed"
    build_failed = bool(_BUILD_FRAME.search(output) or _BUILD_EXIT.search(output))
    errors = compile_errors(build_logs) or compile_errors(output)
    broken = _HARNESS_BROKEN.search(output)
    if build_failed or (errors and tests.total == 0 and not broken):
        sorry = sorry_lines(build_logs + "\n" + output) if gaps else []
        if sorry:
            return TOOLCHAIN_GAP, f"Icarus does not support a construct: {sorry[0]}"
        detail = errors[0] if errors else "the simulator's build step failed"
        return BUILD_ERROR, detail
    if broken:
        detail = _first_pytest_error(output) or broken.group(1)
        return HARNESS_ERROR, detail[:300]
    if _NO_RESULTS.search(output):
        # The test module loaded (else ``broken`` above): the design ended or crashed the
        # simulator before cocotb could write its results.
        return TEST_FAILURE, "the simulation ended abnormally before cocotb wrote its results"
    if returncode in (2, 3, 4, 5):
        return HARNESS_ERROR, f"pytest exited with status {returncode} (interrupted, internal or usage error, or no tests)"
    if tests.total:
        return TEST_FAILURE, "the cocotb tests passed but the harness's checks failed"
    assertion = _first_pytest_error(output)
    return TEST_FAILURE, assertion[:300] or f"harness exited with status {returncode}"


def os_failure_class(exc: OSError) -> str:
    """The class of an ``OSError`` laying out a run's files: ``infra_error`` when the machine
    ran short (another try may work), else ``harness_error`` (the harness's files cannot be
    laid out, on every try)."""
    return INFRA_ERROR if exc.errno in _MACHINE_ERRNOS else HARNESS_ERROR


def _first_pytest_error(output: str) -> str:
    """The first ``E   ...`` line of a pytest traceback (the exception and its message)."""
    return next((ln.strip()[1:].strip() for ln in output.splitlines() if ln.startswith("E  ")), "")
