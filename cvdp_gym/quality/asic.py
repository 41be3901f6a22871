"""The ASIC flow: a design mapped to a standard-cell liberty with Yosys + ABC, timed and powered by OpenSTA.

Contract: ``measure_asic(sandbox, sources, top, liberty, clock_ns=..., scratch=..., tools=...)``
returns a ``Measurement`` with ``AsicMetrics``, or with ``failure``: one line saying why
(the first relevant tool error line, a missing top, a liberty that is not there, cells the
liberty cannot map, a combinational loop left after synthesis, a time limit). It never
raises for what the design or the tools did. Everything that reads the design runs in the
sandbox; the liberty is mounted read-only; the steps are deterministic (fixed scripts, one
thread), so one design gives the same numbers every run.

The flow, in two sandbox calls:

1. Yosys 0.40 (the root's, with its built-in ABC): ``read_verilog -sv`` (no defines;
   ``always_comb`` is read as ``always @*``, so a process that keeps a latch is counted as
   one rather than refused), ``hierarchy -check -top``, ``proc``, ``check`` (the warnings,
   ``synthesis_warnings``), ``synth -flatten``, ``check`` again (a logic loop still there
   is a failure: its timing is undefined), the clock ports (the input ports wired to a
   flip-flop's clock or a latch's enable; failing that, the input ports in the cone of
   those pins), ``dfflibmap`` and ``abc -D <clock in ps>`` to the liberty, constants to the
   liberty's tie cells (``hilomap``; else constant assignments, which OpenSTA reads too),
   ``stat -liberty`` (area in the liberty's unit, µm² for the usual ones; cell count) and
   the netlist.
2. OpenSTA 2019 (``/bin/sta`` of the quality tools folder, when given): the netlist linked
   to the liberty, one clock of ``clock_ns`` per clock port (a virtual one for a design
   with none), input and output delays 0 on the other ports; ``delay_ns`` is the data
   arrival of the path with the worst max-delay slack (``slack_ns``), ``power_uw`` the total
   of ``report_power`` (internal, switching and leakage) with the input activity set to
   ``INPUT_ACTIVITY`` (OpenSTA's own default, set explicitly). OpenSTA's Tcl commands give
   seconds and watts whatever the liberty's units (asap7's ps and fF, Nangate's ns).
"""

from __future__ import annotations

import json
import posixpath
import re
import time
from collections.abc import Mapping
from pathlib import Path

from cvdp_gym.errors import one_line
from cvdp_gym.harness.testbench import read_bounded
from cvdp_gym.quality.liberty_cells import LatchCell, LibraryCells, library_cells
from cvdp_gym.quality.metrics import AsicMetrics, Measurement
from cvdp_gym.quality.sources import (
    ALWAYS_COMB_NOTE,
    DESIGN_SUFFIXES,
    IDENTIFIER,
    has_always_comb,
    name_problem,
    yosys_text,
)
from cvdp_gym.quality.synthesis_warnings import count_warnings
from cvdp_gym.sandbox.base import Limits, Mount, Sandbox
from cvdp_gym.sandbox.paths import check_relative_path, write_tree

__all__ = ["INPUT_ACTIVITY", "POWER_KIND", "measure_asic"]

#: OpenSTA 2019's default activity of every input (transitions per clock period, duty), set
#: explicitly so the number does not move with a version; internal nodes get theirs by propagation.
INPUT_ACTIVITY = (0.1, 0.5)
POWER_KIND = (
    f"vectorless (OpenSTA 2019 report_power: inputs {INPUT_ACTIVITY[0]:g} transitions per clock period, "
    f"duty {INPUT_ACTIVITY[1]:g}, propagated; internal + switching + leakage)"
)
WORK, LIBERTY = "/quality/work", "/quality/liberty.lib"
_RESULT = "cvdp-quality: "
#: Endpoints whose worst path OpenSTA reports (one each); ``delay_ns`` is the latest arrival among them.
MAX_PATHS = 10_000


