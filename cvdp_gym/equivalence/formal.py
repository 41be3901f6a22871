"""The formal stage: a Yosys 0.40 miter of the reference and the answer, checked to a bound, then by induction.

Contract: ``formal_files`` and ``formal_script`` lay out and run the check in its own folder
(``RunNames.formal_dir``) under one time limit (``formal_timeout``, every Yosys included);
``read_formal(logs, ...)`` turns what Yosys left into a ``FormalResult``: ``proved``
(induction closed), ``bounded`` (no difference within ``depth`` steps after reset; fewer,
said so, when the time limit ended the check after at least one), ``counterexample``
(with its trace of inputs per step, and expected/got at the failing step), or
``undecided`` with the reason (a design Yosys cannot read, a construct it cannot model, too
large, a timeout before any step). Nothing here raises on what Yosys printed, and only
whole lines Yosys itself writes are read as verdicts (an identifier, which may come from
the answer, has no spaces, so it can never be such a line).

The model, and what is sound about it:

- both designs are read, ``proc``-essed and joined by ``miter -equiv -flatten`` (outputs
  compared bit by bit; with X as a don't-care, ``-ignore_gold_x``: an X in the reference's
  output matches anything, as in simulation); print and assertion cells are dropped;
- **cycle model** when every flip-flop of both designs is clocked by the reference's one
  clock on one edge (checked on the miter with ``select -assert-none``): one step is one
  clock cycle, asynchronous resets become synchronous-looking (``async2sync``: the reset's
  effect is visible in the same step, as the test bench sees it before its compare), and
  the clock input is held low, as it is at the test bench's compare. Any other design
  (several clocks, both edges, latches, an answer with a clock of its own) gets the
  **event model**, ``clk2fflogic``: clocks are free inputs, each step an instant (a clock
  period takes two), ``depth`` steps. Free clocks over-approximate the test bench's regular
  clocks, so a counterexample there is a real difference of the two designs under some
  clock waveform;
- **start state**: every register undefined (X), except those the designs initialise
  (``initial``, declaration values), which is what simulation starts from. With resets, all
  resets are asserted in the first step(s) and the outputs are compared from the step after
  (as the test bench skips its reset phase); later the resets are free inputs, so
  re-assertion from any state is covered. Registers no reset covers stay X: a reference's X
  is a don't-care, an answer's X where the reference is defined is a difference. An
  all-zero start (VeriThoughts' ``-set-init-zero``) is not used: for a design with a reset
  it hides answers that rely on power-up zeros, and for one without, it compares behaviour
  from a state nobody specified (two correct encodings of one FSM disagree from all-zero);
- inputs are always defined (``-set-def-inputs``), as the stimulus drives them;
- ``bounded``: the base case of ``sat -tempinduct`` for ``depth`` steps from the reset
  state, i.e. no input sequence of that length shows a difference. ``proved``: then the
  induction step closes within ``INDUCTION_STEPS``; induction from arbitrary (X-including)
  states over-approximates the reachable ones, so a closed induction is a proof for every
  length. It closes when the two designs' states stay in step (the same encoding, or
  encodings a short induction relates, as a one-hot rewrite of a small FSM), rarely
  otherwise, and almost never in the event model. A counterexample's trace comes from a
  second run of the check with the model printed (printing it on every run costs a
  quarter more).

Cost: SAT with X modelled grows fast with state: a 16-word memory reaches about 9 steps in
the default 20 s; a memory over ``MAX_MEMORY_WORDS`` words is ``undecided`` ("too large")
at once.

Known gaps (documented here, not labelled per result): ``bounded`` is no proof, so a
difference deeper than ``depth`` that the simulation also misses passes; the event model
compares instants, not the test bench's sampling points; Yosys's SAT model propagates X
pessimistically where Icarus is optimistic (an ``if`` on X takes the else branch), so an
answer whose outputs depend on a register no reset initialises can fail here and pass
simulation (it is wrong on hardware that powers up the other way); and an answer that
Yosys 0.40 cannot read (``$fopen``, constructs its reader lacks) leaves the verdict to the
simulation alone, labelled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cvdp_gym.equivalence.ports import Design
from cvdp_gym.equivalence.settings import Settings
from cvdp_gym.equivalence.sources import RunNames
from cvdp_gym.equivalence.testbench import literal

GOLD, GATE = "gold.sv", "gate.sv"
#: Largest miter (cells after flattening) and memory (words) the stage tries; larger is
#: undecided ("too large") at once rather than after a long mapping.
MAX_CELLS, MAX_MEMORY_WORDS = 60_000, 1024
TOO_LARGE_MEMORY = "memory_over_limit"
TIMED_OUT = "timeout"
#: Longest induction tried after the bounded check passed (the event model's registers of
#: past clock values rarely let it close: a short try).
INDUCTION_STEPS, EVENT_INDUCTION_STEPS = 12, 4
#: Steps of a counterexample's trace kept (the last ones).
MAX_TRACE_STEPS = 40
LOGS = ("prep.log", "cycle.log", "event.log", "bmc.txt", "ind.txt", "trace.txt", "prep.rc", "formal.rc")
_FAILED = "SAT temporal induction proof finished - model found for base case: FAIL!"
_MODEL_ROW = re.compile(r"^\s+(\d+)\s+\\(in|gold|gate)_(\S+)\s+\S+\s+\S+\s+([01xz]+)\s*$")
_PROVEN = re.compile(r"^Base case for induction length (\d+) proven\.$", re.M)
_FRONTEND = re.compile(r"Executing Verilog(?:-2005)? frontend: (\S+)")
_NO_CELL = re.compile(r"Failed to import cell \S+ \(type (\S+)\)")


@dataclass
class FormalResult:
    verdict: str  # "proved" | "bounded" | "counterexample" | "undecided" | "skipped"
    depth: int = 0
    #: Per step: {"step", "inputs": {port: value}}; the failing (last) step also has
    #: "expected" and "got" (the outputs that differ).
    trace: list[dict] = field(default_factory=list)
    why: str = ""
    model: str = ""  # "cycle" | "event"

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "depth": self.depth, "trace": self.trace, "why": self.why, "model": self.model}


def formal_files(names: RunNames, design: Design, gold: str, gate: str, settings: Settings) -> dict[str, str]:
    """The formal folder's files: both designs, ``formal.sh`` and its Yosys scripts."""
    folder = names.formal_dir
    ignore_x = " -ignore_gold_x" if settings.x == "dontcare" else ""
    prep = (
        f"read_verilog -sv {GOLD}\nread_verilog -sv {GATE}\nhierarchy -check\nproc\nopt_clean\n"
        "delete t:$print t:$check t:$assert t:$assume t:$cover t:$live t:$fair\n"
        f"miter -equiv -flatten -make_outputs{ignore_x} {yosys_id(names.ref_prefix + design.top)} {yosys_id(design.top)} miter\n"
        "hierarchy -top miter\nmemory -nomap\n"
        f"select -set {TOO_LARGE_MEMORY} t:$mem_v2 r:SIZE>{MAX_MEMORY_WORDS} %i\n"
        f"select -assert-none @{TOO_LARGE_MEMORY}\n"
        f"memory_map\nopt_clean\nselect -assert-max {MAX_CELLS} t:*\nwrite_rtlil miter.il\n"
    )
    depth = settings.depth if design.sequential else 1
    files = {GOLD: gold, GATE: gate, "formal.sh": _stage_script(design), "prep.ys": prep}
    # The cycle model holds the clocks low, as they are when the test bench compares: its
    # flip-flops step once per step whatever the clock, and logic that reads a clock's level
    # then sees what the test bench sees.
    low_clocks = "".join(f" -set in_{clock} 0" for clock in design.clocks)
    for model, lowering, reset_steps, induction, fixed in (
        ("cycle", _cycle_check(design) + "async2sync\n", 1, INDUCTION_STEPS, low_clocks),
        ("event", "clk2fflogic\n", 2, EVENT_INDUCTION_STEPS, ""),
    ):
        bmc = _bmc(design, depth, reset_steps) + fixed
        files[f"{model}.ys"] = (
            f"read_rtlil miter.il\n{lowering}tee -q -o bmc.txt {bmc} -verify miter\n"
            f"tee -q -o ind.txt sat -tempinduct-inductonly -maxsteps {min(depth, induction)}"
            f" {_COMMON}{fixed} -enable_undef miter\n"
        )
        files[f"{model}_trace.ys"] = (
            f"read_rtlil miter.il\n{lowering}tee -q -o trace.txt {bmc} -show-inputs -show-outputs miter\n"
        )
    return {f"{folder}/{name}": text for name, text in files.items()}


