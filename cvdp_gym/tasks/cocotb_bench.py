"""A model's cocotb test bench run on the reference design and on mutants, each in a sandbox of its own.

Contract: ``run_cocotb_designs(sandbox, bench_py, design_texts, top, sim_s=, limits=, seed=, order_seed=)``
returns one :class:`~cvdp_gym.tasks.bench_verdicts.DesignRun` per design (the reference
first) and never raises on what the bench or the designs hold. The Verilog bench's run
(:mod:`cvdp_gym.tasks.verilog_bench`) is the model; here the bench is Python:

- **one sandbox run per design** (a cocotb run costs seconds, a sandbox about 0.1 s): its
  ``/work`` holds the bench (``test_tb.py``), that one design (``design.sv``, the same file
  and module names for every design), a generated driver (``cocotb_driver.py``) and the guard
  (``cvdp_guard.py``); nothing of another design's run exists there, and nothing a run writes
  outlives it. The reference runs first (a bench that does not pass it is not run on the
  mutants) and again at a position among the mutants drawn with ``order_seed``: a bench whose
  verdict on it changes is a false alarm
  (:func:`~cvdp_gym.tasks.verilog_bench.reference_verdict`);
- the driver, run by the toolchain's cocotb 2.0.1 Python, builds the design with cocotb's own
  Icarus runner (``get_runner("icarus").build``, ``-g2012``, default time scale 1ns/1ps so a
  ``Clock(dut.clk, 10, unit="ns")`` works on a design without `` `timescale``), first
  compiling the bench's text (never running it: a syntax error is a design that did not build,
  with the error as its reason); the build's log goes to the sandbox's own output, which no
  later step can reach, and the design's source and every build file but the simulation
  (``sim_build/sim.vvp``) are deleted before the bench runs;
- the bench then runs (``.test(test_module="test_tb", ...)``) under the **guard**, a
  ``sys.addaudithook`` installed inside the simulator's Python (cocotb's ``PYGPI_USERS``
  entry points, after cocotb's own set-up and before the test module is imported), which
  first deletes the simulation file (Icarus has read it) and closes every descriptor of the
  run folder, then refuses: opening any file but the Python installation's (read), the
  bench's own file (read) and cocotb's results file (write); running or signalling a process
  (``os.system``, ``subprocess.Popen``, ``os.exec*``, ``os.posix_spawn``, ``os.fork``,
  ``os.kill``...); sockets, ``ctypes``, ``mmap`` and changes to files; importing a module
  that reaches any of those, and, while the bench's code is running, any module outside
  :data:`cvdp_gym.tasks.cocotb_bench_rules.ALLOWED_MODULES` and the pure standard ones
  cocotb itself loads. A refused event raises ``PermissionError`` in the bench: its test
  fails, on the reference as on every mutant. The ``ast`` rules
  (:mod:`cvdp_gym.tasks.cocotb_bench_rules`) stay the first line: a bench they flag never runs;
- each step runs under ``timeout -s KILL sim_s``; every design's run uses the same cocotb
  seed, so a bench drawing stimulus from ``random`` drives every design alike.

The verdict per design is read from cocotb's results file (JUnit XML), never from what the
log says: passed when it holds at least one test case and no ``failure`` or ``error``; a
bench with no test passes nothing.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import shlex
import xml.etree.ElementTree as ElementTree
from pathlib import Path, PurePosixPath

from cvdp_gym.harness.testbench import run_script
from cvdp_gym.sandbox.base import Limits, Sandbox
from cvdp_gym.tasks.bench_verdicts import KILLED_RC, DesignRun
from cvdp_gym.tasks.cocotb_bench_rules import ALLOWED_MODULES
from cvdp_gym.tasks.names import COCOTB_FILE, DESIGN_FILE
from cvdp_gym.tasks.verilog_bench import reference_verdict, run_order

__all__ = ["run_cocotb_designs"]

BENCH_PY = COCOTB_FILE
BENCH_MODULE = PurePosixPath(COCOTB_FILE).stem
DRIVER = "cocotb_driver.py"
GUARD = "cvdp_guard.py"
RESULTS = "results.xml"
_WHY_CHARS = 300
_NO_TESTS = "the bench holds no cocotb test"
_ERROR_LINES = (
    re.compile(r"^[^\s:]+:\d+:.*\b(?:error|I give up)\b", re.I),
    re.compile(r"^[\w.]*(?:Error|Exception)\b:?"),
    re.compile(r"\berror\b", re.I),
)
#: cocotb's own entry points (``pygpi.entry``), with the guard's before the regression's.
_ENTRY_POINTS = ",".join((
    "cocotb_tools._coverage:start_cocotb_library_coverage",
    "cocotb.logging:_configure",
    "cocotb._init:init_package_from_simulation",
    f"{PurePosixPath(GUARD).stem}:install",
    "cocotb._init:run_regression",
))
#: Runs in the sandbox (``python cocotb_driver.py build|test TOP SEED`` in ``/work``).
_DRIVER = f'''\
"""Builds one design with cocotb's Icarus runner, or runs the bench on it under the guard (cvdp-gym)."""
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
os.environ["PYGPI_USERS"] = "{_ENTRY_POINTS}"
os.environ["CVDP_GUARD_BENCH"] = bench
os.environ["CVDP_GUARD_RUN"] = here
runner.test(
    test_module="{BENCH_MODULE}", hdl_toplevel=top, hdl_toplevel_lang="verilog", build_dir=build_dir, test_dir=build_dir,
    results_xml=results, seed=seed,
)
# The status the shell script reads; the verdict itself is read from the results file outside
# the sandbox.
cases = list(ElementTree.parse(results).getroot().iter("testcase"))
bad = [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
sys.exit(0 if cases and not bad else 1)
'''
#: Modules no code may import once the guard is on (each reaches a process, a socket, memory
#: or the file system past ``open``), and the pure standard ones the bench may reach besides
#: :data:`ALLOWED_MODULES` (what cocotb and the allowed modules load themselves).
_DENIED_IMPORTS = (
    "ctypes", "_ctypes", "socket", "_socket", "ssl", "_ssl", "mmap", "multiprocessing", "_multiprocessing", "pty",
    "termios", "resource", "webbrowser", "pdb", "code", "runpy", "sqlite3", "_sqlite3", "faulthandler",
    "tracemalloc", "_tracemalloc",
)
_PURE_IMPORTS = (
    "abc", "annotationlib", "ast", "bisect", "_bisect", "copy", "copyreg", "contextlib", "contextvars",
    "_contextvars", "datetime", "_datetime", "_pydatetime", "decimal", "_decimal", "_pydecimal", "dis", "fractions",
    "heapq", "_heapq", "inspect", "json", "_json", "keyword", "linecache", "logging", "numbers", "opcode", "_opcode",
    "pprint", "_random", "re", "_sre", "reprlib", "_sha2", "statistics", "_statistics", "string", "_string",
    "struct", "_struct", "textwrap", "time", "token", "tokenize", "traceback", "types", "_typing", "warnings",
    "weakref", "_weakref", "_weakrefset", "_collections", "_collections_abc", "_functools", "_operator", "_abc",
    "_colorize", "_pytest", "pytest", "pluggy", "iniconfig", "packaging", "colorsys", "binascii", "array",
    "queue", "_queue", "sre_compile", "sre_parse", "sre_constants", "_strptime", "calendar", "locale", "_locale",
    "encodings", "codecs", "_codecs", "unicodedata", "difflib", "hashlib", "_hashlib", "_blake2", "_md5", "_sha1",
    "_sha3", "base64", "cmath", "zoneinfo", "_zoneinfo", "errno", "stat", "_stat", "posixpath", "genericpath",
    "fnmatch", "xml", "pyexpat", "collections", "functools", "itertools", "operator",
)
#: Runs inside the simulator's Python, before the bench is imported (see the module doc).
_GUARD = f'''\
"""The bench's guard (cvdp-gym): an audit hook installed before the test module is imported."""
import os
import sys

_BENCH = os.path.realpath(os.environ.get("CVDP_GUARD_BENCH", ""))
_RUN = os.path.realpath(os.environ.get("CVDP_GUARD_RUN", "/nonexistent"))
_RESULTS = os.path.realpath(os.environ.get("COCOTB_RESULTS_FILE", "/nonexistent"))
_READABLE = tuple(sorted({{os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}}))
_ALLOWED = frozenset({sorted(ALLOWED_MODULES | {"cocotb"})!r})
_PURE = frozenset({sorted(_PURE_IMPORTS)!r})
_DENIED = frozenset({sorted(_DENIED_IMPORTS)!r})
_PROCESS = (
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill", "os.killpg",
    "os.startfile", "os.setuid", "subprocess.", "pty.", "signal.pthread_kill", "_posixsubprocess.",
)
_REFUSED = (
    "socket.", "ctypes.", "mmap.", "fcntl.", "os.chmod", "os.chown", "os.chflags", "os.lchown", "os.link",
    "os.symlink", "os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.truncate", "os.utime", "os.setxattr",
    "os.removexattr", "shutil.", "os.chdir", "os.chroot", "os.mkfifo", "os.mknod", "os.memfd_create", "gc.",
    "sys.remote_exec", "sys.settrace", "sys.setprofile", "sys._current_frames", "cpython.remote_debugger",
)


def _bench_running():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == _BENCH or os.path.basename(frame.f_code.co_filename) == "{BENCH_PY}":
            return True
        frame = frame.f_back
    return False


def _may_open(path, mode, flags):
    if isinstance(path, int):
        return path in (1, 2)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    real = os.path.realpath(str(path))
    if isinstance(mode, str):
        writes = any(c in mode for c in "wax+")
    else:
        writes = bool((flags or 0) & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC))
    if writes:
        return real == _RESULTS
    return real == _BENCH or real.startswith(_READABLE)


