"""The reference grader's verdict: both stages' results folded into one ``HarnessResult``.

Contract (API29, issue 35): an answer passes only when no stage found a difference **and**
some stage decided: the simulation **covered** the design (``Coverage.complete``: every bit
of the reference's outputs and registers rose and fell in normal operation), or the formal
stage **proved** equivalence or **bounded** it at ``min_depth`` steps or more (a
combinational design has no state: one step is the whole check). Where the simulation
matched but neither decided (state never reached; a formal stage ``undecided``, or bounded
short of ``min_depth`` because its time limit ended it), the verdict is ``undecided``: never
a pass. Mode ``simulation`` needs a covering simulation, mode ``formal`` a decisive formal
stage (an undecided one keeps its own class: ``timeout``, or ``unsupported`` for a design
Yosys cannot model). The two published recipes (``codev-r1``, ``verithoughts``) judge as
their descriptions say, nothing more: a match of every cycle, a bound of 50 steps.

A mismatch or a counterexample is a ``test_failure``; a simulation cut short (its time
limit, the sandbox's, a signal) is a ``timeout`` (``resource_limit`` for a signal) whatever
it printed before the cut. ``tests`` counts compared cycles (passed: every output matched)
for partial credit; a failing verdict whose cycles all matched (a counterexample the
simulation missed, a cut run, ``undecided``) counts one more failed check, so partial
credit stays below a pass. ``stopped(...)`` is the result of a run that ended before any
comparison (``unsupported``, ``interface_error``, ``build_error``...). ``official`` always
holds ``mode``, ``simulation`` (with its ``coverage``), ``formal`` and ``label``.
"""

from __future__ import annotations

from typing import Any

from cvdp_gym.data.problems import REFERENCE_GRADER, Problem
from cvdp_gym.equivalence.formal import TIMED_OUT, FormalResult
from cvdp_gym.equivalence.recipes import CODEV_R1, VERITHOUGHTS
from cvdp_gym.equivalence.settings import Settings
from cvdp_gym.equivalence.testbench import SimulationResult
from cvdp_gym.harness.results import (
    TEST_FAILURE,
    TIMEOUT,
    UNDECIDED,
    UNSUPPORTED,
    HarnessResult,
    ServiceResult,
    TestCounts,
)

SKIPPED: dict[str, Any] = {"verdict": "skipped"}


def stopped(
    problem: Problem, failure_class: str, reason: str, *, mode: str = "", wall_s: float = 0.0,
    log_tail: str = "", official: dict[str, Any] | None = None,
) -> HarnessResult:
    """A run that ended before the designs were compared."""
    label = f"{'the reference cannot be graded' if failure_class == UNSUPPORTED else failure_class}: {reason}"
    details = {"mode": mode, "simulation": dict(SKIPPED), "formal": dict(SKIPPED), "label": label[:500]}
    details.update(official or {})
    service = ServiceResult(
        name=REFERENCE_GRADER, passed=False, failure_class=failure_class, reason=reason, returncode=None,
        tests=TestCounts(1, 0, 1), wall_s=wall_s, log_tail=log_tail[-4000:],
    )
    return HarnessResult(
        problem_id=problem.id, passed=False, failure_class=failure_class, reason=reason, services=[service],
        wall_s=wall_s, official=details, defect=problem.defect,
    )


def judge(
    problem: Problem, settings: Settings, simulation: SimulationResult | None, formal: FormalResult | None,
    *, sim_cut: tuple[str, str] | None = None, wall_s: float, log_tail: str, extra: dict[str, Any],
) -> HarnessResult:
    """Fold the stages (None: not run in this mode) into the verdict; ``sim_cut``: the failure
    class and reason of a simulation cut short (None: it ran to its end)."""
    sequential = bool((extra.get("interface") or {}).get("sequential"))
    failure, reason = _difference(simulation, formal, sim_cut, sequential)
    if failure is None:
        failure, reason = _undecided(settings, simulation, formal, sequential)
    passed = failure is None and (simulation is not None or formal is not None)
    if passed:
        reason = _pass_reason(simulation, formal)
    tests = _tests(simulation, formal, passed)
    official = {
        "mode": settings.mode,
        "simulation": _simulation_dict(simulation, settings) if simulation is not None else dict(SKIPPED),
        "formal": formal.as_dict() if formal is not None else dict(SKIPPED),
        "label": _label(settings, simulation, formal, passed, reason, _decisive(formal, settings, sequential)),
        **extra,
    }
    if simulation is not None and sim_cut:
        official["simulation"]["cut"] = sim_cut[1]
    service = ServiceResult(
        name=REFERENCE_GRADER, passed=passed, failure_class=failure, reason=reason, returncode=None, tests=tests,
        wall_s=wall_s, log_tail=log_tail[-4000:],
    )
    return HarnessResult(
        problem_id=problem.id, passed=passed, failure_class=failure, reason=reason, services=[service],
        wall_s=wall_s, official=official, defect=problem.defect,
    )


def _decisive(formal: FormalResult | None, settings: Settings, sequential: bool) -> bool:
    """Whether the formal stage decided: ``proved``, or ``bounded`` at ``min_depth`` steps or
    more (a combinational design: one step, its whole behaviour)."""
    if formal is None:
        return False
    needed = settings.min_depth if sequential else 1
    return formal.verdict == "proved" or (formal.verdict == "bounded" and formal.depth >= needed)


