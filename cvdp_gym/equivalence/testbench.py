"""The generated differential test bench: both designs in one simulation, compared every cycle.

Contract: ``bench_files(design, stimulus, names, secret, strict_x=...)`` returns the test
bench's source and its two data files (``RunNames`` gives their names); ``simulation_script``
compiles and runs them on Icarus (``iverilog -g2012``, ``vvp``) or Verilator (``--binary
--timing``); ``read_results(lines, design)`` reads the test bench's own lines (those that
carried the secret; ``cvdp_gym.harness.testbench.read_log``) into a ``SimulationResult``.

One cycle is 10 time units: the primary clock rises at +0, the cycle's input vector is
applied at +1, other clocks toggle at +3 and +7 (clock j has a half period of 2j+1 such
slots), the primary clock falls at +5, and the outputs are compared at +9, once inputs and
both edges have settled (combinational designs: inputs at +1, compare at +9). Each input
reaches each design through its own wire, so an answer that drives its inputs cannot reach
the reference. Cycles before ``Stimulus.compare_from`` (the first reset) are not compared.
An output mismatches when ``ref !== dut``; with X as a don't-care (the default), only when
also ``ref !== (ref ^ dut ^ ref)``: that holds exactly when some bit the reference knows
(0 or 1) differs from the answer's bit, which may not be X (VerilogEval's rule).

The results are printed with the per-run secret, built at run time from a constant in the
test bench and a mask read from a file, so the secret is in no file the answer can name or
read and in no compiled constant a scan of the binary finds. The stimulus ends with a
sentinel word; a stimulus that did not load is reported, not compared. Icarus's compiled
program is fed to ``vvp`` through a pipe and deleted; Verilator's binary stays readable
through ``/proc/self/exe`` while it runs (the sandbox runs as root, so no file mode stops
that): an answer that parses its own executable for the data files' names is the
out-of-scope class of one that scans its own process's memory.

**Coverage** (``Coverage``): every bit of the reference's outputs and registers
(:mod:`.state`, read through hierarchical names into the reference's instance, which only
the test bench can name) is watched from one compared cycle to the next; a bit is covered
once it has risen and fallen between compared cycles whose vectors assert no reset (a
change the reset made says nothing of the logic), from its last known value (cycles where the
reference leaves it X, a don't-care, are skipped). A bench whose probes a simulator
rejects is rebuilt without them by the flow (``probes=False``): the measure is then absent.

Verilator is 2-state: there is no X, registers start at zero in both designs, so the
don't-care and strict rules coincide there and a reference that leaves outputs X is
compared as zeros (use Icarus, the default, for such references). It suits long runs: its
build costs about 6 s, then a cycle costs a fifth of Icarus's on a mid-sized design.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field

from cvdp_gym.equivalence.ports import Design, Port
from cvdp_gym.equivalence.sources import PRELUDE, RunNames
from cvdp_gym.equivalence.stimulus import Stimulus
from cvdp_gym.harness.testbench import fed_through_a_pipe

#: The simulation's own limit: a base plus a generous time per cycle (a design that loops
#: at one instant must not hold a worker for minutes), at most ``MAX_SIM_S``; Verilator's
#: build limit (seconds).
SIM_BASE_S, SIM_PER_CYCLE_S, MAX_SIM_S, VERILATOR_BUILD_S = 10.0, 1e-4, 600.0, 240
SIM_LOG, COMPILE_LOG = "sim.log", "sim_compile.log"
ICARUS = "iverilog -g2012"
#: Verilator: lint warnings are the answer's business; optimise the design, not the runtime
#: (the runtime's compile is most of a build).
VERILATOR = (
    "verilator --binary --timing -j 2 -Wno-fatal -Wno-lint -Wno-style --timescale 1ns/1ps"
    ' -MAKEFLAGS "OPT_FAST=-O1 OPT_SLOW=-O0 OPT_GLOBAL=-O0"'
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_LINE = re.compile(r"^ (FIRST|OUT|RESULT|MISMATCHES|ACTIVITY|COVER|DONE|STIMULUS-UNREADABLE)\b(.*)$")
#: Bits named in ``Coverage.missed`` at most.
MAX_MISSED = 8


@dataclass
class Coverage:
    """How much of the reference the simulation moved: bits of its outputs and registers
    that rose and fell between two compared cycles without a reset (see the module docstring)."""

    bits: int = 0
    covered: int = 0
    #: The first bits not covered, each with what it never did (``count[9] never fell``).
    missed: list[str] = field(default_factory=list)
    #: False: no measure (the bench ran without probes, or the design has too much state).
    measured: bool = False

    @property
    def complete(self) -> bool:
        return self.measured and self.covered == self.bits

    def as_dict(self) -> dict[str, object]:
        return {"measured": self.measured, "bits": self.bits, "covered": self.covered, "missed": list(self.missed)}


@dataclass
class SimulationResult:
    """What the test bench reported."""

    verdict: str  # "match" | "mismatch" | "error"
    compared: int = 0
    matched: int = 0
    mismatches: dict[str, int] = field(default_factory=dict)
    #: The first mismatching cycle: {"cycle", "expected": {output: value}, "got": {...}}.
    first: dict | None = None
    why: str = ""
    #: Compared cycles in which some reference output changed: 0 says the stimulus never
    #: moved the reference (a reset of the wrong polarity holding it, an input it waits for).
    reference_changes: int = 0
    coverage: Coverage = field(default_factory=Coverage)


def bench_files(
    design: Design, stimulus: Stimulus, names: RunNames, secret: str, *, strict_x: bool, probes: bool = True,
) -> dict[str, str]:
    """The test bench, its stimulus and its key mask, by file name (``probes``: measure the
    coverage of the reference's registers, through hierarchical names)."""
    key = int.from_bytes(secret.encode(), "big")
    key_bits = 8 * len(secret.encode())
    mask = secrets.randbits(key_bits)
    sentinel = secrets.randbits(stimulus.width)
    digits = (stimulus.width + 3) // 4
    points = _probes(design, names) if probes else None
    return {
        names.tb_file: _bench(design, stimulus, names, key ^ mask, key_bits, sentinel, strict_x, points),
        names.stimulus_file: stimulus.hex_lines() + f"{sentinel:0{digits}x}\n",
        names.key_file: f"{mask:0{(key_bits + 3) // 4}x}\n",
    }


def sim_limit(cycles: int) -> int:
    """Seconds the simulation of ``cycles`` cycles may run."""
    return int(min(MAX_SIM_S, SIM_BASE_S + SIM_PER_CYCLE_S * cycles))


def simulation_script(
    names: RunNames, answer: str, simulator: str, *, cycles: int, run: bool = True, limit: int | None = None,
) -> str:
    """Shell lines that build the simulation and, when ``run``, run it (within ``limit``
    seconds, default ``sim_limit(cycles)``). They leave ``built_<tag>`` once the build
    succeeded, ``sim.log``, and ``sim_status_<tag>`` (the run's exit status)."""
    sources = f"{names.prelude_file(0)} {names.ref_file} {names.prelude_file(1)} {answer} {names.tb_file}"
    status, built = f"sim_status_{names.file_tag}", f"built_{names.file_tag}"
    limit = sim_limit(cycles) if limit is None else limit
    if simulator == "verilator":
        obj = f"obj_{names.file_tag}"
        exe = f"{obj}/simv"
        build = (
            f"timeout {VERILATOR_BUILD_S} {VERILATOR} --top-module {names.tb_module} -Mdir {obj} -o simv "
            f"{sources} > {COMPILE_LOG} 2>&1\n"
            f"if [ -x {exe} ]; then find {obj} -type f ! -name simv -delete; fi\n"
        )
        execute = f"timeout {limit} ./{exe} > {SIM_LOG} 2>&1\necho $? > {status}\n"
    else:
        exe = f"simv_{names.file_tag}"
        build = f"{ICARUS} -s {names.tb_module} -o {exe} {sources} > {COMPILE_LOG} 2>&1\n"
        execute = fed_through_a_pipe(exe, f"timeout {limit} vvp -n /dev/stdin > {SIM_LOG} 2>&1")
        execute += f"echo $status > {status}\n"
    return (
        build
        + f"rm -f {names.ref_file} {names.tb_file}\n"
        + f"if [ -e {exe} ]; then\n"
        + f"touch {built}\n"
        + (execute if run else "")
        + "fi\n"
        + f"rm -rf {exe} obj_{names.file_tag}\n"
    )


def prelude_files(names: RunNames) -> dict[str, str]:
    return {names.prelude_file(0): PRELUDE, names.prelude_file(1): PRELUDE}


def coverage_points(design: Design) -> list[tuple[str, int]] | None:
    """What the coverage watches, (name, width): the reference's outputs, then its registers;
    None when the design has too much state to probe."""
    if design.state is None:
        return None
    return [(p.name, p.width) for p in design.outputs] + [(reg.path, reg.width) for reg in design.state]


def _probes(design: Design, names: RunNames) -> list[tuple[str, int]]:
    """``coverage_points`` as the bench names them (outputs by their wires, registers by
    hierarchical names into the reference's instance)."""
    points = coverage_points(design) or []
    outputs = len(design.outputs)
    return [
        (f"cvdp_ro{j}" if j < outputs else f"{names.ref_instance}.{name}", width) for j, (name, width) in enumerate(points)
    ]


def read_results(lines: list[str], design: Design, *, probes: bool = True) -> SimulationResult:
    """The test bench's verdict from its own (trusted) lines (``probes``: as ``bench_files``)."""
    outputs = design.outputs
    result = SimulationResult("error", mismatches={p.name: 0 for p in outputs})
    points = (coverage_points(design) if probes else None) or []
    cover: dict[int, tuple[str, str]] = {}
    done = False
    expected: dict[str, str] = {}
    got: dict[str, str] = {}
    for line in lines:
        match = _LINE.match(line)
        if not match:
            continue
        word, rest = match.group(1), match.group(2).split()
        try:
            if word == "STIMULUS-UNREADABLE":
                result.why = "the stimulus file did not load"
                return result
            if word == "RESULT":
                result.compared, result.matched = int(rest[0]), int(rest[1])
            elif word == "ACTIVITY":
                result.reference_changes = int(rest[0])
            elif word == "COVER":
                cover[int(rest[0])] = (rest[1], rest[2])
            elif word == "MISMATCHES":
                result.mismatches[outputs[int(rest[0])].name] = int(rest[1])
            elif word == "FIRST" and result.first is None:
                result.first = {"cycle": int(rest[0]), "inputs": {}, "expected": expected, "got": got}
            elif word == "OUT":
                port = outputs[int(rest[0])]
                expected[port.name], got[port.name] = literal(port.width, rest[1]), literal(port.width, rest[2])
            elif word == "DONE":
                done = True
        except (IndexError, ValueError):
            continue
    if not done:
        result.why = "the simulation ended before the test bench finished (an error, $finish or $stop in the design?)"
        return result
    if points and len(cover) == len(points):
        result.coverage = _coverage(points, cover)
    if result.first is not None:  # only the outputs that differ
        for name in list(expected):
            if expected[name] == got[name]:
                del expected[name], got[name]
    result.verdict = "match" if result.compared and result.matched == result.compared else "mismatch"
    if not result.compared:
        result.verdict, result.why = "error", "no cycle was compared"
    return result


def _coverage(points: list[tuple[str, int]], cover: dict[int, tuple[str, str]]) -> Coverage:
    """Coverage from the bench's ``COVER j rises falls`` lines (bit strings, most significant first)."""
    found = Coverage(measured=True)
    for j, (name, width) in enumerate(points):
        rises, falls = (bits.lower()[-width:].rjust(width, "0") for bits in cover[j])
        for bit in range(width):
            rose, fell = rises[width - 1 - bit] == "1", falls[width - 1 - bit] == "1"
            found.bits += 1
            found.covered += rose and fell
            if not (rose and fell) and len(found.missed) < MAX_MISSED:
                never = "never rose or fell" if not (rose or fell) else "never fell" if rose else "never rose"
                found.missed.append(f"{name}[{bit}] {never}" if width > 1 else f"{name} {never}")
    return found


def literal(width: int, bits: str) -> str:
    """A value as Verilog writes it: ``8'h2a`` when every bit is known, else ``8'b01x0_1z00``."""
    bits = bits.lower()[-width:].rjust(width, "0")
    if set(bits) <= {"0", "1"}:
        return f"{width}'h{int(bits, 2):x}" if width > 1 else f"1'b{bits}"
    return f"{width}'b{bits}"


def value_literal(port: Port, value: int) -> str:
    return f"{port.width}'h{value:x}" if port.width > 1 else f"1'b{value}"


def ident(name: str) -> str:
    """``name`` as a Verilog identifier (escaped when it is not a simple one)."""
    return name if _IDENT.fullmatch(name) else f"\\{name} "


def _decl(port: Port, kind: str, name: str) -> str:
    return f"  {kind} [{port.width - 1}:0] {name};\n"


def _bench(
    design: Design, stimulus: Stimulus, names: RunNames, masked_key: int, key_bits: int, sentinel: int, strict_x: bool,
    points: list[tuple[str, int]] | None,
) -> str:
    inputs, outputs, clocks = design.inputs, design.outputs, design.clocks
    outs = range(len(outputs))
    n, width = stimulus.cycles, stimulus.width
    index = {p.name: i for i, p in enumerate(inputs)}
    lines = ["`resetall\n`timescale 1ns/1ps\n", f"module {names.tb_module};\n"]
    for i, port in enumerate(inputs):
        lines.append(_decl(port, "reg", f"cvdp_i{i}"))
        lines.append(f"  wire [{port.width - 1}:0] cvdp_ri{i} = cvdp_i{i};\n")
        lines.append(f"  wire [{port.width - 1}:0] cvdp_di{i} = cvdp_i{i};\n")
    for k, port in enumerate(outputs):
        lines.append(_decl(port, "wire", f"cvdp_ro{k}") + _decl(port, "wire", f"cvdp_do{k}"))
    sides = ((names.ref_prefix + design.top, names.ref_instance, "r"), (design.top, names.dut_instance, "d"))
    for module, instance, side in sides:
        connections = [f".{ident(p.name)}(cvdp_{side}i{i})" for i, p in enumerate(inputs)]
        connections += [f".{ident(p.name)}(cvdp_{side}o{k})" for k, p in enumerate(outputs)]
        lines.append(f"  {ident(module)} {instance} (\n    " + ",\n    ".join(connections) + "\n  );\n")
    lines += [_decl(port, "reg", f"cvdp_po{k}") for k, port in enumerate(outputs)]  # the last compared values
    for j, (_, bits) in enumerate(points or []):  # coverage: the last value, rises and falls seen
        lines.append(f"  bit [{bits - 1}:0] cvdp_n1_{j}, cvdp_n0_{j}, cvdp_k1_{j}, cvdp_k0_{j}, cvdp_cr{j}, cvdp_cf{j};\n")
    lines.append("  reg cvdp_quiet, cvdp_was_quiet = 1'b0;\n")
    changed = " || ".join(f"cvdp_po{k} !== cvdp_ro{k}" for k in range(len(outputs))) or "1'b0"
    lines.append(
        f"  reg [{width - 1}:0] cvdp_stim [0:{n}];\n"
        f"  reg [{key_bits - 1}:0] cvdp_mask [0:0];\n  reg [{key_bits - 1}:0] cvdp_key;\n"
        f"  integer cvdp_cycle, cvdp_compared, cvdp_matched, cvdp_first, cvdp_changes;\n"
        f"  integer cvdp_mm [0:{max(1, len(outputs)) - 1}];\n  reg cvdp_bad;\n"
    )
    driven = [f"cvdp_i{index[p.name]}" for p in stimulus.driven]
    apply = f"{{{', '.join(driven)}}} = cvdp_stim[cvdp_cycle];" if driven else ";"
    lines.append(
        "  initial begin\n"
        f'    $readmemh("{names.stimulus_file}", cvdp_stim);\n'
        f'    $readmemh("{names.key_file}", cvdp_mask);\n'
        f"    cvdp_key = {key_bits}'h{masked_key:x} ^ cvdp_mask[0];\n"
        f"    if (cvdp_stim[{n}] !== {width}'h{sentinel:x}) begin\n"
        '      $display("%s STIMULUS-UNREADABLE", cvdp_key);\n      $finish;\n    end\n'
        "    cvdp_compared = 0; cvdp_matched = 0; cvdp_first = -1; cvdp_changes = 0;\n"
        f"    for (cvdp_cycle = 0; cvdp_cycle < {max(1, len(outputs))}; cvdp_cycle = cvdp_cycle + 1)\n"
        "      cvdp_mm[cvdp_cycle] = 0;\n"
        + "".join(f"    cvdp_i{index[c]} = 1'b0;\n" for c in clocks)
        + ("    cvdp_cycle = 0;\n    " + apply + "\n" if driven else "")
        + "    #10;\n"
        f"    for (cvdp_cycle = 0; cvdp_cycle < {n}; cvdp_cycle = cvdp_cycle + 1) begin\n"
        + (f"      cvdp_i{index[clocks[0]]} = 1'b1;\n" if clocks else "")
        + f"      #1 {apply}\n"
        + f"      #2 {_toggles(clocks, index, 0)}\n"
        + (f"      #2 cvdp_i{index[clocks[0]]} = 1'b0;\n" if clocks else "      #2;\n")
        + f"      #2 {_toggles(clocks, index, 1)}\n"
        + "      #2 cvdp_bad = 1'b0;\n"
        + f"      if (cvdp_cycle >= {stimulus.compare_from}) begin\n"
        + "".join(_compare(k, strict_x) for k in range(len(outputs)))
        + f"        if (cvdp_compared > 0 && ({changed})) cvdp_changes = cvdp_changes + 1;\n"
        + _coverage_update(points or [], _reset_asserted(design, index))
        + "        cvdp_compared = cvdp_compared + 1;\n"
        "        if (!cvdp_bad) cvdp_matched = cvdp_matched + 1;\n"
        "        else if (cvdp_first < 0) begin\n"
        "          cvdp_first = cvdp_cycle;\n"
        '          $display("%s FIRST %0d", cvdp_key, cvdp_cycle);\n'
        + "".join(f'          $display("%s OUT {k} %b %b", cvdp_key, cvdp_ro{k}, cvdp_do{k});\n' for k in outs)
        + "        end\n"
        + "".join(f"        cvdp_po{k} = cvdp_ro{k};\n" for k in range(len(outputs)))
        + "      end\n      #1;\n    end\n"
        '    $display("%s RESULT %0d %0d", cvdp_key, cvdp_compared, cvdp_matched);\n'
        '    $display("%s ACTIVITY %0d", cvdp_key, cvdp_changes);\n'
        + "".join(f'    $display("%s MISMATCHES {k} %0d", cvdp_key, cvdp_mm[{k}]);\n' for k in range(len(outputs)))
        + "".join(f'    $display("%s COVER {j} %b %b", cvdp_key, cvdp_cr{j}, cvdp_cf{j});\n' for j in range(len(points or [])))
        + '    $display("%s DONE", cvdp_key);\n    $finish;\n  end\nendmodule\n'
    )
    return "".join(lines)


def _reset_asserted(design: Design, index: dict[str, int]) -> str:
    """A Verilog expression: this cycle's vector asserts some reset."""
    tests = [f"cvdp_i{index[r.name]} === 1'b{r.asserted}" for r in design.resets if r.name in index]
    return " || ".join(tests) or "1'b0"


def _coverage_update(points: list[tuple[str, int]], in_reset: str) -> str:
    """Per compared cycle, each point's bits seen at 1 and at 0 (``n1``, ``n0``: 2-state, so an
    X is neither), and those last seen at 1 and at 0 (``k1``, ``k0``): a bit known at 0 then
    at 1 rose (X cycles between are skipped: an X in the reference is a don't-care). When this
    cycle's or the last one's vector asserts a reset, nothing is counted and what was last
    seen is forgotten, so no change a reset made counts."""
    if not points:
        return ""
    count = "".join(
        f"          cvdp_cr{j} = cvdp_cr{j} | (cvdp_k0_{j} & cvdp_n1_{j}); cvdp_cf{j} = cvdp_cf{j} | (cvdp_k1_{j} & cvdp_n0_{j});\n"
        for j in range(len(points))
    )
    forget = "".join(f"          cvdp_k1_{j} = 0; cvdp_k0_{j} = 0;\n" for j in range(len(points)))
    remember = "".join(
        f"        cvdp_k1_{j} = (cvdp_k1_{j} & ~cvdp_n0_{j}) | cvdp_n1_{j}; cvdp_k0_{j} = (cvdp_k0_{j} & ~cvdp_n1_{j}) | cvdp_n0_{j};\n"
        for j in range(len(points))
    )
    return (
        "".join(f"        cvdp_n1_{j} = {name}; cvdp_n0_{j} = ~{name};\n" for j, (name, _) in enumerate(points))
        + f"        cvdp_quiet = !({in_reset});\n"
        + "        if (cvdp_compared > 0 && cvdp_quiet && cvdp_was_quiet) begin\n"
        + count
        + "        end else begin\n"
        + forget
        + "        end\n"
        + remember
        + "        cvdp_was_quiet = cvdp_quiet;\n"
    )


def _toggles(clocks: tuple[str, ...], index: dict[str, int], slot: int) -> str:
    """Statements that toggle the secondary clocks due in this half-cycle slot (none: ``;``)."""
    parts = [
        f"if (((2 * cvdp_cycle + {slot}) % {2 * j + 1}) == 0) cvdp_i{index[name]} = ~cvdp_i{index[name]};"
        for j, name in enumerate(clocks) if j > 0
    ]
    return " ".join(parts) if parts else ";"


def _compare(k: int, strict_x: bool) -> str:
    ref, dut = f"cvdp_ro{k}", f"cvdp_do{k}"
    differs = f"{ref} !== {dut}" if strict_x else f"{ref} !== {dut} && {ref} !== ({ref} ^ {dut} ^ {ref})"
    return f"        if ({differs}) begin cvdp_mm[{k}] = cvdp_mm[{k}] + 1; cvdp_bad = 1'b1; end\n"