def _hook(event, args):
    if event == "sys._getframe":
        return
    if event == "open":
        if not _may_open(*args):
            raise PermissionError(f"cvdp-gym: a test bench may not open {{args[0]!r}}")
    elif event.startswith(_PROCESS):
        raise PermissionError(f"cvdp-gym: a test bench may not start or signal a process ({{event}})")
    elif event.startswith(_REFUSED):
        raise PermissionError(f"cvdp-gym: a test bench may not do this ({{event}})")
    elif event == "import":
        name = str(args[0])
        top = name.split(".")[0]
        if top in _DENIED or name in _DENIED:
            raise ImportError(f"cvdp-gym: a test bench may not import {{name}}")
        if top not in _ALLOWED and top not in _PURE and _bench_running():
            raise ImportError(f"cvdp-gym: a test bench may not import {{name}}")


def install(_argv):
    """Delete the simulation file (Icarus has read it), close the descriptors of the build,
    load pytest's assertion rewriting as cocotb will (so its imports happen unguarded), then
    install the hook; nothing of the bench has run yet."""
    try:
        os.unlink(os.path.join(_RUN, "sim_build", "sim.vvp"))
    except OSError:
        pass
    for entry in os.listdir("/proc/self/fd"):
        try:
            fd = int(entry)
            target = os.readlink(f"/proc/self/fd/{{entry}}")
        except (ValueError, OSError):
            continue
        if fd > 2 and (target.startswith(os.path.join(_RUN, "sim_build") + os.sep) or target.endswith(" (deleted)")):
            try:
                os.close(fd)
            except OSError:
                pass
    try:
        from cocotb.regression import RegressionManager

        RegressionManager.setup_pytest_assertion_rewriting()
        import xml.etree.ElementTree  # noqa: F401  (cocotb's results file, written at the end)
    except Exception:
        pass
    sys.addaudithook(_hook)
