"""How much of a design a test bench exercises: Verilator's line, branch and toggle coverage.

Contract: ``measure_coverage(sandbox, files, bench_top=..., design_files=..., limits=...)``
builds ``files`` (the test bench and the design; every ``.v``/``.sv`` file is a source) with
``verilator --timing --coverage-line --coverage-toggle`` under ``bench_top``, runs it once
in the sandbox, and
returns a ``Coverage``: points hit and total, counting only points in ``design_files`` (the
bench's own lines say nothing of the design). It never raises on what the files hold: a
bench Verilator cannot build, a crash, a run past ``limits`` is a ``Coverage`` with a
``reason`` and no numbers. Coverage is reported, never a verdict: Icarus decides pass/fail
elsewhere, and a bench that Icarus accepts may still not build under Verilator.

The run ends as an Icarus run (``vvp -n``) of the bench ends, coverage written, where
Verilator's own ``--binary`` main would abort without it: a ``$error`` reports and goes on,
``$fatal`` and ``$stop`` end the run. Verilator compiles ``$error`` and ``$stop`` to the same
call, so its own ``main`` (with ``fatalOnError(false)`` and no error limit) cannot tell them
apart; the sources get ``$stop`` spelled ``$finish`` instead (outside comments and strings),
``vvp -n``'s reading of it. Coverage is read only from a run that exited normally: the final
write replaces whatever the bench itself may have written under that name.

``coverage.dat`` (``SystemC::Coverage-3``) holds one point per line, ``C '<key>' <count>``,
the key a run of ``\\x01<name>\\x02<value>`` fields (values escape ``%``, ``"`` and
unprintable bytes as ``%XX``): ``f`` file as given to Verilator, ``l`` line, ``n`` column,
``t`` kind (``line``, ``branch``, ``toggle``; ``page`` is ``v_<kind>/<module>``), ``o`` what
(``block``, ``if``, ``else``, a signal bit), ``h`` hierarchy (instances of one module merged).
``read_coverage_points`` reads it. A toggle point counts changes of one bit either way, so
"hit" means the bit changed at least once, not that it both rose and fell.

A measurement costs about 4 s on two cores (Verilator's C++ runtime is most of it and the
root's runtime cache, filled for cocotb's flags, does not hold a coverage build's objects).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cvdp_gym.errors import UnsafePathError, one_line
from cvdp_gym.harness.testbench import run_script
from cvdp_gym.sandbox.base import Limits, Sandbox
from cvdp_gym.sandbox.paths import check_relative_path

#: Verilator's build: warnings are the bench's business; optimise neither the runtime nor the
#: model (the compile is most of a measurement, the run of a test bench is short).
VERILATOR = (
    "verilator --cc --exe --build --timing --coverage-line --coverage-toggle -j 2 -Wno-fatal -Wno-lint -Wno-style"
    ' --timescale 1ns/1ps -MAKEFLAGS "OPT_FAST=-O0 OPT_SLOW=-O0 OPT_GLOBAL=-O0"'
)
#: Files of a measurement in the run's folder (names a bench is unlikely to use).
_MAIN, _OBJ, _PREFIX = "cvdp_cov_main.cpp", "cvdp_cov_obj", "Vcvdp_cov"
_BUILD_LOG, _SIM_LOG, _BUILT, _STATUS, _DAT = (
    "cvdp_cov_build.log", "cvdp_cov_sim.log", "cvdp_cov_built", "cvdp_cov_status", "cvdp_cov.dat",
)
#: Verilator's ``--binary`` main, but a ``$stop``/``$fatal`` ends the run instead of aborting
#: it, so the coverage is written.
_MAIN_CPP = f"""\
#include "verilated.h"
#include "{_PREFIX}.h"
#include <memory>

