"""The assertion task's flow: a model's SVA properties checked by Yosys on the reference and on seeded bugs.

Contract: ``AssertionTaskFlow().run(sandbox, problem, files, limits=, seed=)`` (a problem posed
by :func:`cvdp_gym.tasks.posing.task_problem` as ``assertion``) returns a
``HarnessResult`` and never raises on what the answer holds:

0. the properties may read only the design's ports and what they declare themselves
   (:mod:`cvdp_gym.tasks.assertions.ports_only`: compiled with pyslang inside a stub of the
   design's top that holds only its ports and parameters): an answer naming an internal
   signal of the design, a hierarchical name into it, or instantiating a module is
   ``reach_in``, with the name and its line; a name declared nowhere is a ``build_error``.
   Nothing runs for either;
1. the design's clock, its edge and its reset come from the reference
   (:func:`cvdp_gym.equivalence.ports.read_design`): the properties are sampled on the
   primary clock, the reset is asserted in the first step;
2. ``mutants`` bugs are drawn as for test benches (:mod:`cvdp_gym.tasks.mutants`:
   shown not equivalent, drawn with the run's ``seed``);
3. the answer's properties are lowered to what Yosys 0.40 proves and checked on the
   reference and on each bug to ``depth`` cycles (:mod:`cvdp_gym.tasks.assertions`);
4. the verdict: an answer Yosys cannot read with the design is a ``build_error``; one with
   no supported property, or whose supported properties are all vacuous, catches nothing;
   one with a property that fails on the reference raised a false alarm (``test_failure``,
   nothing caught counts); the reference's check not decided in time is ``undecided``
   (excluded). Otherwise each drawn bug is one test, passed when some property (supported,
   not vacuous, holding on the reference) fails on it; the answer passes when every bug is
   caught.

``official`` holds each property's verdict on the reference (``proved`` or ``bounded``), its
vacuity, the reason of an unsupported one, each bug's outcome (its kind only) and the kill
rate. Settings (``extra["assertion"]``): ``mutants`` (4), ``depth`` (12).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from cvdp_gym.equivalence.ports import read_design
from cvdp_gym.errors import HarnessError
from cvdp_gym.harness.flows.flow_kit import (
    BUILD_ERROR,
    REACH_IN,
    TEST_FAILURE,
    UNDECIDED,
    UNSUPPORTED,
    HarnessResult,
    Limits,
    Problem,
    Sandbox,
    TestCounts,
)
from cvdp_gym.seeds import draw_seed
from cvdp_gym.tasks.assertions import PropertyReport, check_properties
from cvdp_gym.tasks.assertions.ports_only import outside_names
from cvdp_gym.tasks.design import DesignUnderTest
from cvdp_gym.tasks.mutants import draw_mutants
from cvdp_gym.tasks.names import ASSERTION_FLOW, PROPERTIES_FILE

__all__ = ["AssertionTaskFlow"]

DEFAULTS: dict[str, Any] = {"mutants": 4, "depth": 12}
REFERENCE = "reference"


class AssertionTaskFlow:
    """Grades SVA properties by the bugs they catch without failing, or idling on, the reference."""

    name = ASSERTION_FLOW
    #: Its answer is a bench or properties, read by its own rules (the gate reads its directives).
    answer_kind = None
    #: Its verdict depends on the run's seed (the bugs drawn from it): the result records the seed.
    seeded: ClassVar[bool] = True

    def run(
        self, sandbox: Sandbox, problem: Problem, files: Mapping[str, str], *, limits: Limits,
        keep_dir: Path | None = None, seed: int | None = None,
    ) -> HarnessResult:
        start = time.monotonic()
        settings = {**DEFAULTS, **dict(problem.extra.get("assertion") or {})}
        design = DesignUnderTest.from_dict(problem.extra["design"])
        answer = files.get(problem.targets[0] if problem.targets else PROPERTIES_FILE, "")
        try:
            reach = outside_names(design.text, design.top, answer)
        except ValueError as exc:
            return _result(problem, False, UNSUPPORTED, str(exc), TestCounts(), {}, start)
        if reach is not None:
            failure = REACH_IN if reach.inside else BUILD_ERROR
            return _result(problem, False, failure, reach.reason, TestCounts(), {"task": "assertion", "findings": [reach.reason]}, start)
        try:
            described = read_design(design.text, design.top, "reference.sv")
        except (HarnessError, RecursionError) as exc:
            return _result(problem, False, UNSUPPORTED, f"the reference cannot be read: {exc}", TestCounts(), {}, start)
        clock = described.clocks[0] if described.sequential and described.clocks else None
        edge = "negedge" if clock and described.clock_edges.get(clock) == frozenset({"negedge"}) else "posedge"
        reset = (described.resets[0].name, not described.resets[0].active_low) if described.resets else None
        draw = draw_mutants(
            design, sandbox, count=int(settings["mutants"]), seed=draw_seed() if seed is None else seed, limits=limits,
        )
        official: dict[str, Any] = {"task": "assertion", "draw": draw.summary(), "clock": clock, "reset": reset and reset[0]}
        if not draw.mutants:
            return _result(problem, False, UNSUPPORTED, draw.why, TestCounts(), official, start)
        designs = {REFERENCE: design.text} | {f"m{i}": m.text for i, m in enumerate(draw.mutants, 1)}
        report = check_properties(
            sandbox, designs, design.top, answer, clock=clock, reset=reset, edge=edge,
            depth=int(settings["depth"]), reference=REFERENCE, limits=limits,
        )
        official["properties"] = _properties(report)
        k = len(draw.mutants)
        if report.error:
            return _result(problem, False, BUILD_ERROR, report.error, TestCounts(), official, start)
        missed = TestCounts(k, 0, k)
        verdict = _reference_verdict(report)
        official["reference"] = {"built": True, "passed": verdict is None, "why": verdict[1] if verdict else ""}
        if verdict is not None:
            official.update(kill_rate=0.0, killed=0)
            return _result(problem, False, verdict[0], verdict[1], missed if verdict[0] != UNDECIDED else TestCounts(), official, start)
        caught = [report.killed(f"m{i}") for i in range(1, k + 1)]
        official["mutants"] = [{"kind": m.kind, "killed": c} for m, c in zip(draw.mutants, caught, strict=True)]
        killed = sum(caught)
        official.update(kill_rate=killed / k, killed=killed)
        why = f"the properties hold on the reference and catch {killed} of {k} seeded bugs"
        passed = killed == k
        return _result(problem, passed, None if passed else TEST_FAILURE, why, TestCounts(k, killed, k - killed), official, start)


def _reference_verdict(report: PropertyReport) -> tuple[str, str] | None:
    """(failure class, why) when the properties do not hold meaningfully on the reference; None when they do."""
    supported = [p for p in report.properties if p.supported]
    if not supported:
        reasons = "; ".join(f"{p.label}: {p.reason}" for p in report.properties[:3]) or "no assertion found"
        return TEST_FAILURE, f"no supported property ({reasons})"
    results = report.verdicts.get(report.reference, {})
    failing = [p for p in supported if results.get(p.index) is not None and results[p.index].verdict == "fails"]
    if failing:
        return TEST_FAILURE, f"property {failing[0].label} fails on the reference design (a false alarm)"
    meaningful = [p for p in supported if not report.vacuous.get(p.index)]
    if not meaningful:
        return TEST_FAILURE, "every property is vacuous on the reference (its condition is never true)"
    if not report.holds_on_reference:
        open_ = next(p for p in meaningful if results.get(p.index) is None or not results[p.index].holds)
        why = results[open_.index].why if results.get(open_.index) else "not checked"
        return UNDECIDED, f"property {open_.label} was not decided on the reference: {why}"
    return None


def _properties(report: PropertyReport) -> list[dict[str, Any]]:
    results = report.verdicts.get(report.reference, {})
    return [
        {
            "label": p.label, "supported": p.supported, "reason": p.reason,
            "reference": results[p.index].verdict if p.index in results else None, "vacuous": report.vacuous.get(p.index),
        }
        for p in report.properties
    ]


def _result(
    problem: Problem, passed: bool, failure_class: str | None, reason: str, tests: TestCounts,
    official: dict[str, Any], start: float,
) -> HarnessResult:
    return HarnessResult.of_one_check(
        problem.id, "assertions", passed, failure_class, reason, tests=tests, official=official, wall_s=time.monotonic() - start,
    )
