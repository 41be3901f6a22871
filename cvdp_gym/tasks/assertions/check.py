"""An answer's properties checked by open formal on the reference and on mutants.

Contract: ``check_properties(sandbox, designs, top, properties, clock=..., reset=...)``
lowers the answer (:mod:`.sva`), inserts it before the ``endmodule`` of module ``top`` in
each design (``designs`` maps a name to a whole design's source; ``reference`` names the
reference) and runs one sandboxed script: one Yosys process per design, each under its
own time limit, checking every supported property alone (``sat -tempinduct`` with the
select wire set to its index), plus the vacuity probes on the reference. The result is a
``PropertyReport``; nothing here raises on what the answer or Yosys wrote.

Per design and property, the verdict is ``proved`` (the induction closed), ``bounded`` (no
counterexample within ``depth`` cycles after reset; the induction did not close),
``fails`` (a counterexample), ``error`` (Yosys could not read or model the design with the
answer: the whole answer is then a build error, ``PropertyReport.error``, with Yosys's
message line) or ``undecided`` (a time limit, or Yosys stopped before a verdict): never a
pass.

The model (as in :mod:`cvdp_gym.equivalence.formal`'s cycle model): one step is
one clock cycle, ``async2sync`` makes asynchronous resets act in the step they are
asserted, inputs are always defined (``-set-def-inputs``), the reset is asserted in the
first step and free afterwards, and the first step is never checked (``-seq 1``). Unlike
the equivalence stage, registers no reset or initial value covers start from any *defined*
value (``-set-init-def``: every bit 0 or 1, never X): a property that relies on one
particular start fails, as it could on hardware, and one that holds for every 0/1 start
holds (an X start would fail it where no hardware could). Only the answer's
properties are checked: every other assertion, assumption or cover cell (the design's own,
or an immediate ``assume`` in the answer's pass-through statements) is removed
(``chformal -remove``), so an answer cannot constrain the design. An answer that names a
signal nobody declared (Yosys would make it a free wire), drives a register of the design
(``assign`` to a ``reg``) or adds a second driver (``multiple conflicting drivers``) is a
build error. Designs run in parallel, one Yosys each (``DESIGN_TIMEOUT_S``); the select
wire ``__cvdp_sel`` is an undriven wire rather than a port, so no header is edited
(ANSI or not) and ``sat -set`` fixes it for every step.
Yosys's SAT model of X is pessimistic where a simulator is optimistic (see ``formal``).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from cvdp_gym.harness.testbench import run_script
from cvdp_gym.sandbox.base import Limits, Sandbox
from cvdp_gym.tasks.assertions.sva import SELECT, Lowered, Property, lower_properties

ANSWER_FILE, CHECKS_FILE = "cvdp_answer.svh", "cvdp_props.svh"
#: Seconds one design's Yosys may run (every property of it together).
DESIGN_TIMEOUT_S = 60.0
_FAILED = "SAT temporal induction proof finished - model found for base case: FAIL!"
_PROVED = "Induction step proven: SUCCESS!"
_DRIVERS = "Warning: multiple conflicting drivers for "
#: Reader warnings that make an answer a build error when they point into its files: a
#: misspelt name would otherwise be a free wire, and an answer must not drive the design.
_REJECTED = ("is implicitly declared", "is assigned in a continuous assignment")
_KEEP = ("ERROR:", _DRIVERS, *_REJECTED, "Reached maximum number of time steps", _FAILED, _PROVED)


@dataclass(frozen=True)
class PropertyResult:
    verdict: str  # "proved" | "bounded" | "fails" | "error" | "undecided"
    why: str = ""

    @property
    def holds(self) -> bool:
        return self.verdict in ("proved", "bounded")


@dataclass
class PropertyReport:
    """Every property's verdict on every design, and which are vacuous on the reference."""

    properties: tuple[Property, ...]
    reference: str
    #: design name -> property index -> result (supported properties only).
    verdicts: dict[str, dict[int, PropertyResult]] = field(default_factory=dict)
    #: property index -> whether its antecedent never held on the reference within the
    #: depth (None: no antecedent, unsupported, or the probe was not decided).
    vacuous: dict[int, bool | None] = field(default_factory=dict)
    #: Non-empty when the answer does not build with the reference (Yosys's message).
    error: str = ""

    def _meaningful(self) -> list[int]:
        return [p.index for p in self.properties if p.supported and not self.vacuous.get(p.index)]

    @property
    def holds_on_reference(self) -> bool:
        """At least one supported, non-vacuous property, and all of them hold on the reference."""
        checked = self._meaningful()
        results = self.verdicts.get(self.reference, {})
        return not self.error and bool(checked) and all(results.get(i, _NONE).holds for i in checked)

    def killed(self, design: str) -> bool:
        """Whether a supported, non-vacuous property that holds on the reference fails on ``design``."""
        reference = self.verdicts.get(self.reference, {})
        results = self.verdicts.get(design, {})
        return any(
            reference.get(i, _NONE).holds and results.get(i, _NONE).verdict == "fails" for i in self._meaningful()
        )


