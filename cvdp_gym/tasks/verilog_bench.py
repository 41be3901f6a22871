"""A model's Verilog test bench run on the reference design and on mutants, each run sealed.

Contract: ``run_verilog_designs(sandbox, bench, design_texts, sim_s=, limits=, seed=)`` returns
one :class:`~cvdp_gym.tasks.bench_verdicts.DesignRun` per design (the reference first) and
never raises on what the bench or the designs hold: the bench (``tb.sv``) is compiled with each
design in turn (Icarus 13, ``-g2012``), each design as ``design.sv`` with the same module
names, and simulated under its own limit (``timeout -s KILL sim_s``); what the bench wrote is
read by :func:`~cvdp_gym.tasks.bench_verdicts.bench_verdict`. The cocotb bench's run is
:mod:`cvdp_gym.tasks.cocotb_bench`.

**Sealed runs.** One sandbox run (one per design would double the cost of an answer), in
which every design's run is apart from the others':

- each run has a folder of its own, named at random per sandbox run, that holds only the
  bench and that one design (``tb.sv``, ``design.sv``);
- as soon as the run ends, everything it wrote but its four logs is deleted in one ``rm``:
  the simulation, the files in its folder, ``/tmp``, anything new in ``/work``; nothing a run
  writes outlives it, and no log is read before every run has ended;
- the reference runs first (a bench that does not build or finish there is not run on the
  mutants) and **again**, at a position among the mutants drawn with the run's ``seed``:
  a bench that tells the first run from the later ones (a marker, a replayed trace) fails the
  reference's second run, which is a false alarm like any other
  (:func:`reference_verdict`).

What keeps a bench from naming another run's folder at all is the answer gate the flow runs
first (:mod:`cvdp_gym.tasks.testbench_flow`): a Verilog bench may call no file task of
any name (``$fopen``, ``$readmem*``...: the ``BENCH`` allowlist of
:mod:`cvdp_gym.gate.system_tasks`) but a waveform dump to a plain name of its own folder. The
sandbox's process is root in its own namespace, so file modes could not hide a folder from it;
the random names, the deletions and the repeated reference are the second line (a bench past
the gate that leaves a marker, diffs against the reference's file or replays the first run's
trace catches nothing: ``tests/cvdp_gym/tasks/test_sealed_benches.py``). Measured with
``scripts/bench_verification.py`` and on the counter's 9 designs: the same seconds per answer
as the shared folder it replaces (one run more, one ``rm`` where a ``find`` was).
"""

from __future__ import annotations

import dataclasses
import random
import secrets
from pathlib import Path

from cvdp_gym.harness.testbench import run_script
from cvdp_gym.sandbox.base import Limits, Sandbox
from cvdp_gym.tasks.bench_verdicts import DesignRun, bench_verdict
from cvdp_gym.tasks.names import BENCH_FILE, DESIGN_FILE

__all__ = ["reference_verdict", "run_order", "run_verilog_designs"]

_LOGS = ("compile.rc", "compile.log", "sim.rc", "sim.log")
_NOT_RUN = "not run (the bench did not pass the reference, or the run stopped first)"


def run_order(count: int, seed: int | None) -> list[int]:
    """The designs' run order (indices into the designs, 0 the reference): the reference first,
    the mutants in order, and the reference once more at a position among the mutants drawn
    with ``seed`` (after at least one mutant; none without mutants)."""
    if count <= 1:
        return list(range(count))
    mutants = list(range(1, count))
    at = random.Random(f"reference-position:{seed}").randint(1, len(mutants))
    return [0, *mutants[:at], 0, *mutants[at:]]


def reference_verdict(first: DesignRun, again: DesignRun | None) -> DesignRun:
    """The reference's verdict from its two runs: its first, unless the second disagrees
    (a bench whose verdict depends on when it runs is a false alarm)."""
    if again is None or not (first.built and first.passed) or (again.built and again.passed):
        return first
    why = f"the bench's verdict on the reference changed when it ran again after other designs: {again.why}"
    return DesignRun(first.built, False, why[:300])


def run_verilog_designs(
    sandbox: Sandbox, bench: str, design_texts: list[str], *, sim_s: float, limits: Limits, keep_dir: Path | None = None,
    seed: int | None = None,
) -> list[DesignRun]:
    """The Verilog bench ``bench`` on each of ``design_texts`` (the reference first), each run
    sealed from the others (see the module doc); ``seed`` draws where the reference runs again."""
    if not design_texts:
        return []
    order = run_order(len(design_texts), seed)
    prefix = f"s{secrets.token_hex(8)}_"  # each run's folder: a name no bench can guess
    files: dict[str, str] = {}
    for k, i in enumerate(order):
        files |= {f"{prefix}{k}/{BENCH_FILE}": bench, f"{prefix}{k}/{DESIGN_FILE}": design_texts[i]}
    kept = "|".join(f'"$d"/{name}' for name in _LOGS)
    script = (
        # After each run: everything it wrote goes (its folder's files but the logs, /tmp, and
        # anything new in /work), in one ``rm``; the runs' own folders stay.
        "clean() {\n  d=$1; set --\n"
        "  for e in /tmp/* /tmp/.[!.]* /tmp/..?* /work/* /work/.[!.]* /work/..?* \"$d\"/* \"$d\"/.[!.]* \"$d\"/..?*; do\n"
        "    [ -e \"$e\" ] || [ -L \"$e\" ] || continue\n"
        f"    case \"$e\" in {kept}) ;; \"$d\"/*) set -- \"$@\" \"$e\" ;; /work/{prefix}*) ;; *) set -- \"$@\" \"$e\" ;; esac\n"
        "  done\n  [ $# -eq 0 ] || rm -rf -- \"$@\"\n}\n"
        f"for k in {' '.join(str(k) for k in range(len(order)))}; do d=/work/{prefix}$k; cd \"$d\"; "
        f"iverilog -g2012 -o sim {BENCH_FILE} {DESIGN_FILE} > compile.log 2>&1; echo $? > compile.rc; "
        f"if [ -f sim ]; then timeout -s KILL {sim_s:g} vvp -n sim > sim.log 2>&1; echo $? > sim.rc; fi; "
        "cd /work; clean \"$d\"; "
        "if [ $k = 0 ]; then rc=; [ -f \"$d/sim.rc\" ] && read -r rc < \"$d/sim.rc\"; [ \"$rc\" = 0 ] || break; fi; done\n"
    )
    logs = [f"{prefix}{k}/{name}" for k in range(len(order)) for name in _LOGS]
    wall = min(limits.wall_s, len(order) * (sim_s + 15.0))
    ran = run_script(sandbox, "icarus", script, files, logs, limits=dataclasses.replace(limits, wall_s=wall), keep_dir=keep_dir)
    verdicts = [
        bench_verdict(*(ran.logs.get(f"{prefix}{k}/{name}", "") for name in _LOGS))
        if ran.logs.get(f"{prefix}{k}/compile.rc", "").strip() else DesignRun(False, False, _NOT_RUN)
        for k in range(len(order))
    ]
    by_design: dict[int, DesignRun] = {}
    again: DesignRun | None = None
    for k, i in enumerate(order):
        if i == 0 and k > 0:
            again = verdicts[k]
        else:
            by_design[i] = verdicts[k]
    runs = [by_design.get(i, DesignRun(False, False, _NOT_RUN)) for i in range(len(design_texts))]
    runs[0] = reference_verdict(runs[0], again)
    return runs
