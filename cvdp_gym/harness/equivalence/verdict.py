"""The reference grader's verdict: both stages' results folded into one ``HarnessResult``.

Contract (API29): ``judge(...)`` passes an answer only when the simulation matched on every
compared cycle and the formal stage found no difference (``proved`` or ``bounded``), or
when the formal stage was ``undecided`` and the simulation matched (labelled in
``official["label"]``); mode ``simulation`` needs only the simulation, mode ``formal`` only
a ``proved``/``bounded`` formal result. A mismatch or a counterexample is a
``test_failure``; a simulation cut by its limit a ``timeout``. ``tests`` counts compared
cycles (passed: every output matched) for partial credit; a counterexample the simulation
missed counts as one more failed comparison. ``stopped(...)`` is the result of a run that
ended before any comparison (``unsupported``, ``interface_error``, ``build_error``...).
``official`` always holds ``mode``, ``simulation``, ``formal`` and ``label``.
"""

from __future__ import annotations

from typing import Any

from cvdp_gym.data.problems import Problem
from cvdp_gym.harness.equivalence.formal import TIMED_OUT, FormalResult
from cvdp_gym.harness.equivalence.recipes import CODEV_R1, VERITHOUGHTS
from cvdp_gym.harness.equivalence.settings import Settings
from cvdp_gym.harness.equivalence.testbench import SimulationResult
from cvdp_gym.harness.results import (
    TEST_FAILURE,
    TIMEOUT,
    UNSUPPORTED,
    HarnessResult,
    ServiceResult,
    TestCounts,
)

FLOW = "reference"
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
        name=FLOW, passed=False, failure_class=failure_class, reason=reason, returncode=None,
        tests=TestCounts(1, 0, 1), wall_s=wall_s, log_tail=log_tail[-4000:],
    )
    return HarnessResult(
        problem_id=problem.id, passed=False, failure_class=failure_class, reason=reason, services=[service],
        wall_s=wall_s, official=details, defect=problem.defect,
    )


def judge(
    problem: Problem, settings: Settings, simulation: SimulationResult | None, formal: FormalResult | None,
    *, sim_timed_out: bool, wall_s: float, log_tail: str, extra: dict[str, Any],
) -> HarnessResult:
    """Fold the stages (None: not run in this mode) into the verdict."""
    sim_ok = simulation is None or simulation.verdict == "match"
    formal_ok = formal is None or formal.verdict in ("proved", "bounded", "undecided", "skipped")
    if settings.mode in ("formal", VERITHOUGHTS) and formal is not None and formal.verdict == "undecided":
        formal_ok = False  # no simulation to fall back on
    passed = sim_ok and formal_ok and (simulation is not None or formal is not None)
    failure, reason = None, ""
    if simulation is not None and simulation.verdict == "error":
        failure = TIMEOUT if sim_timed_out else TEST_FAILURE
        reason = "the simulation did not finish within its time limit" if sim_timed_out else simulation.why
    elif simulation is not None and simulation.verdict == "mismatch":
        failure, reason = TEST_FAILURE, _mismatch_reason(simulation)
    elif formal is not None and formal.verdict == "counterexample":
        failure = TEST_FAILURE
        step = formal.trace[-1]["step"] if formal.trace else "?"
        matched = " the simulation matched, but" if simulation is not None else ""
        after = " after reset" if (extra.get("interface") or {}).get("sequential") else ""
        reason = f"{matched} the formal stage found a difference at step {step}{after}".strip()
    elif formal is not None and formal.verdict == "undecided" and not formal_ok:
        failure = TIMEOUT if formal.why == TIMED_OUT else UNSUPPORTED
        reason = f"the formal stage was undecided: {formal.why}"
    if passed:
        reason = _pass_reason(simulation, formal)
    tests = _tests(simulation, formal, passed)
    official = {
        "mode": settings.mode,
        "simulation": _simulation_dict(simulation, settings) if simulation is not None else dict(SKIPPED),
        "formal": formal.as_dict() if formal is not None else dict(SKIPPED),
        "label": _label(settings, simulation, formal, passed, reason),
        **extra,
    }
    service = ServiceResult(
        name=FLOW, passed=passed, failure_class=failure, reason=reason, returncode=None, tests=tests,
        wall_s=wall_s, log_tail=log_tail[-4000:],
    )
    return HarnessResult(
        problem_id=problem.id, passed=passed, failure_class=failure, reason=reason, services=[service],
        wall_s=wall_s, official=official, defect=problem.defect,
    )


def _tests(simulation: SimulationResult | None, formal: FormalResult | None, passed: bool) -> TestCounts:
    if simulation is None or not simulation.compared:
        return TestCounts(1, int(passed), int(not passed))
    counts = TestCounts(simulation.compared, simulation.matched, simulation.compared - simulation.matched)
    if formal is not None and formal.verdict == "counterexample" and simulation.verdict == "match":
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
        parts.append(f"all {simulation.compared} compared cycles matched")
    if formal is not None:
        parts.append({
            "proved": "equivalence proved by induction",
            "bounded": f"formal: {formal.why}",
            "undecided": f"the formal stage was undecided ({formal.why})",
        }.get(formal.verdict, formal.verdict))
    return "; ".join(parts)


def _label(
    settings: Settings, simulation: SimulationResult | None, formal: FormalResult | None, passed: bool, reason: str,
) -> str:
    label = _stages_label(settings, simulation, formal, passed, reason)
    if simulation is not None and simulation.verdict == "match" and not simulation.reference_changes:
        label += "; the reference's outputs never changed: the stimulus may not exercise it"
        label += " (a reset of the wrong polarity?)"
    return label[:600]


def _stages_label(
    settings: Settings, simulation: SimulationResult | None, formal: FormalResult | None, passed: bool, reason: str,
) -> str:
    if settings.mode == "simulation":
        return "simulation only (mode=simulation)" + ("" if passed else f": {reason}")
    if settings.mode == "formal":
        return "formal only (mode=formal)" + ("" if passed else f": {reason}")
    if settings.mode in (CODEV_R1, VERITHOUGHTS):
        return f"the {settings.mode} recipe, re-implemented from its description" + ("" if passed else f": {reason}")
    if formal is not None and formal.verdict == "undecided" and simulation is not None:
        return f"simulation only: the formal stage was undecided ({formal.why})"[:500]
    sim, proof = simulation.verdict if simulation else "skipped", formal.verdict if formal else "skipped"
    return f"both stages: simulation {sim}, formal {proof}"


def _simulation_dict(simulation: SimulationResult, settings: Settings) -> dict[str, Any]:
    return {
        "verdict": simulation.verdict, "simulator": settings.simulator, "cycles": simulation.compared,
        "matched": simulation.matched, "mismatches": dict(simulation.mismatches), "first": simulation.first,
        "reference_changes": simulation.reference_changes, "why": simulation.why,
    }