'''


def _script(*, python: str, top: str, sim_s: float, seed: int, marker: str) -> str:
    """One design's shell script: the build (its log to the sandbox's output, then the
    design's files deleted but the simulation), then the bench under the guard."""
    run = f"timeout -s KILL {sim_s:g} {shlex.quote(python)} {DRIVER}"
    top = shlex.quote(top)
    return (
        "export PYTHONDONTWRITEBYTECODE=1\n"
        f"{run} build {top} {seed} 2>&1; rc=$?; echo; echo \"{marker} $rc\"\n"
        f"rm -f {DESIGN_FILE}; [ -d sim_build ] && find sim_build -mindepth 1 ! -name sim.vvp -delete\n"
        f"if [ \"$rc\" = 0 ]; then {run} test {top} {seed} > sim.log 2>&1; echo $? > sim.rc; fi\n"
        "rm -rf sim_build /tmp/*\n"
    )


def run_cocotb_designs(
    sandbox: Sandbox, bench_py: str, design_texts: list[str], top: str, *, sim_s: float, limits: Limits,
    keep_dir: Path | None = None, seed: int = 1, order_seed: int | None = None,
) -> list[DesignRun]:
    """The cocotb bench ``bench_py`` on each of ``design_texts`` (the reference first), whose
    top module ``top`` it drives, one sandbox run each; the mutants are not run after a failed
    reference. ``seed``: cocotb's seed of Python's ``random``, the same for every design;
    ``order_seed`` (default ``seed``): the draw of where the reference runs again."""
    if not design_texts:
        return []
    env = sandbox.toolchain.env("cocotb2")
    python = str(env.sandbox_prefix / "bin" / "python")
    wall = min(limits.wall_s, 2 * sim_s + 15.0)
    by_design: dict[int, DesignRun] = {}
    again: DesignRun | None = None
    for k, i in enumerate(run_order(len(design_texts), seed if order_seed is None else order_seed)):
        marker = f"@@cvdp-build-{secrets.token_hex(8)}@@"
        files = {BENCH_PY: bench_py, DRIVER: _DRIVER, GUARD: _GUARD, DESIGN_FILE: design_texts[i]}
        ran = run_script(
            sandbox, "icarus", _script(python=python, top=top, sim_s=sim_s, seed=seed, marker=marker), files,
            ("sim.rc", "sim.log", RESULTS), limits=dataclasses.replace(limits, wall_s=wall),
            keep_dir=None if keep_dir is None else keep_dir / f"run{k}", sim_env=env,
        )
        build_log, found, tail = ran.outcome.output.rpartition(marker)
        build_rc = tail.split("\n", 1)[0].strip() if found else ""
        verdict = _verdict(build_rc, build_log, *(ran.logs.get(name, "") for name in ("sim.rc", "sim.log", RESULTS)))
        if i == 0 and k > 0:
            again = verdict
            continue
        by_design[i] = verdict
        if i == 0 and not (verdict.built and verdict.passed):
            break
    runs = [by_design.get(i, _verdict("", "", "", "", "")) for i in range(len(design_texts))]
    runs[0] = reference_verdict(runs[0], again)
    return runs


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