int main(int argc, char** argv) {{
    const std::unique_ptr<VerilatedContext> contextp{{new VerilatedContext}};
    contextp->commandArgs(argc, argv);
    contextp->fatalOnError(false);
    contextp->errorLimit(1 << 30);
    const std::unique_ptr<{_PREFIX}> topp{{new {_PREFIX}{{contextp.get(), ""}}}};
    while (!contextp->gotFinish()) {{
        topp->eval();
        if (!topp->eventsPending()) break;
        contextp->time(topp->nextTimeSlot());
    }}
    topp->final();
    contextp->coveragep()->write("{_DAT}");
    return 0;
}}
"""
_SOURCE_SUFFIXES = (".v", ".sv")
_HDL_SUFFIXES = (".v", ".sv", ".vh", ".svh")
#: What ``_stop_as_finish`` reads past (comments, strings) or rewrites (``$stop``).
_STOP_SCAN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\$stop(?![A-Za-z0-9_$])', re.DOTALL)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_RECORD = re.compile(r"^C '(.*)' (\d+)\s*$")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
#: Verilator's kinds that ``--coverage-line`` gives (its branch points are line coverage too).
_LINE_KINDS = ("line", "branch")
#: Characters of a build error kept in ``Coverage.reason``.
_REASON_CHARS = 300


@dataclass(frozen=True)
class Coverage:
    """What a test bench covers of its design: (points hit, points in all) per kind, or None
    with ``reason`` saying why it was not measured.

    ``line``: Verilator's line coverage (its ``line`` and ``branch`` points); ``branch``: the
    branch points alone (each arm of an ``if``/``case``); ``toggle``: one point per bit of the
    design's signals, hit once the bit has changed.
    """

    line: tuple[int, int] | None = None
    toggle: tuple[int, int] | None = None
    branch: tuple[int, int] | None = None
    reason: str = ""

    @property
    def measured(self) -> bool:
        return self.line is not None

    @property
    def line_fraction(self) -> float | None:
        return _fraction(self.line)

    @property
    def toggle_fraction(self) -> float | None:
        return _fraction(self.toggle)

    @property
    def branch_fraction(self) -> float | None:
        return _fraction(self.branch)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: each kind as ``[hit, total]`` or null, its fraction, and the reason."""
        out: dict[str, object] = {}
        for kind in ("line", "toggle", "branch"):
            counts: tuple[int, int] | None = getattr(self, kind)
            out[kind] = list(counts) if counts is not None else None
            out[f"{kind}_fraction"] = _fraction(counts)
        out["reason"] = self.reason
        return out


def _fraction(counts: tuple[int, int] | None) -> float | None:
    """hit / total; None when not measured or when the design has no such point."""
    if counts is None or counts[1] == 0:
        return None
    return counts[0] / counts[1]


def read_coverage_points(text: str, design_files: Iterable[str]) -> dict[str, tuple[int, int]]:
    """``{kind: (hit, total)}`` over the points of ``coverage.dat`` text whose file is one of
    ``design_files`` (paths as given to Verilator, relative to its working folder); kinds are
    Verilator's ``t`` values (``line``, ``branch``, ``toggle``). Lines it cannot read are skipped."""
    wanted = {_normal(name) for name in design_files}
    counts: dict[tuple[str, str], int] = {}
    for raw in text.splitlines():
        match = _RECORD.match(raw)
        if not match:
            continue
        fields = _fields(match.group(1))
        if _normal(fields.get("f", "")) not in wanted:
            continue
        kind = fields.get("t") or fields.get("page", "").removeprefix("v_").split("/")[0]
        key = (kind, match.group(1))
        counts[key] = counts.get(key, 0) + int(match.group(2))
    out: dict[str, tuple[int, int]] = {}
    for (kind, _), count in counts.items():
        hit, total = out.get(kind, (0, 0))
        out[kind] = (hit + (count > 0), total + 1)
    return out


def _fields(key: str) -> dict[str, str]:
    """A point's key as ``{name: value}`` (``%XX`` escapes undone)."""
    out: dict[str, str] = {}
    for part in key.split("\x01"):
        name, sep, value = part.partition("\x02")
        if sep:
            out[name] = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), value)
    return out


def _normal(path: str) -> str:
    """A path as Verilator's ``f`` field and ``files`` both name it."""
    path = path.removeprefix("/work/")
    while path.startswith("./"):
        path = path[2:]
    return posixpath.normpath(path) if path else ""


def _stop_as_finish(source: str) -> str:
    """``source`` with each ``$stop`` task spelled ``$finish`` (comments and strings untouched)."""
    return _STOP_SCAN.sub(lambda m: "$finish" if m.group(0) == "$stop" else m.group(0), source)


