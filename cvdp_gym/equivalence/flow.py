"""The reference-equivalence grader: an answer judged against a reference design, not a test bench.

Contract: ``ReferenceFlow().run(sandbox, problem, files, limits=..., keep_dir=..., seed=...)``
(the run's seed, unused: the stimulus is seeded from the problem id), like the benchmark
flows, returns a ``HarnessResult`` and never raises on what the problem or the answer holds.
The problem (API29): ``reference`` = {target: reference design}, ``extra["top"]`` (else the
target's stem), ``extra["equivalence"]`` = the settings (:mod:`cvdp_gym.equivalence.settings`).
The stages (:mod:`cvdp_gym.equivalence`):

1. **interface**, in process (pyslang): the reference's top, ports, clocks and resets. A
   reference that cannot be driven (no such module, inout or unpacked ports, no output,
   a sequential design with no clock found, a module it instantiates but does not define,
   a stimulus too large) is ``unsupported``: labelled, never the answer's failure. An
   answer that names or opens anything outside its own design (:mod:`cvdp_gym.gate.reach_in`:
   the test bench's or reference's scopes, ``$root``, ``bind``, files, DPI) is ``reach_in``,
   with no simulation. The answer must declare the same top with the same ports (name,
   direction, width), else ``interface_error`` with no simulation (an answer slang cannot
   parse is compiled first, so a syntax error stays a ``build_error``);
2. **simulation**, in the sandbox: the generated differential test bench on Icarus (or
   Verilator). An answer that does not compile is a ``build_error`` (a reference Icarus
   rejects: ``unsupported``). Mode ``formal`` still compiles the answer with Icarus (so
   build errors read the same in every mode) but does not simulate. The bench also measures
   its coverage of the reference's outputs and registers; a bench whose probes of the
   registers the simulator rejects is built again without them (no measure). A simulation
   cut short (its limit, the sandbox's, a signal) is never a pass;
3. **formal check**, in a second sandbox run, only where it can change the verdict (the
   simulation matched, or mode ``formal``): most wrong answers cost one fast simulation;
4. the **verdict** (:mod:`cvdp_gym.equivalence.verdict`): a pass needs a stage that
   decided (a covering simulation, a proof, a bound of ``min_depth``), else ``undecided``.

Deterministic for the same answer and settings: the stimulus is seeded from the problem id
and the settings; only the names of files and the secret are drawn per run. A fault of this
grader itself is a labelled ``harness_error`` (re-graded once by trainers), never a crash.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from cvdp_gym.data.problems import REFERENCE_GRADER
from cvdp_gym.equivalence.formal import LOGS as FORMAL_LOGS
from cvdp_gym.equivalence.formal import (
    TIMED_OUT,
    FormalResult,
    formal_files,
    formal_script,
    read_formal,
)
from cvdp_gym.equivalence.ports import Design, port_differences, read_design
from cvdp_gym.equivalence.recipes import (
    CODEV_LIMIT_S,
    CODEV_R1,
    CODEV_SEQUENCES,
    CODEV_STEPS,
    RESET_CYCLES,
    VERITHOUGHTS,
    VERITHOUGHTS_LOGS,
    codev_r1_stimulus,
    read_verithoughts,
    verithoughts_files,
    verithoughts_script,
)
from cvdp_gym.equivalence.settings import Settings, read_settings
from cvdp_gym.equivalence.sources import RunNames, rename_modules
from cvdp_gym.equivalence.stimulus import Stimulus, make_stimulus
from cvdp_gym.equivalence.testbench import (
    COMPILE_LOG,
    SIM_LOG,
    SimulationResult,
    bench_files,
    prelude_files,
    read_results,
    simulation_script,
    value_literal,
)
from cvdp_gym.equivalence.verdict import judge, stopped
from cvdp_gym.errors import ConfigError, HarnessError, SandboxUnavailable
from cvdp_gym.harness.flows.flow_kit import (
    BUILD_ERROR,
    HARNESS_ERROR,
    REACH_IN,
    RESOURCE_LIMIT,
    TIMEOUT,
    UNSUPPORTED,
    HarnessResult,
    Limits,
    Problem,
    Sandbox,
    check,
    new_secret,
    read_log,
    run_script,
)
from cvdp_gym.seeds import stimulus_seed

INTERFACE_ERROR = "interface_error"
#: The largest stimulus file (bits of all vectors) a run may write.
MAX_STIMULUS_BITS = 64 << 20
#: Cycles of inputs shown before a first mismatch.
HISTORY_CYCLES = 6
_ERROR_LINE = re.compile(r"(syntax error|\berror\b|%Error|Unknown module type|I give up)", re.I)


@dataclass
class _Run:
    """One grading's inputs, worked out before anything runs in the sandbox."""

    problem: Problem
    settings: Settings
    sandbox: Sandbox
    limits: Limits
    keep_dir: Path | None
    target: str
    answer: str
    reference: Design
    names: RunNames