_NONE = PropertyResult("undecided", "not checked")


def check_properties(
    sandbox: Sandbox,
    designs: Mapping[str, str],
    top: str,
    properties: str,
    *,
    clock: str | None,
    reset: tuple[str, bool] | None,
    edge: str = "posedge",
    depth: int = 20,
    reference: str = "reference",
    timeout_s: float = DESIGN_TIMEOUT_S,
    limits: Limits | None = None,
) -> PropertyReport:
    """Check the answer's ``properties`` on every design (see the module docstring);
    ``reset`` is (name, active_high)."""
    lowered = lower_properties(properties, clock=clock, edge=edge)
    report = PropertyReport(lowered.properties, reference)
    if not any(p.supported for p in lowered.properties):
        return report
    marker = f"cvdp-{secrets.token_hex(8)}"
    names = list(designs)
    files = {ANSWER_FILE: lowered.answer, CHECKS_FILE: lowered.checks}
    script = ""
    for k, name in enumerate(names):
        inserted = insert_before_endmodule(designs[name], top)
        if inserted is None:
            report.verdicts[name] = {
                p.index: PropertyResult("error", f"no module {top} in {name}") for p in lowered.properties if p.supported
            }
            continue
        files[f"design_{k}.sv"] = inserted
        files[f"design_{k}.ys"] = yosys_script(
            f"design_{k}.sv", top, lowered, marker, clock=clock, reset=reset, depth=depth,
            probes=name == reference,
        )
        script += f"timeout {timeout_s:g} yosys -s design_{k}.ys > design_{k}.full 2>&1; echo $? > design_{k}.rc &\n"
    keep = "".join(f" -e {_quote(line)}" for line in (marker, *_KEEP))
    script += "wait\n" + "".join(
        f"grep -F{keep} design_{k}.full > design_{k}.log; rm -f design_{k}.full\n" for k in range(len(names))
    )
    logs = [f"design_{k}.{ext}" for k in range(len(names)) for ext in ("log", "rc")]
    limits = limits or Limits(wall_s=timeout_s + 30)
    run = run_script(sandbox, "icarus", script, files, logs, limits=limits)
    for k, name in enumerate(names):
        if name in report.verdicts:
            continue
        log, rc = run.logs.get(f"design_{k}.log", ""), run.logs.get(f"design_{k}.rc", "").strip()
        results, error = read_results(log, rc, lowered, marker, depth)
        if name == reference:
            count = len(lowered.properties)
            report.vacuous = {p.index: _vacuous(p, results.get(p.index + count)) for p in lowered.properties}
            report.error = error
        report.verdicts[name] = {i: r for i, r in results.items() if i < len(lowered.properties)}
    return report


def _vacuous(prop: Property, probe: PropertyResult | None) -> bool | None:
    """A probe that holds: the antecedent never held; one that fails: it did; else unknown."""
    if not (prop.supported and prop.has_antecedent) or probe is None or probe.verdict not in ("proved", "bounded", "fails"):
        return None
    return probe.holds


def yosys_script(
    design_file: str, top: str, lowered: Lowered, marker: str, *, clock: str | None,
    reset: tuple[str, bool] | None, depth: int, probes: bool,
) -> str:
    """One design's Yosys script: read, keep only the checker's formal cells, then one
    ``sat`` per property (and probe), each after a ``log`` line naming it."""
    count = len(lowered.properties)
    indices = [p.index for p in lowered.properties if p.supported]
    if probes:
        indices += [p.index + count for p in lowered.properties if p.supported and p.has_antecedent]
    steps = depth if clock is not None else 1
    start = f" -set-at 1 {reset[0]} {1 if reset[1] else 0} -seq 1" if reset and clock is not None else ""
    if not reset and clock is not None:
        start = " -seq 1"
    lines = [
        f"read_verilog -formal -sv {design_file}",
        f"prep -flatten -top {top}",
        f"chformal -remove t:* a:src={CHECKS_FILE}:* %d",
        "async2sync",
        f"log {marker} check",
        "check",
    ]
    for i in indices:
        lines.append(f"log {marker} {i}")
        lines.append(
            f"sat -tempinduct -prove-asserts -set-def-inputs -set-init-def -set {SELECT} {i}{start} -maxsteps {steps}"
        )
    lines.append(f"log {marker} end")
    return "\n".join(lines) + "\n"