def measure_coverage(
    sandbox: Sandbox, files: Mapping[str, str], *, bench_top: str, design_files: Iterable[str], limits: Limits,
) -> Coverage:
    """Build ``files`` under Verilator with coverage, run ``bench_top`` once within ``limits``,
    and count the points of ``design_files`` it hit (see the module docstring)."""
    design = [_normal(name) for name in design_files]
    if not _IDENT.fullmatch(bench_top):
        return Coverage(reason=f"the test bench's top module {one_line(bench_top)!r} is not a plain module name")
    try:
        names = {check_relative_path(name) for name in files}
    except UnsafePathError as exc:
        return Coverage(reason=str(exc))
    missing = [name for name in design if name not in names]
    if missing:
        return Coverage(reason=f"design file {one_line(missing[0])!r} is not among the files")
    sources = design + sorted(n for n in names - set(design) if n.endswith(_SOURCE_SUFFIXES) and n != _MAIN)
    sources_as_run = {name: _stop_as_finish(text) if name.endswith(_HDL_SUFFIXES) else text for name, text in files.items()}
    folders = sorted({posixpath.dirname(n) or "." for n in names})
    script = (
        f"rm -f {_DAT}\n"
        f"{VERILATOR} --top-module {bench_top} --prefix {_PREFIX} -Mdir {_OBJ} -o simv"
        f" {' '.join('-I' + shlex.quote(d) for d in folders)} {' '.join(shlex.quote(s) for s in sources)}"
        f" {_MAIN} > {_BUILD_LOG} 2>&1\n"
        f"if [ -x {_OBJ}/simv ]; then\n"
        f"touch {_BUILT}\n"
        f"{{ ./{_OBJ}/simv; echo $? > {_STATUS}; }} 2>&1 | tail -c 4000 > {_SIM_LOG}\n"
        "fi\n"
        f"rm -rf {_OBJ}\n"
    )
    run = run_script(
        sandbox, "verilator", script, {**sources_as_run, _MAIN: _MAIN_CPP}, [_BUILD_LOG, _SIM_LOG, _STATUS, _DAT],
        limits=limits,
    )
    outcome, logs = run.outcome, run.logs
    if _BUILT not in run.left:
        if outcome.timed_out:
            return Coverage(reason=f"the Verilator build did not finish within {limits.wall_s:g} s")
        if outcome.out_of_memory:
            return Coverage(reason="the Verilator build ran out of memory")
        return Coverage(reason=f"the test bench does not build under Verilator: {_first_error(logs[_BUILD_LOG])}")
    status = logs[_STATUS].strip()
    if not status:
        if outcome.timed_out:
            return Coverage(reason=f"the test bench did not finish within {limits.wall_s:g} s under Verilator")
        return Coverage(reason="the test bench's Verilator run was stopped" + _last_line(logs[_SIM_LOG]))
    if status != "0":
        return Coverage(reason=f"the test bench's Verilator run ended with status {status}" + _last_line(logs[_SIM_LOG]))
    if not logs[_DAT].startswith("# SystemC::Coverage"):
        return Coverage(reason="the Verilator run wrote no coverage file")
    kinds = read_coverage_points(logs[_DAT], design)
    none = (0, 0)
    line_hit = sum(kinds.get(k, none)[0] for k in _LINE_KINDS)
    line_total = sum(kinds.get(k, none)[1] for k in _LINE_KINDS)
    toggle = kinds.get("toggle", none)
    reason = "" if line_total or toggle[1] else "no coverage point falls in the design files (is the design instantiated?)"
    return Coverage((line_hit, line_total), toggle, kinds.get("branch", none), reason)


def _first_error(log: str) -> str:
    """The first error line of a Verilator build log (its own, else the C++ compiler's)."""
    lines = log.splitlines()
    own = [x for x in lines if x.startswith("%Error") and not x.startswith("%Error: make ")]
    found = next(iter(own), None) or next((x for x in lines if "error" in x.lower()), None)
    return one_line((found or "no error line in the build log").strip())[:_REASON_CHARS]


def _last_line(log: str) -> str:
    """``": <the run's last line>"``, or "" when it printed nothing."""
    lines = [x for x in log.splitlines() if x.strip()]
    return f": {one_line(lines[-1].strip())[:_REASON_CHARS]}" if lines else ""