class ReferenceFlow:
    """Grades an answer by equivalence with the problem's reference design."""

    name = REFERENCE_GRADER

    def run(
        self, sandbox: Sandbox, problem: Problem, files: Mapping[str, str], *,
        limits: Limits, keep_dir: Path | None = None, seed: int | None = None,
    ) -> HarnessResult:
        try:
            settings = read_settings(problem.extra)
        except ConfigError as exc:
            return stopped(problem, UNSUPPORTED, f"bad grader settings: {exc}")
        try:
            return self._grade(sandbox, problem, files, settings, limits, keep_dir)
        except (HarnessError, RecursionError) as exc:
            why = str(exc) if isinstance(exc, HarnessError) else "a design nested too deeply to parse"
            return stopped(problem, UNSUPPORTED, why, mode=settings.mode)
        except SandboxUnavailable:  # the machine, not the problem: the grader records infra_error
            raise
        except Exception as exc:  # a fault of this grader: labelled, never a crashed training run
            why = f"the reference grader failed: {type(exc).__name__}: {exc}"[:500]
            return stopped(problem, HARNESS_ERROR, why, mode=settings.mode)

    def _grade(
        self, sandbox: Sandbox, problem: Problem, files: Mapping[str, str], settings: Settings,
        limits: Limits, keep_dir: Path | None,
    ) -> HarnessResult:
        start = time.monotonic()
        target = problem.targets[0] if problem.targets else "answer.sv"
        source = (problem.reference or {}).get(target) or next(iter((problem.reference or {}).values()), "")
        top = str(problem.extra.get("top") or PurePosixPath(target).stem)
        reference = _reference_design(source, top, settings)
        if isinstance(reference, str):
            return stopped(problem, UNSUPPORTED, reference, mode=settings.mode)
        run = _Run(problem, settings, sandbox, limits, keep_dir, target, files.get(target, ""), reference, RunNames())
        found = check({target: run.answer})  # the names above are random; this names the attempt
        if found.findings:
            why = "\n".join(str(f) for f in found.findings)
            return stopped(problem, REACH_IN, found.reason, mode=settings.mode, log_tail=why)
        mismatch = _interface_mismatch(reference, run.answer, top, target)
        if mismatch is not None:
            return _interface_failure(run, *mismatch)
        renamed = rename_modules(source, {m: run.names.ref_prefix + m for m in reference.modules})
        if settings.mode == CODEV_R1:
            if len(reference.clocks) > 1:
                why = f"the codev-r1 recipe drives one clock; this design has {len(reference.clocks)}"
                return stopped(problem, UNSUPPORTED, why, mode=settings.mode)
            stimulus = codev_r1_stimulus(reference, stimulus_seed(problem.id, settings))
        else:
            stimulus = make_stimulus(reference, settings.cycles, stimulus_seed(problem.id, settings))
        extra = {"settings": settings.as_dict(), "interface": _interface_summary(reference)}
        probes = settings.mode != CODEV_R1  # the recipe's verdict needs no coverage: no probes over its 100,000 steps
        built, simulation, sim_cut, tail = _simulate(run, renamed, stimulus, new_secret(), probes=probes)
        if isinstance(built, HarnessResult) and built.failure_class == INTERFACE_ERROR and probes and reference.state:
            # The bench's failure, not the answer's ports: a simulator that cannot reach the
            # reference's registers by name. Again without the probes (no coverage measure).
            built, simulation, sim_cut, tail = _simulate(run, renamed, stimulus, new_secret(), probes=False)
        if isinstance(built, HarnessResult):
            built.official.update(extra)
            built.wall_s = built.services[0].wall_s = time.monotonic() - start
            return built
        formal = None
        if settings.proves and simulation is not None and simulation.verdict != "match":
            formal = FormalResult("skipped", why="not run: the simulation already found a difference")
        elif settings.proves:
            formal = _prove(run, renamed)
        return judge(
            problem, settings, simulation, formal, sim_cut=sim_cut,
            wall_s=time.monotonic() - start, log_tail=tail, extra=extra,
        )