def read_results(
    log: str, rc: str, lowered: Lowered, marker: str, depth: int
) -> tuple[dict[int, PropertyResult], str]:
    """Per checked index (probes included) its result, and the build error ("" if none),
    from one design's kept log lines."""
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in log.splitlines():
        line = line.strip()
        if line.startswith(marker + " "):
            current = line[len(marker) + 1:]
            sections[current] = []
        else:
            sections[current].append(line)
    ran = [key for key in sections if key.isdigit()]
    if "check" not in sections:
        error = next((line for line in sections[""] if "ERROR:" in line), "")
        why = _build_error(error, lowered, rc)
        return {int(key): PropertyResult("error", why) for key in _all_indices(lowered)}, why
    rejected = [
        line for line in sections[""]
        if any(r in line for r in _REJECTED) and (ANSWER_FILE in line or CHECKS_FILE in line)
    ]
    drivers = [line for line in sections["check"] if line.startswith(_DRIVERS)]
    if rejected or drivers:
        problem = (rejected or drivers)[0]
        why = _build_error(problem, lowered, rc) if rejected else f"the answer drives a signal the design drives: {problem}"
        return {int(key): PropertyResult("error", why[:300]) for key in _all_indices(lowered)}, why[:300]
    results: dict[int, PropertyResult] = {}
    for key in ran:
        lines = sections[key]
        if _FAILED in lines:
            results[int(key)] = PropertyResult("fails", "a counterexample within the depth")
        elif _PROVED in lines:
            results[int(key)] = PropertyResult("proved", "the induction closed")
        elif any(line.startswith("Reached maximum number of time steps") for line in lines):
            results[int(key)] = PropertyResult("bounded", f"no counterexample within {depth} cycles after reset")
        elif rc == "124":
            results[int(key)] = PropertyResult("undecided", "timeout")
        else:
            error = next((line for line in lines if "ERROR:" in line), "Yosys stopped without a verdict")
            results[int(key)] = PropertyResult("undecided", error[:300])
    for key in _all_indices(lowered):
        if int(key) not in results:
            results[int(key)] = PropertyResult("undecided", "timeout" if rc == "124" else "not reached")
    return results, ""


def _all_indices(lowered: Lowered) -> list[str]:
    count = len(lowered.properties)
    supported = [p for p in lowered.properties if p.supported]
    return [str(p.index) for p in supported] + [str(p.index + count) for p in supported if p.has_antecedent]


def _build_error(error: str, lowered: Lowered, rc: str) -> str:
    """The message for a design that Yosys could not read, with the answer's files named."""
    if not error:
        return "timeout while reading the design" if rc == "124" else "Yosys stopped before checking"
    message = error.replace(f"{ANSWER_FILE}:", "answer line ")
    where = re.search(rf"{re.escape(CHECKS_FILE)}:(\d+)", error)
    if where:
        line = int(where.group(1))
        owner = _owner(lowered, line)
        message = error.replace(f"{CHECKS_FILE}:{line}", f"property {owner}")
    return message[:300]


def _owner(lowered: Lowered, line: int) -> str:
    """The label of the property whose checker block holds ``line`` of the checks file."""
    for number, text in enumerate(lowered.checks.splitlines(), start=1):
        if number == line:
            for p in lowered.properties:
                if p.lowered and text.strip() and text.strip() in p.lowered:
                    return p.label
    return "(checker)"


def insert_before_endmodule(source: str, top: str) -> str | None:
    """``source`` with the answer's and the checker's files included before ``top``'s
    ``endmodule``; None when ``top`` is not found."""
    code = _blanked(source)
    start = re.search(rf"\bmodule\s+{re.escape(top)}\b", code)
    if not start:
        return None
    end = re.compile(r"\bendmodule\b").search(code, start.end())
    if not end:
        return None
    include = f'\n`include "{ANSWER_FILE}"\n`include "{CHECKS_FILE}"\n'
    return source[: end.start()] + include + source[end.start():]


def _blanked(source: str) -> str:
    """``source`` with comments blanked (same length)."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), source, flags=re.S)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