def formal_script(names: RunNames, settings: Settings) -> str:
    """Shell lines that run the stage (``formal.sh``) under its time limit, all of it: the
    limit ends every Yosys it started (``timeout`` signals its whole process group)."""
    limit = f"{settings.formal_timeout:g}"
    return f"cd {names.formal_dir} && {{ timeout {limit} sh formal.sh > /dev/null 2>&1; echo $? > formal.rc; }}\n"


def read_formal(logs: dict[str, str], design: Design, settings: Settings, answer_name: str) -> FormalResult:
    """The stage's result from the folder's logs (see the module docstring)."""
    depth = settings.depth if design.sequential else 1
    timed_out = logs.get("formal.rc", "").strip() == "124"
    if logs.get("prep.rc", "").strip() != "0":
        return _undecided(logs.get("prep.log", ""), timed_out, answer_name, "")
    model = "event" if logs.get("event.log", "").strip() else "cycle"
    bmc_lines = {line.strip() for line in logs.get("bmc.txt", "").splitlines()}
    ind_lines = {line.strip() for line in logs.get("ind.txt", "").splitlines()}
    if _FAILED in bmc_lines:
        trace = _trace(logs.get("trace.txt", ""), design, model, settings.x == "strict")
        why = "" if trace else "the time limit ended the run that prints the trace"
        return FormalResult("counterexample", depth, trace, why, model)
    unit = "cycles" if model == "cycle" else "steps of the event model (two per clock period)"
    if f"Reached maximum number of time steps -> proved base case for {depth} steps: SUCCESS!" in bmc_lines:
        if "Induction step proven: SUCCESS!" in ind_lines:
            return FormalResult("proved", depth, [], "the induction step closed", model)
        why = f"no difference within {depth} {unit} after reset; induction did not close"
        return FormalResult("bounded", depth, [], why, model)
    proven = [int(n) for n in _PROVEN.findall(logs.get("bmc.txt", ""))]
    if timed_out and proven:
        reached = max(proven)
        why = f"no difference within {reached} {unit} after reset: the time limit ended the check (of {depth})"
        return FormalResult("bounded", reached, [], why, model)
    return _undecided(logs.get(f"{model}.log", ""), timed_out, answer_name, model)