def _reference_design(source: str, top: str, settings: Settings) -> Design | str:
    """The reference's description, or why it cannot be graded."""
    if not source.strip():
        return "the problem has no reference design"
    try:
        design = read_design(source, top, "reference.sv")
    except HarnessError as exc:
        return f"the reference cannot be driven: {exc}"
    if any("UnknownModule" in e for e in design.errors):
        return "the reference instantiates a module it does not define"
    if not design.outputs:
        return f"the reference's module {top} has no outputs to compare"
    if design.sequential and not design.clocks:
        return "the reference is sequential but no clock was found among its inputs (by name or from its edge events)"
    cycles = CODEV_SEQUENCES * (CODEV_STEPS + RESET_CYCLES) if settings.mode == CODEV_R1 else settings.cycles
    bits = cycles * max(1, sum(p.width for p in design.driven)) if settings.simulates else 0
    if bits > MAX_STIMULUS_BITS:
        return f"the stimulus would hold {bits} bits (at most {MAX_STIMULUS_BITS}): lower the cycles setting"
    return design


def _interface_mismatch(reference: Design, answer: str, top: str, target: str) -> tuple[str, bool] | None:
    """Why the answer's interface differs, and whether slang found errors in it (None: same ports)."""
    if not answer.strip():
        return f"the answer has no file {target}", False
    try:
        design = read_design(answer, top, target)
    except HarnessError as exc:
        return str(exc), True
    except RecursionError:
        return "the answer is nested too deeply to parse", True
    problems = port_differences(reference, design)
    if not problems:
        return None
    return f"{top}: " + "; ".join(problems), bool(design.errors)


def _interface_failure(run: _Run, why: str, parse_errors: bool) -> HarnessResult:
    """An ``interface_error``; where slang also saw errors, Icarus decides first whether it is
    a ``build_error`` (slang can misjudge code Icarus accepts)."""
    mode = run.settings.mode
    if parse_errors:
        answer = shlex.quote(run.target)
        # Into the run's folder: Icarus makes its output executable, and ``-o /dev/null`` once
        # changed the host's /dev/null to 0755 (sandbox/devices.py).
        script = f"iverilog -g2012 -o compile_check.vvp {run.names.prelude_file(1)} {answer} > {COMPILE_LOG} 2>&1\n"
        work = {**prelude_files(run.names), run.target: run.answer}
        compiled = run_script(
            run.sandbox, run.problem.toolchain, script, work, (COMPILE_LOG,), limits=run.limits, keep_dir=run.keep_dir,
        )
        errors = _answer_errors(compiled.logs[COMPILE_LOG], run.target)
        if errors:
            return stopped(run.problem, BUILD_ERROR, errors[0], mode=mode, log_tail="\n".join(errors))
    return stopped(run.problem, INTERFACE_ERROR, why, mode=mode, log_tail=why)


def _simulate(
    run: _Run, renamed: str, stimulus: Stimulus, secret: str, *, probes: bool = True,
) -> tuple[HarnessResult | None, SimulationResult | None, tuple[str, str] | None, str]:
    """Build (and, unless mode ``formal``, run) the differential simulation: (a failure that
    ends the grading or None, the simulation's result, how it was cut short (None when it ran
    to its end: ``_cut_short``), its output). ``probes``: measure the reference's coverage."""
    names, settings = run.names, run.settings
    work = {**prelude_files(names), run.target: run.answer, names.ref_file: renamed}
    # CodeV-R1's recipe compares with === (an X anywhere is a mismatch) within its 30 s.
    strict = settings.x == "strict" or settings.mode == CODEV_R1
    work.update(bench_files(run.reference, stimulus, names, secret, strict_x=strict, probes=probes))
    simulator = settings.simulator if settings.simulates else "icarus"
    answer = shlex.quote(run.target)
    limit = int(CODEV_LIMIT_S) if settings.mode == CODEV_R1 else None
    script = simulation_script(names, answer, simulator, cycles=stimulus.cycles, run=settings.simulates, limit=limit)
    status = f"sim_status_{names.file_tag}"
    done = run_script(
        run.sandbox, run.problem.toolchain, script, work, (COMPILE_LOG, SIM_LOG, status),
        limits=run.limits, keep_dir=run.keep_dir,
    )
    if f"built_{names.file_tag}" not in done.left:
        failure, reason, tail = _compile_failure(done.logs[COMPILE_LOG], names, run.target)
        if done.outcome.timed_out:
            failure, reason = TIMEOUT, "the build did not finish within the sandbox's limit"
        return stopped(run.problem, failure, reason, mode=settings.mode, log_tail=tail), None, None, ""
    if done.outcome.out_of_memory:
        killed = stopped(run.problem, RESOURCE_LIMIT, "killed for exceeding the memory limit", mode=settings.mode)
        return killed, None, None, ""
    if not settings.simulates:
        return None, None, None, ""
    simulation = read_results(read_log(done.logs[SIM_LOG], secret).trusted, run.reference, probes=probes)
    if simulation.first is not None:
        _add_inputs(simulation.first, stimulus, run.reference)
    cut = _cut_short(done.logs[status], done.outcome.timed_out)
    return None, simulation, cut, done.logs[SIM_LOG].replace(secret, "")[-4000:]


