"""What ``cvdp-gym eval`` runs: one plan per answer source, and the judge of its comprehension answers.

A :data:`Plan` is ``(keys, start, notes)``: the ``(problem id, sample)`` pairs the run will
produce, a function that takes the evaluator and returns the coroutine producing them, and
notes for the user (problems left out and why). The four builders cover the four sources:
a responses file, single answers from an endpoint, agentic episodes and refine episodes.
A plan that cannot be built is a one-line error (exit 2), like every option error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cvdp_gym.cli._options import fail

if TYPE_CHECKING:
    from cvdp_gym.data import Problem
    from cvdp_gym.eval import ChatSettings
    from cvdp_gym.eval.agentic import AgenticSettings
    from cvdp_gym.eval.cli_agent import AgentSettings
    from cvdp_gym.eval.refine import RefineSettings
    from cvdp_gym.grading import Grader
    from cvdp_gym.grading.judge import LLMJudge

Plan = tuple[list[tuple[str, int]], Callable, list[str]]


def eval_judge(base_url: str | None, model: str, concurrency: int, retries: int, retry_wait: float, cache: Path) -> LLMJudge | None:
    """The LLM judge of cid009/cid010 answers at ``base_url`` (None: no judge), caching every
    judgement in ``cache`` so a resumed run never asks twice."""
    if base_url is None:
        return None
    from cvdp_gym.grading.judge import JudgeSettings, LLMJudge

    settings = JudgeSettings(base_url=base_url, model=model, concurrency=concurrency, retries=retries, retry_wait_s=retry_wait)
    return LLMJudge(settings, cache=cache)


def file_plan(path: Path, problems: list[Problem]) -> Plan:
    """Samples to grade, the coroutine that grades them, and notes (unknown ids, unanswered)."""
    from cvdp_gym.eval import ResponsesFileError, eval_responses, read_responses

    try:
        answers = read_responses(path)
    except ResponsesFileError as exc:
        raise fail(str(exc)) from None
    by_id = {p.id: p for p in problems}
    answers = _by_benchmark_names(answers, problems)
    unknown = sorted({a.id for a in answers if a.id not in by_id})
    notes = []
    if unknown:
        shown = ", ".join(unknown[:10]) + (", ..." if len(unknown) > 10 else "")
        notes.append(f"skipped answers to {len(unknown)} id(s) not among the selected problems: {shown}")
    unanswered = set(by_id) - {a.id for a in answers}
    if unanswered:
        notes.append(f"{len(unanswered)} selected problem(s) have no answer in {path}")
    answers = [a for a in answers if a.id in by_id]
    return [(a.id, a.sample) for a in answers], lambda ev: eval_responses(ev, by_id, answers), notes


def reference_plan(problems: list[Problem], sources: dict[str, Problem] | None = None, seed: int = 0) -> Plan:
    """Each problem's reference solution graded as its answer (``eval --references``); for the
    test-bench task (``sources``: the problems as their benchmarks pose them), each benchmark's
    own test bench scored on the same seeded bugs (``eval.golden_benches``)."""
    from cvdp_gym.eval.run import eval_references

    if sources is not None:
        from cvdp_gym.eval.golden_benches import eval_golden

        notes = ["the baseline row: each benchmark's own test bench (its flow) scored on the same seeded bugs"]
        return [(p.id, 0) for p in problems], lambda ev: eval_golden(ev, problems, sources, seed), notes

    missing = [p.id for p in problems if not p.reference]
    notes = [f"{len(missing)} selected problem(s) have no reference solution (counted failed, no_reference)"] if missing else []
    return [(p.id, 0) for p in problems], lambda ev: eval_references(ev, problems), notes


def _by_benchmark_names(answers: list, problems: list[Problem]) -> list:
    """Answers that name a problem by its benchmark's own name (VerilogEval v1's ``task_id``,
    ``Prob001_zero``), given the id of the one selected problem with that name."""
    import dataclasses

    ids = {p.id for p in problems}
    named: dict[str, list[str]] = {}
    for problem in problems:
        if problem.extra.get("name"):
            named.setdefault(str(problem.extra["name"]), []).append(problem.id)
    return [
        dataclasses.replace(a, id=named[a.id][0]) if a.id not in ids and len(named.get(a.id, ())) == 1 else a
        for a in answers
    ]


def endpoint_plan(problems: list[Problem], settings: ChatSettings, samples: int) -> Plan:
    """Samples to fetch and grade, the coroutine that does it, and notes."""
    from cvdp_gym.eval import eval_endpoint

    answerable = [p for p in problems if p.targets or p.reference_answer is not None]
    notes = []
    if len(answerable) < len(problems):
        notes.append(f"left out {len(problems) - len(answerable)} problem(s) with no target files or reference answer to answer")
    keys = [(p.id, s) for p in answerable for s in range(samples)]
    return keys, lambda ev: eval_endpoint(ev, answerable, settings, samples), notes


def agentic_plan(
    problems: list[Problem], settings: ChatSettings, agentic: AgenticSettings, samples: int, grader: Grader,
    reward: Callable, agent: AgentSettings | None = None,
) -> Plan:
    """Episodes to play (agentic problems only), the coroutine that plays them, and notes;
    ``agent``: played by a command-line agent instead of the model's tool calls."""
    from cvdp_gym.eval.agentic import env_factory, eval_agentic, playable_problems
    from cvdp_gym.eval.cli_agent import eval_cli_agent

    try:
        playable, notes = playable_problems(problems)
    except ValueError as exc:
        raise fail(str(exc)) from None
    make_env = env_factory(playable, grader, reward, agentic)
    keys = [(p.id, s) for p in playable for s in range(samples)]
    if agent is not None:
        return keys, lambda ev: eval_cli_agent(ev, playable, settings, agent, make_env, samples), notes
    return keys, lambda ev: eval_agentic(ev, playable, settings, agentic, make_env, samples), notes


def refine_plan(problems: list[Problem], settings: ChatSettings, refine: RefineSettings, samples: int, grader: Grader, reward: Callable) -> Plan:
    """Refine episodes to play (non-agentic problems only), the coroutine that plays them, and notes."""
    from cvdp_gym.eval.refine import eval_refine, refinable_problems, refine_env_factory

    try:
        refinable, notes = refinable_problems(problems)
    except ValueError as exc:
        raise fail(str(exc)) from None
    make_env = refine_env_factory(refinable, grader, reward, refine)
    keys = [(p.id, s) for p in refinable for s in range(samples)]
    return keys, lambda ev: eval_refine(ev, refinable, settings, refine, make_env, samples), notes