_COMMON = "-set-def-inputs -prove trigger 0"


def _cycle_check(design: Design) -> str:
    """Yosys lines that stop the cycle model unless every flip-flop runs on the reference's clock edge."""
    state = "t:$*dff* t:$*dlatch* t:$sr"
    if not design.clocks:
        return f"select -assert-none {state}\n"
    polarity = 0 if design.clock_edges.get(design.clocks[0]) == frozenset({"negedge"}) else 1
    return (
        f"select -set ffs {state}\n"
        f"select -set good w:in_{design.clocks[0]} %co:+[CLK] t:$*dff* %i r:CLK_POLARITY=1'{polarity} %i\n"
        "select -assert-none @ffs @good %d\n"
    )


def _stage_script(design: Design) -> str:
    """``formal.sh``: prepare the miter, try the cycle model, fall back on the event model;
    rerun a failed check with its model printed (the trace)."""

    def run(step: str) -> str:
        return f"yosys -q -l {step}.log -s {step}.ys > /dev/null 2>&1\n"

    first = "cycle" if len(design.clocks) <= 1 else "event"
    fallback = (
        '  if grep -q "Assertion failed: selection is not empty" cycle.log; then\n'
        f"    model=event; rm -f bmc.txt ind.txt; {run('event')}  fi\n"
    ) if first == "cycle" else ""
    return (
        "yosys -q -l prep.log -s prep.ys > /dev/null 2>&1; echo $? > prep.rc\n"
        'if [ "$(cat prep.rc)" = 0 ]; then\n'
        f"  model={first}; {run(first)}{fallback}"
        f'  if grep -q "{_FAILED}" bmc.txt; then yosys -q -s ${{model}}_trace.ys > /dev/null 2>&1; fi\n'
        "fi\n"
    )