def _cut_short(status: str, sandbox_timed_out: bool) -> tuple[str, str] | None:
    """The failure class and reason of a simulation that did not end on its own (None when it
    did): its time limit or the sandbox's (``timeout``), a signal such as the file-size
    limit's (``resource_limit``). A run cut short is never a pass, whatever the test bench
    printed before the cut."""
    code = status.strip()
    if sandbox_timed_out:
        return TIMEOUT, "killed after the sandbox's wall-time limit"
    if code == "124":
        return TIMEOUT, "the simulation did not finish within its time limit"
    if code.isdigit() and int(code) > 128:
        return RESOURCE_LIMIT, f"the simulation was killed by signal {int(code) - 128}"
    return None


def _prove(run: _Run, renamed: str) -> FormalResult:
    """The formal stage, in its own sandbox run (VeriThoughts' check in its recipe's mode)."""
    names = run.names
    if run.settings.mode == VERITHOUGHTS:
        check = run_script(
            run.sandbox, run.problem.toolchain, verithoughts_script(names),
            verithoughts_files(names, run.reference, renamed, run.answer),
            tuple(f"{names.formal_dir}/{name}" for name in VERITHOUGHTS_LOGS), limits=run.limits, keep_dir=run.keep_dir,
        )
        return read_verithoughts({name: check.logs[f"{names.formal_dir}/{name}"] for name in VERITHOUGHTS_LOGS})
    proof = run_script(
        run.sandbox, run.problem.toolchain, formal_script(names, run.settings),
        formal_files(names, run.reference, renamed, run.answer, run.settings),
        tuple(f"{names.formal_dir}/{name}" for name in FORMAL_LOGS), limits=run.limits, keep_dir=run.keep_dir,
    )
    logs = {name: proof.logs[f"{names.formal_dir}/{name}"] for name in FORMAL_LOGS}
    formal = read_formal(logs, run.reference, run.settings, run.target)
    if proof.outcome.timed_out and formal.verdict == "undecided":
        formal = FormalResult("undecided", why=TIMED_OUT, model=formal.model)
    return formal


def _errors(log: str) -> list[str]:
    return [line.strip() for line in log.splitlines() if _ERROR_LINE.search(line)]


def _answer_errors(log: str, target: str) -> list[str]:
    """The compiler's error lines about the answer's own file."""
    return [line[:300] for line in _errors(log) if target in line][:12]


def _compile_failure(log: str, names: RunNames, target: str) -> tuple[str, str, str]:
    """Whose fault a failed build is: the answer's (``build_error``), the reference's
    (``unsupported``), or the test bench's connection to the answer (``interface_error``)."""
    errors = _errors(log)
    mine = _answer_errors(log, target)
    if mine:
        return BUILD_ERROR, mine[0], "\n".join(mine)
    theirs = [line for line in errors if names.ref_file in line]
    if theirs:
        first = theirs[0].replace(names.ref_file, "reference")[:300]
        return UNSUPPORTED, f"the reference does not compile: {first}", ""
    if any(names.tb_file in line for line in errors):
        return INTERFACE_ERROR, "the answer's ports cannot be connected as the reference's are", ""
    scrubbed = [line.replace(names.ref_file, "reference").replace(names.tb_file, "testbench") for line in errors]
    return BUILD_ERROR, (scrubbed[0] if scrubbed else "the design does not compile")[:300], "\n".join(scrubbed[:12])


def _add_inputs(first: dict[str, Any], stimulus: Stimulus, design: Design) -> None:
    """The inputs of the first mismatching cycle and of the cycles that led there."""
    cycle = int(first["cycle"])
    ports = {p.name: p for p in stimulus.driven}

    def shown(c: int) -> dict[str, str]:
        return {name: value_literal(ports[name], value) for name, value in stimulus.values(c).items()}

    first["inputs"] = shown(cycle)
    first["history"] = [{"cycle": c, "inputs": shown(c)} for c in range(max(0, cycle - HISTORY_CYCLES), cycle)]
    first["reset_cycles"] = stimulus.reset_cycles
    first["clocks"] = list(design.clocks)


def _interface_summary(design: Design) -> dict[str, Any]:
    return {
        "top": design.top,
        "clocks": list(design.clocks),
        "resets": [{"name": r.name, "active_low": r.active_low, "asynchronous": r.asynchronous} for r in design.resets],
        "sequential": design.sequential,
    }


#: The flow this package adds to the flow table (:data:`cvdp_gym.harness.flows.FLOWS`).
FLOWS = (ReferenceFlow(),)