def _difference(
    simulation: SimulationResult | None, formal: FormalResult | None, sim_cut: tuple[str, str] | None, sequential: bool,
) -> tuple[str | None, str]:
    """The failure when a stage found a difference or did not finish (None: neither)."""
    if simulation is not None and sim_cut and simulation.verdict != "mismatch":
        return sim_cut
    if simulation is not None and simulation.verdict == "error":
        return TEST_FAILURE, simulation.why
    if simulation is not None and simulation.verdict == "mismatch":
        return TEST_FAILURE, _mismatch_reason(simulation)
    if formal is not None and formal.verdict == "counterexample":
        step = formal.trace[-1]["step"] if formal.trace else "?"
        matched = " the simulation matched, but" if simulation is not None else ""
        after = " after reset" if sequential else ""
        return TEST_FAILURE, f"{matched} the formal stage found a difference at step {step}{after}".strip()
    return None, ""


def _undecided(
    settings: Settings, simulation: SimulationResult | None, formal: FormalResult | None, sequential: bool,
) -> tuple[str | None, str]:
    """The failure when no stage found a difference but none decided (None: one did)."""
    if settings.mode == CODEV_R1:  # the recipe: every cycle matched, nothing more
        return None, ""
    if settings.mode in ("formal", VERITHOUGHTS) and formal is not None and formal.verdict == "undecided":
        return (TIMEOUT if formal.why == TIMED_OUT else UNSUPPORTED), f"the formal stage was undecided: {formal.why}"
    if settings.mode == VERITHOUGHTS:  # the recipe: its bound of 50 steps, nothing more
        return None, ""
    covered = simulation is not None and simulation.coverage.complete
    if covered or _decisive(formal, settings, sequential):
        return None, ""
    parts = []
    if simulation is not None:
        parts.append(f"the simulation matched but did not cover the design ({_coverage_summary(simulation)})")
    if formal is not None:
        parts.append(_formal_summary(formal, settings))
    return UNDECIDED, "no stage decided: " + "; ".join(parts)


def _coverage_summary(simulation: SimulationResult) -> str:
    """The coverage in a few words: how many bits moved both ways, and the first that did not."""
    cover = simulation.coverage
    if not cover.measured:
        return "its coverage could not be measured"
    missed = f"; {', '.join(cover.missed[:3])}" if cover.missed else ""
    return f"{cover.covered} of {cover.bits} bits of the reference's outputs and registers rose and fell{missed}"


def _formal_summary(formal: FormalResult, settings: Settings) -> str:
    if formal.verdict == "bounded":
        return f"the formal stage bounded it at {formal.depth} steps, under min_depth={settings.min_depth} ({formal.why})"
    if formal.verdict == "skipped":
        return "the formal stage did not run"
    return f"the formal stage was {formal.verdict} ({formal.why})"


def _tests(simulation: SimulationResult | None, formal: FormalResult | None, passed: bool) -> TestCounts:
    if simulation is None or not simulation.compared:
        return TestCounts(1, int(passed), int(not passed))
    counts = TestCounts(simulation.compared, simulation.matched, simulation.compared - simulation.matched)
    if not passed and counts.failed == 0:  # a counterexample, a cut run, undecided: never every check passed
        counts = counts + TestCounts(1, 0, 1)
    return counts


def _mismatch_reason(simulation: SimulationResult) -> str:
    failed = simulation.compared - simulation.matched
    outputs = ", ".join(f"{name} ({count})" for name, count in simulation.mismatches.items() if count)
    first = simulation.first
    where = f"; first at cycle {first['cycle']}" if first else ""
    return f"{failed} of {simulation.compared} compared cycles mismatched{where}; outputs: {outputs or '?'}"


def _pass_reason(simulation: SimulationResult | None, formal: FormalResult | None) -> str:
    parts = []
    if simulation is not None:
        covered = "covering the design" if simulation.coverage.complete else "not covering the design"
        parts.append(f"all {simulation.compared} compared cycles matched, {covered}")
    if formal is not None:
        parts.append({
            "proved": "equivalence proved by induction",
            "bounded": f"formal: {formal.why}",
            "undecided": f"the formal stage was undecided ({formal.why})",
        }.get(formal.verdict, formal.verdict))
    return "; ".join(parts)


def _label(
    settings: Settings, simulation: SimulationResult | None, formal: FormalResult | None, passed: bool, reason: str,
    decided: bool,
) -> str:
    label = _stages_label(settings, simulation, formal, passed, reason, decided)
    if simulation is not None and simulation.verdict == "match" and not simulation.reference_changes:
        label += "; the reference's outputs never changed: the stimulus may not exercise it"
        label += " (a reset of the wrong polarity?)"
    return label[:600]


def _stages_label(
    settings: Settings, simulation: SimulationResult | None, formal: FormalResult | None, passed: bool, reason: str,
    decided: bool,
) -> str:
    if settings.mode == "simulation":
        return "simulation only (mode=simulation)" + ("" if passed else f": {reason}")
    if settings.mode == "formal":
        return "formal only (mode=formal)" + ("" if passed else f": {reason}")
    if settings.mode in (CODEV_R1, VERITHOUGHTS):
        return f"the {settings.mode} recipe, re-implemented from its description" + ("" if passed else f": {reason}")
    if passed and formal is not None and not decided:
        return f"the simulation covered the design; the formal stage was {formal.verdict} ({formal.why})"[:500]
    if not passed and reason.startswith("no stage decided"):
        return f"undecided: {reason}"[:500]
    sim, proof = simulation.verdict if simulation else "skipped", formal.verdict if formal else "skipped"
    return f"both stages: simulation {sim}, formal {proof}"


def _simulation_dict(simulation: SimulationResult, settings: Settings) -> dict[str, Any]:
    return {
        "verdict": simulation.verdict, "simulator": settings.simulator, "cycles": simulation.compared,
        "matched": simulation.matched, "mismatches": dict(simulation.mismatches), "first": simulation.first,
        "reference_changes": simulation.reference_changes, "coverage": simulation.coverage.as_dict(),
        "why": simulation.why,
    }