def _bmc(design: Design, steps: int, reset_steps: int) -> str:
    """The bounded check: every reset asserted in the first step(s), outputs compared after."""
    resets = "".join(
        f" -set-at {step} in_{r.name} {r.asserted}" for r in design.resets for step in range(1, reset_steps + 1)
    )
    prefix = f" -seq {reset_steps}{resets}" if design.resets else ""
    return f"sat -tempinduct-baseonly -maxsteps {steps}{prefix} -set-init-undef {_COMMON}"


def _undecided(log: str, timed_out: bool, answer_name: str, model: str) -> FormalResult:
    lines = log.splitlines()
    if timed_out:
        return FormalResult("undecided", why=TIMED_OUT, model=model)
    error_at = next((i for i, line in enumerate(lines) if "ERROR:" in line), None)
    if error_at is None:
        return FormalResult("undecided", why="Yosys stopped without a result", model=model)
    where, _, message = lines[error_at].partition("ERROR:")
    message = message.strip()
    if "selection contains" in message and "more than the maximum" in message:
        return FormalResult("undecided", why=f"too large for the formal stage: {message}", model=model)
    if f"@{TOO_LARGE_MEMORY}" in message:
        why = f"too large for the formal stage: a memory of over {MAX_MEMORY_WORDS} words"
        return FormalResult("undecided", why=why, model=model)
    unknown = _NO_CELL.search(message)
    if unknown:
        why = f"unsupported construct: Yosys cannot model a {unknown.group(1)} cell"
        return FormalResult("undecided", why=why, model=model)
    reading = [m.group(1) for line in lines[:error_at] for m in [_FRONTEND.search(line)] if m]
    source = where.split(":", 1)[0].strip() or (reading[-1] if reading else "")
    whose = {GOLD: "the reference", GATE: "the answer"}.get(source, "")
    message = f"{where.strip()} {message}".strip().replace(GATE, answer_name).replace(GOLD, "reference")[:300]
    if whose and not any("Executing HIERARCHY" in line for line in lines[:error_at]):
        return FormalResult("undecided", why=f"Yosys 0.40 cannot read {whose}: {message}", model=model)
    return FormalResult("undecided", why=f"Yosys failed: {message}", model=model)


def _trace(text: str, design: Design, model: str, strict: bool) -> list[dict]:
    """The counterexample's inputs per step, and expected/got where the outputs differ at the last."""
    rows: dict[int, dict[str, dict[str, str]]] = {}
    for line in text.splitlines():
        match = _MODEL_ROW.match(line)
        if match:
            step, side, name, bits = int(match.group(1)), match.group(2), match.group(3), match.group(4)
            rows.setdefault(step, {"in": {}, "gold": {}, "gate": {}})[side][name] = bits
    widths = {p.name: p.width for p in design.ports}
    skip = set(design.clocks) if model == "cycle" else set()
    trace = []
    order = [p.name for p in design.inputs if p.name not in skip]
    for step in sorted(rows):
        seen = rows[step]["in"]
        inputs = {n: literal(widths[n], seen[n]) for n in order if n in seen}
        trace.append({"step": step, "inputs": inputs})
    if trace:
        last = rows[max(rows)]
        differ = [n for n, b in last["gold"].items() if _differs(b, last["gate"].get(n, ""), strict)]
        trace[-1]["expected"] = {n: literal(widths.get(n, len(last["gold"][n])), last["gold"][n]) for n in differ}
        trace[-1]["got"] = {n: literal(widths.get(n, len(last["gate"][n])), last["gate"][n]) for n in differ}
    return trace[-MAX_TRACE_STEPS:]


def _differs(gold: str, gate: str, strict: bool) -> bool:
    """Whether an output differs at the failing step (X in the reference only matches X when strict)."""
    if strict or len(gold) != len(gate):
        return gold != gate
    return any(g in "01" and g != h for g, h in zip(gold, gate, strict=True))


def yosys_id(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", name) else "\\" + name