def measure_asic(
    sandbox: Sandbox,
    sources: Mapping[str, str],
    top: str,
    liberty: Path,
    *,
    clock_ns: float = 10.0,
    scratch: Path,
    tools: tuple[Path, str] | None,
    wall_s: float = 120.0,
) -> Measurement:
    """Synthesise ``sources`` (file name -> Verilog/SystemVerilog text) with ``top`` as the top
    to ``liberty`` (a host path, uncompressed), time it at ``clock_ns`` with the OpenSTA of
    ``tools`` (host folder, sandbox path; ``None``: area and cells only), within ``wall_s``.
    ``scratch``: a host folder of this run's (the caller removes it)."""
    started = time.monotonic()

    def failed(why: str, *, limited: bool = False) -> Measurement:
        return Measurement("asic", failure=one_line(why), seconds=time.monotonic() - started, limited=limited)

    problem = _bad_input(sources, top, liberty, clock_ns)
    if problem:
        return failed(problem)
    work = Path(scratch) / "work"
    work.mkdir(parents=True, exist_ok=True)
    files = {f"src/{name}": yosys_text(text) for name, text in sources.items()}
    try:
        library = library_cells(Path(liberty).read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        return failed(f"liberty unreadable: {liberty}: {exc.strerror or exc}")
    files["flow.ys"] = _yosys_script(sources, top, clock_ns, library)
    if library.latch is not None:
        files["latch_map.v"] = _latch_map(library.latch)
    write_tree(work, files)
    mounts = [Mount(work, WORK, writable=True), Mount(Path(liberty), LIBERTY)]
    outcome = sandbox.run(
        ["/bin/sh", "-c", "yosys -q -l yosys.log -s flow.ys > /dev/null 2>&1; echo $? > yosys.rc"],
        mounts=mounts, scratch=Path(scratch) / "yosys", cwd=WORK, env=_ENV, limits=_limits(wall_s),
    )
    log = read_bounded(work / "yosys.log")
    if outcome.timed_out or outcome.out_of_memory:
        return failed(f"Yosys: {'time limit' if outcome.timed_out else 'memory limit'} ({wall_s:g} s, {_limits(wall_s).memory_mb} MB)", limited=True)
    if read_bounded(work / "yosys.rc").strip() != "0":
        error = _first_error(log, "ERROR:") or outcome.output.strip()[-300:] or "failed"
        if "Can't open ABC output file" in error:
            error += " (ABC could not map the design to this liberty: it may lack an inverter or NAND)"
        return failed(f"Yosys: {error}")
    stat = _stat(read_bounded(work / "stat.json"))
    if stat is None:
        return failed("Yosys: no statistics (stat -json) written")
    cells, area, by_type = stat
    unmapped = sorted(kind for kind in by_type if kind.startswith("$"))
    if unmapped:
        return failed(f"the liberty has no cell for {', '.join(unmapped)} (left unmapped by dfflibmap/abc)")
    if cells == 0:
        return failed("no cells left after synthesis (the design drives no output from logic)")
    loops = count_warnings(read_bounded(work / "loops.txt"))["combinational_loop"]
    if loops:
        return failed(f"combinational loop left after synthesis ({loops} reported by Yosys check): timing is undefined")
    warnings = count_warnings(read_bounded(work / "front.txt"))
    clocks, note = _clocks(read_bounded(work / "clocks.txt"), read_bounded(work / "cone.txt"), read_bounded(work / "registers.txt"), top)
    notes = [note, "area in the liberty's area unit (µm² for the pinned libraries)"]
    if warnings["latch"] and any(has_always_comb(text) for text in sources.values()):
        notes.append(ALWAYS_COMB_NOTE)
    metrics = dict(liberty=Path(liberty).name, clock_ns=clock_ns, area_um2=area, cells=cells, warnings=warnings)
    if tools is None:
        notes.append("OpenSTA not available (no quality tools folder): timing and power not measured")
        return Measurement("asic", AsicMetrics(**metrics, notes=tuple(notes)), seconds=time.monotonic() - started)
    left = max(10.0, wall_s - (time.monotonic() - started))
    timed = _timing(sandbox, work, mounts, tools, top, clocks, clock_ns, Path(scratch) / "sta", left)
    if isinstance(timed, str):
        return failed(timed, limited=isinstance(timed, _LimitHit))
    delay, slack, power = timed
    if delay is None:
        notes.append("no timed path (no input or register reaches an output or register)")
    return Measurement(
        "asic",
        AsicMetrics(**metrics, delay_ns=delay, slack_ns=slack, power_uw=power, power_kind=POWER_KIND, notes=tuple(notes)),
        seconds=time.monotonic() - started,
    )


_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp"}


def _limits(wall_s: float) -> Limits:
    return Limits(wall_s=wall_s, memory_mb=4096, output_bytes=64_000)


def _bad_input(sources: Mapping[str, str], top: str, liberty: Path, clock_ns: float) -> str:
    """Why the inputs cannot be measured at all ("" when they can)."""
    problem = name_problem(sources, top)
    if problem:
        return problem
    if not (clock_ns > 0):
        return f"clock period {clock_ns!r} ns is not positive"
    if not Path(liberty).is_file():
        return f"liberty not found: {liberty}"
    return ""


def _design_files(sources: Mapping[str, str]) -> list[str]:
    """The files to read, packages first (Yosys needs a package before its users); headers only by ``include``."""
    texts = {check_relative_path(name): text for name, text in sources.items()}
    names = [name for name in texts if name.endswith(DESIGN_SUFFIXES)] or list(texts)
    package = re.compile(r"^\s*package\b", re.M)
    return sorted(names, key=lambda name: 0 if package.search(texts[name]) else 1)


def _yosys_script(sources: Mapping[str, str], top: str, clock_ns: float, cells: LibraryCells) -> str:
    files = " ".join(f"src/{name}" for name in _design_files(sources))
    folders = {posixpath.dirname(check_relative_path(n)) for n in sources}
    includes = " ".join(f"-Isrc/{folder}" if folder else "-Isrc" for folder in sorted(folders))
    state = "t:$_*FF* %ci1:+[C] t:$_DLATCH* %ci1:+[E] %u"
    hilomap = f"hilomap -singleton -hicell {cells.tie_high} -locell {cells.tie_low}\n" if cells.tie_high and cells.tie_low else ""
    latches = "techmap -map latch_map.v\n" if cells.latch else ""
    buffers = f"insbuf -buf {cells.buffer}\n" if cells.buffer else ""
    return (
        f"tee -a front.txt read_verilog -sv {includes} {files}\n"
        f"tee -a front.txt hierarchy -check -top {top}\n"
        "tee -a front.txt proc\n"
        "tee -a front.txt check\n"
        f"synth -top {top} -flatten\n"
        "tee -q -o loops.txt check\n"
        f"tee -q -o clocks.txt select -list {state} i:* %i\n"
        f"tee -q -o cone.txt select -list {state} w:* %i %ci*:-[D,E,R,S,AD,L] i:* %i\n"
        "tee -q -o registers.txt select -count t:$_*FF* t:$_DLATCH*\n"
        "setundef -zero\n"
        f"dfflibmap -liberty {LIBERTY}\n"
        f"{latches}"
        "simplemap\n"
        f"abc -liberty {LIBERTY} -D {max(1, round(clock_ns * 1000))}\n"
        "setundef -zero\n"
        "splitnets -ports\n"
        "opt_clean -purge\n"
        f"{hilomap}"
        f"{buffers}"
        "opt_clean -purge\n"
        f"tee -q -o stat.json stat -json -liberty {LIBERTY}\n"
        "write_verilog -noattr -noexpr -nohex -nodec net.v\n"
    )


def _latch_map(latch: LatchCell) -> str:
    """A techmap of Yosys's plain latches to the liberty's (a negative enable through an inverter ABC maps)."""
    ports = f".{latch.enable}(en), .{latch.data}(D), .{latch.output}(Q)"
    return "".join(
        f"module \\$_DLATCH_{polarity}_ (input E, input D, output Q);\n"
        f"  wire en = {'E' if polarity == 'P' else '~E'};\n"
        f"  {latch.name} _TECHMAP_REPLACE_ ({ports});\nendmodule\n"
        for polarity in ("P", "N")
    )


def _stat(text: str) -> tuple[int, float, dict[str, int]] | None:
    """Cells, area and cells by type from ``stat -json``'s design totals."""
    try:
        design = json.loads(text)["design"]
        return int(design["num_cells"]), float(design.get("area", 0.0)), dict(design.get("num_cells_by_type", {}))
    except (ValueError, KeyError, TypeError):
        return None


def _clocks(direct: str, cone: str, registers: str, top: str) -> tuple[list[str], str]:
    """The clock ports and a note saying which: those wired to a register's clock pin, else
    those in that pin's cone, else none (a virtual clock)."""
    count = re.search(r"(\d+) objects", registers)
    if not count or int(count.group(1)) == 0:
        return [], "combinational: a virtual clock times input-to-output paths"
    for text, how in ((direct, "wired to the flip-flops' clock pins"), (cone, "in the cone of the flip-flops' clock pins")):
        names = sorted({line.strip().split("/", 1)[-1].lstrip("\\") for line in text.splitlines() if line.strip().startswith(f"{top}/")})
        plain = [n for n in names if IDENTIFIER.match(n)]
        if plain:
            return plain, f"clock ports {', '.join(plain)} ({how})"
    return [], "registers with no clock port found: a virtual clock times the paths between ports"


def _sta_script(top: str, clocks: list[str], clock_ns: float) -> str:
    first = clocks[0] if clocks else "virtual_clock"
    define = "".join(f"  create_clock -name {c} -period $period [get_ports {{{c}}}]\n" for c in clocks) or (
        "  create_clock -name virtual_clock -period $period\n"
    )
    drop = "".join(f"  set ins [delete_from_list $ins [get_ports {{{c}}}]]\n" for c in clocks)
    return (
        f'proc cvdp_step {{what script}} {{\n  if {{[catch {{uplevel 1 $script}} msg]}} {{ puts "{_RESULT}failed $what: $msg"; exit 1 }}\n}}\n'
        f"cvdp_step read_liberty {{ read_liberty {LIBERTY} }}\n"
        "cvdp_step read_verilog { read_verilog net.v }\n"
        f"cvdp_step link_design {{ if {{![link_design {top}]}} {{ error \"link_design {top} failed\" }} }}\n"
        "cvdp_step constraints {\n"
        f"  set period [expr {{{clock_ns!r} * 1e-9 / [sta::unit_scale time]}}]\n"
        f"{define}"
        f"  set ins [all_inputs]\n{drop}"
        f"  if {{[llength $ins]}} {{ set_input_delay 0 -clock {first} $ins }}\n"
        f"  set outs [all_outputs]\n  if {{[llength $outs]}} {{ set_output_delay 0 -clock {first} $outs }}\n"
        f"  set_power_activity -input -activity {INPUT_ACTIVITY[0]} -duty {INPUT_ACTIVITY[1]}\n"
        "}\n"
        "cvdp_step timing {\n"
        f"  set ends [find_timing_paths -path_delay max -group_count {MAX_PATHS} -endpoint_count 1 -sort_by_slack]\n"
        "  if {[llength $ends]} {\n"
        "    set arrival 0.0\n"
        "    foreach e $ends { set arrival [expr {max($arrival, [$e data_arrival_time])}] }\n"
        f'    puts "{_RESULT}path $arrival [[lindex $ends 0] slack]"\n'
        "  }\n"
        "}\n"
        f'cvdp_step power {{ puts "{_RESULT}power [lrange [sta::design_power [sta::cmd_corner]] 0 3]" }}\n'
        f'puts "{_RESULT}done"\n'
    )


class _LimitHit(str):
    """A failure line of a tool a time or memory limit stopped (``Measurement.limited``)."""


def _timing(
    sandbox: Sandbox, work: Path, mounts: list[Mount], tools: tuple[Path, str], top: str,
    clocks: list[str], clock_ns: float, scratch: Path, wall_s: float,
) -> tuple[float | None, float | None, float | None] | str:
    """``(delay_ns, slack_ns, power_uw)`` from OpenSTA, or why not (one line)."""
    (work / "sta.tcl").write_text(_sta_script(top, clocks, clock_ns), encoding="utf-8")
    host, target = tools
    outcome = sandbox.run(
        [f"{target}/bin/sta", "-no_splash", "-exit", "sta.tcl"],
        mounts=[*mounts, Mount(Path(host), target)], scratch=scratch, cwd=WORK, env=_ENV, limits=_limits(wall_s),
    )
    if outcome.timed_out or outcome.out_of_memory:
        return _LimitHit(f"OpenSTA: {'time limit' if outcome.timed_out else 'memory limit'} ({wall_s:.0f} s)")
    results = {}
    for line in outcome.output.splitlines():
        if line.startswith(_RESULT):
            key, _, value = line[len(_RESULT) :].partition(" ")
            results.setdefault(key, value)
    if "failed" in results:
        return f"OpenSTA: {results['failed']}"
    if "done" not in results or "power" not in results:
        return f"OpenSTA: {_first_error(outcome.output, 'Error:') or outcome.output.strip()[-300:] or f'exit status {outcome.returncode}'}"
    try:
        power = float(results["power"].split()[3]) * 1e6
        arrival, slack = (float(v) * 1e9 for v in results["path"].split()) if "path" in results else (None, None)
    except (ValueError, IndexError):
        return f"OpenSTA: unreadable result {results}"
    return _rounded(arrival), _rounded(slack), _rounded(power)


def _rounded(value: float | None) -> float | None:
    """Six significant digits: the tools' own precision, and stable across platforms' float printing."""
    return None if value is None else float(f"{value:.6g}")


def _first_error(text: str, marker: str) -> str:
    """The first line with ``marker`` (Yosys prefixes its own with the file and line: ``a.sv:4: ERROR: ...``)."""
    return next((line.strip() for line in text.splitlines() if marker in line), "")
