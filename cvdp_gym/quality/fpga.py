"""The FPGA flow: a design's iCE40 resources (Yosys ``synth_ice40``) and its fmax (nextpnr-ice40).

Contract: ``measure_fpga(sandbox, sources, top, ...)`` synthesises ``sources`` for ``top``
and places and routes the result, both in the sandbox, and returns a ``Measurement`` of
``FpgaMetrics`` or, for a design that cannot be measured, one with ``failure``: one line
saying why (the tool's first error line, a time limit); it never raises for what the
design is (only for a ``device`` or ``clock_mhz`` the caller got wrong: ``ConfigError``).

Synthesis, Yosys 0.40 (the simulation root's): ``read_verilog -sv`` of the ``.v``/``.sv``
sources (other files are there to be included; every source folder is an include folder),
then ``synth_ice40 -top TOP -noabc9 [-dsp]`` and ``stat -json``, from which the
counts come: ``SB_LUT4`` (luts), ``SB_DFF*`` (ffs), ``SB_RAM40_4K*`` (ram_blocks),
``SB_MAC16`` (dsp_blocks), ``SB_CARRY`` (carry), over the flattened design. Options:
Yosys's defaults otherwise, but for ``-noabc9``: the classic ABC mapping, not ABC9 (the
default since 0.13), whose WebAssembly build in the pinned Yosys 0.40 traps (``wasm
unreachable``) on ordinary designs (RTLLM's ``accu``, ``counter_12``, ``freq_divbyeven``,
``freq_divbyfrac`` references); a reference and its answers must go through one mapping,
so it is the one that always runs. ``-dsp`` only where the device has ``SB_MAC16`` blocks (UltraPlus
and iCE5LP), so a multiplier maps to DSPs there and to LUTs elsewhere, as the part
would; no ``-abc2``/``-retime`` (not defaults, and they trade run time for small gains).
Yosys and its in-process ABC are single-threaded and seedless: deterministic.

Place and route, nextpnr-ice40 from the quality tools folder (``tools``: its host folder
and where it is mounted): ``--DEVICE --package P --freq CLOCK_MHZ --seed 1 --threads 1``
(one seed and one thread: the same placement every time), no pin constraints
(``--pcf-allow-unconstrained``), ``--timing-allow-fail`` (a design slower than the
target clock is measured, not refused), ``--ignore-loops`` (a latch built from LUTs is a
combinational loop to nextpnr's timing: its paths are timed as cut, not refused; the ASIC
flow's warnings count it). ``always_comb`` is read as ``always @*`` (``quality.sources``). ``fmax_mhz`` is the slowest clock's achieved
frequency in nextpnr's JSON report: nextpnr times register-to-register paths, so a
design with none (combinational, or registers only at its ports) has ``None`` and the note
``NO_CLOCKED_PATH``.
A design that needs more of something than the part has (more I/O bits than the
package's pins, more logic cells than the device) keeps its synthesis resources, with
``fmax_mhz`` ``None`` and the shortfall in ``notes`` (nextpnr's own utilisation counts);
any other nextpnr error (a combinational loop its timing analysis refuses, an unknown
package) is the measurement's ``failure``. Without ``tools`` the resources come from
synthesis alone and ``notes`` say so.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path

from cvdp_gym.errors import ConfigError
from cvdp_gym.quality.metrics import FpgaMetrics, Measurement
from cvdp_gym.quality.sources import DESIGN_SUFFIXES, name_problem, yosys_text
from cvdp_gym.sandbox.base import Limits, Mount, Sandbox, SandboxResult
from cvdp_gym.sandbox.paths import check_relative_path

__all__ = ["DEVICES", "NO_CLOCKED_PATH", "PNR_TIMEOUT_S", "SYNTH_TIMEOUT_S", "measure_fpga"]

#: nextpnr-ice40's devices (``--hx8k`` ...) and the ``synth_ice40 -device`` family of each.
DEVICES = {
    "lp384": "lp", "lp1k": "lp", "lp4k": "lp", "lp8k": "lp",
    "hx1k": "hx", "hx4k": "hx", "hx8k": "hx",
    "up3k": "u", "up5k": "u", "u1k": "u", "u2k": "u", "u4k": "u",
}  # fmt: skip
#: Devices with ``SB_MAC16`` DSP blocks (UltraPlus, iCE5LP): synthesised with ``-dsp``.
DSP_DEVICES = frozenset({"up3k", "up5k", "u1k", "u2k", "u4k"})
#: Wall-time limits of the two steps (seconds).
SYNTH_TIMEOUT_S, PNR_TIMEOUT_S = 300.0, 180.0
#: The note of a design nextpnr finds nothing to time in: its fmax covers paths from one
#: flip-flop to another on the same clock, not those from or to the ports.
NO_CLOCKED_PATH = "no clocked path: no register-to-register path for nextpnr to time"
#: Where the design's folder is in the sandbox (sources under ``src``).
WORK = "/work"
#: Largest statistics / report file read back (bytes); nextpnr's report lists critical paths.
MAX_READ_BYTES = 64 * 1024 * 1024
#: A tool's error line: ``ERROR: ...``, or Yosys's ``file.sv:3: ERROR: ...`` (not a line of
#: the design's own text that merely contains the word).
_ERROR_LINE = re.compile(r"(\S+:\d+: )?ERROR: ")
#: nextpnr's "Device utilisation" lines, e.g. ``Info: 	  SB_IO:   451/   206   218%``.
_UTILISATION = re.compile(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%", re.M)
_RESOURCE_WORDS = {"SB_IO": "I/O bits", "ICESTORM_LC": "logic cells", "ICESTORM_RAM": "RAM blocks", "ICESTORM_DSP": "DSP blocks"}
_PART = {"SB_IO": "the package"}


def measure_fpga(
    sandbox: Sandbox,
    sources: Mapping[str, str],
    top: str,
    *,
    clock_mhz: float = 100.0,
    device: str = "hx8k",
    package: str = "ct256",
    scratch: Path,
    tools: tuple[Path, str] | None,
) -> Measurement:
    """Measure ``top`` of ``sources`` (file name -> Verilog/SystemVerilog text) on ``device``
    in ``package`` at ``clock_mhz``; ``scratch``: a host folder of this run's; ``tools``: the
    quality tools folder and its mount point (``None``: synthesis only). See the module docstring."""
    if device not in DEVICES:
        raise ConfigError(f"unknown iCE40 device {device!r}; expected one of {', '.join(DEVICES)}")
    if not clock_mhz > 0:
        raise ConfigError(f"clock_mhz must be positive, got {clock_mhz!r}")
    started = time.monotonic()

    def failed(why: str, *, limited: bool = False) -> Measurement:
        return Measurement(flow="fpga", failure=why, seconds=time.monotonic() - started, limited=limited)

    problem = _check_names(sources, top)
    if problem:
        return failed(problem)
    work = scratch / "work"
    (work / "src").mkdir(parents=True, exist_ok=True)
    for left in ("design.json", "stat.json", "report.json", "pnr.log"):  # a reused scratch's
        (work / left).unlink(missing_ok=True)
    for name, text in sources.items():
        path = work / "src" / check_relative_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yosys_text(text), encoding="utf-8")
    (work / "synth.ys").write_text(synth_script(sources, top, device), encoding="utf-8")

    synth = _run(sandbox, ["yosys", "-q", "-s", f"{WORK}/synth.ys"], work, scratch / "synth", SYNTH_TIMEOUT_S)
    if synth.timed_out:
        return failed(f"synthesis timed out after {SYNTH_TIMEOUT_S:g} s", limited=True)
    if synth.returncode != 0:
        return failed("synthesis failed: " + _first_error(synth), limited=synth.out_of_memory)
    counts = _cell_counts(_read_json(work / "stat.json"))
    if counts is None:
        return failed("synthesis left no statistics (stat.json)")
    resources = {
        "luts": counts.get("SB_LUT4", 0),
        "ffs": sum(n for cell, n in counts.items() if cell.startswith("SB_DFF")),
        "ram_blocks": sum(n for cell, n in counts.items() if cell.startswith("SB_RAM40_4K")),
        "dsp_blocks": counts.get("SB_MAC16", 0),
        "carry": counts.get("SB_CARRY", 0),
    }

    def measured(fmax: float | None, note: str) -> Measurement:
        metrics = FpgaMetrics(device=device, **resources, fmax_mhz=fmax, notes=(note,) if note else ())
        return Measurement(flow="fpga", metrics=metrics, seconds=time.monotonic() - started)

    if tools is None:
        return measured(None, "place and route not run: the quality tools (nextpnr-ice40) are not installed")
    folder, target = tools
    argv = [
        f"{target}/bin/nextpnr-ice40", f"--{device}", "--package", package, "--json", "design.json",
        "--freq", f"{clock_mhz:g}", "--seed", "1", "--threads", "1", "--pcf-allow-unconstrained",
        "--timing-allow-fail", "--ignore-loops", "--report", "report.json", "-q", "-l", "pnr.log",
    ]  # fmt: skip
    pnr = _run(sandbox, argv, work, scratch / "pnr", PNR_TIMEOUT_S, Mount(folder, target))
    if pnr.timed_out:
        return failed(f"place and route timed out after {PNR_TIMEOUT_S:g} s", limited=True)
    if pnr.returncode != 0:
        shortfall = _shortfall(_read_text(work / "pnr.log"))
        if shortfall:
            return measured(None, "place and route skipped: " + shortfall)
        return failed("place and route failed: " + _first_error(pnr), limited=pnr.out_of_memory)
    report = _read_json(work / "report.json")
    if not isinstance(report, dict):
        return failed("place and route left no report (report.json)")
    achieved = [clock.get("achieved") for clock in (report.get("fmax") or {}).values() if isinstance(clock, dict)]
    achieved = [float(mhz) for mhz in achieved if isinstance(mhz, (int, float))]
    if not achieved:
        return measured(None, NO_CLOCKED_PATH)
    return measured(round(min(achieved), 2), "")


def synth_script(sources: Mapping[str, str], top: str, device: str) -> str:
    """The Yosys script: read the Verilog sources (every source's folder an include folder),
    ``synth_ice40`` for ``device``, ``stat -json``."""
    names = [check_relative_path(name) for name in sources]
    files = [name for name in names if name.endswith(DESIGN_SUFFIXES)]  # in the caller's order, as compiled
    folders = sorted({os.path.dirname(name) or "." for name in names})
    includes = " ".join(f"-I{folder}" for folder in folders)
    dsp = " -dsp" if device in DSP_DEVICES else ""
    return (
        f"read_verilog -sv {includes} {' '.join(files)}\n"
        f"synth_ice40 -top {top} -noabc9{dsp} -json {WORK}/design.json\n"
        f"tee -q -o {WORK}/stat.json stat -json\n"
    )


def _check_names(sources: Mapping[str, str], top: str) -> str:
    """Why the sources or the top cannot go into a Yosys script ("" when they can)."""
    problem = name_problem(sources, top)
    if not problem and not any(name.endswith(DESIGN_SUFFIXES) for name in sources):
        return "no Verilog sources (.v or .sv) to synthesise"
    return problem


def _run(sandbox: Sandbox, argv: list[str], work: Path, scratch: Path, wall_s: float, *extra: Mount) -> SandboxResult:
    """One tool in the sandbox, in ``work`` (``/work``, writable; sources in ``/work/src``)."""
    scratch.mkdir(parents=True, exist_ok=True)
    return sandbox.run(
        argv,
        mounts=[Mount(work, WORK, writable=True), *extra],
        scratch=scratch,
        cwd=f"{WORK}/src" if argv[0] == "yosys" else WORK,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp"},
        limits=Limits(wall_s=wall_s, memory_mb=4096, output_bytes=20_000),
    )


def _first_error(result: SandboxResult) -> str:
    """The tool's first error line, else its exit status and last line."""
    lines = [line.strip() for line in result.output.splitlines() if line.strip()]
    for line in lines:
        if _ERROR_LINE.match(line):
            return line[:300]
    if result.out_of_memory:
        return "out of memory"
    last = f": {lines[-1][:200]}" if lines else ""
    return f"exit status {result.returncode}{last}"


def _shortfall(log: str) -> str:
    """What the design needs more of than the part has, from nextpnr's utilisation lines ("" if nothing)."""
    for resource, used, available in _UTILISATION.findall(log):
        if int(used) > int(available):
            words = _RESOURCE_WORDS.get(resource, resource)
            part = _PART.get(resource, "the device")
            return f"{used} {words}, {part} has {available}"
    return ""


def _cell_counts(stat: object) -> dict[str, int] | None:
    """Cells by type over the whole design from ``stat -json`` (its ``design`` totals when
    there is a hierarchy left, else the one module's); ``None`` when it has neither."""
    if not isinstance(stat, dict):
        return None
    modules = stat.get("modules")
    entry = stat.get("design")
    if not isinstance(entry, dict) and isinstance(modules, dict) and len(modules) == 1:
        entry = next(iter(modules.values()))
    if not isinstance(entry, dict) or not isinstance(entry.get("num_cells_by_type", {}), dict):
        return None
    return {str(cell): int(n) for cell, n in entry.get("num_cells_by_type", {}).items() if isinstance(n, int)}


def _read_text(path: Path) -> str:
    """A file the tools wrote ("" when missing, a link, or larger than ``MAX_READ_BYTES``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    with open(fd, "rb") as handle:
        if os.fstat(handle.fileno()).st_size > MAX_READ_BYTES:
            return ""
        return handle.read().decode("utf-8", "replace")


def _read_json(path: Path) -> object:
    """A JSON file the tools wrote, or ``None``."""
    try:
        return json.loads(_read_text(path))
    except ValueError:
        return None
