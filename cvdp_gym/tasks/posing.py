"""Verification as a task: a design problem posed as a test-bench or an assertion problem.

Contract: ``pose(problems, TaskOptions(task, agentic=, coverage=))`` is the one posing path:
the environments' ``task=``, the command line's ``--task`` and a dataset spec's ``#TASK``
fragment all read their text with ``TaskOptions.parse`` (``TASK[?agentic=1&coverage=1]``,
each entry point giving its own defaults) and pose with ``pose``. Each problem with a
reference design (CVDP, VerilogEval, RTLLM, ChipBench, the training sets) becomes:

- ``testbench``: the model writes a self-checking test bench (module ``tb`` in ``tb.sv``) for
  the design the specification describes, seeing the specification and the design's ports,
  never the design; graded by :mod:`.testbench_flow` (it passes on the reference and fails on
  seeded mutants that are shown not to be equivalent);
- ``testbench-cocotb``: the same with a cocotb test bench in Python (``test_tb.py``), run by
  cocotb 2.0.1 on Icarus: for users whose flows verify in Python, as CVDP's harnesses do;
- ``assertion``: the model writes SVA properties for the design the specification describes,
  seeing the specification and the design's header (its ports), never its body; they are
  placed at the end of the design's top module but may read only its ports and their own
  helper declarations (a restatement of the design needs its text or its internal names);
  graded by :mod:`.assertion_flow` with Yosys's formal (ports only, hold on the reference, not
  vacuous, fail on mutants).

``design`` leaves the problems as their benchmarks pose them; a problem with no reference
design is left out (``task_problem`` returns None for it). The task problem keeps the
reference design under ``reference`` and what the graders need in ``extra["design"]``
(:class:`~cvdp_gym.tasks.design.DesignUnderTest`). ``POSINGS`` is what
:func:`cvdp_gym.data.load_dataset` (a lower layer) reads by name for a ``#TASK`` fragment.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl

from cvdp_gym.data.benchmark import SPEC_FILE, flag
from cvdp_gym.data.problems import Problem
from cvdp_gym.errors import ConfigError
from cvdp_gym.tasks.design import design_under_test
from cvdp_gym.tasks.names import (
    ASSERTION,
    ASSERTION_FLOW,
    BENCH_FILE,
    COCOTB_FILE,
    DESIGN,
    PROPERTIES_FILE,
    TASKS,
    TESTBENCH,
    TESTBENCH_COCOTB,
    TESTBENCH_FLOW,
    VERIF_DIR,
)
from cvdp_gym.tasks.prompts import SYSTEM_MESSAGES, specification, task_prompt

__all__ = ["POSINGS", "TaskOptions", "is_task_problem", "pose", "task_problem"]

#: The options a task's text may carry after ``?`` (``testbench?coverage=1``).
_OPTIONS = ("agentic", "coverage")


@dataclass(frozen=True)
class TaskOptions:
    """How problems are posed: as which task, as agentic episodes, with the bench's coverage measured.

    ``coverage``: a test bench's grade also measures its line and toggle coverage of the
    reference (Verilator; about 4.5 s an answer, so off by default, on for ``eval --task``).
    ``agentic``: as agentic episodes, the specification in ``docs/specification.md`` (never
    the design), the answer written to ``verif/``."""

    task: str = DESIGN
    agentic: bool = False
    coverage: bool = False

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ConfigError(f"unknown task {self.task!r}; expected one of {', '.join(TASKS)}")

    @classmethod
    def parse(cls, text: str, *, agentic: bool = False, coverage: bool = False) -> TaskOptions:
        """``TASK[?agentic=1&coverage=1]``; an option the text leaves out takes the caller's default
        (each entry point's own: the fragment off and off, ``--task`` its ``--agentic`` and on,
        ``task=`` the environment's kind and off, so every output stays as it was)."""
        task, _, query = text.partition("?")
        options = dict(parse_qsl(query, keep_blank_values=True)) if query else {}
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise ConfigError(f"unknown option {unknown[0]!r} of task {text!r}; expected {' or '.join(_OPTIONS)}")
        return cls(
            task.strip(),
            agentic=flag(options, "agentic") if "agentic" in options else agentic,
            coverage=flag(options, "coverage") if "coverage" in options else coverage,
        )


def is_task_problem(problem: Problem) -> bool:
    """Whether ``problem`` asks for a test bench or assertions (posed by :func:`task_problem`)."""
    return problem.grader in (TESTBENCH_FLOW, ASSERTION_FLOW)


def pose(problems: Iterable[Problem], options: TaskOptions) -> list[Problem]:
    """Every problem of ``problems`` that can be posed as ``options.task`` (those with a
    reference design), posed; ``design`` leaves them as they are."""
    if options.task == DESIGN:
        return list(problems)
    posed = (task_problem(p, options.task, agentic=options.agentic, coverage=options.coverage) for p in problems)
    return [p for p in posed if p is not None]


def task_problem(problem: Problem, task: str, *, agentic: bool = False, coverage: bool = False) -> Problem | None:
    """``problem`` posed as ``task`` (``design`` returns it as it is), or None with no reference
    (``agentic``, ``coverage``: as :class:`TaskOptions` says)."""
    if task not in TASKS:
        raise ConfigError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    if is_task_problem(problem):  # already posed (an adapter handing an environment's problems on)
        if problem.extra.get("task") != task:
            raise ConfigError(f"{problem.id} is already posed as the {problem.extra.get('task')} task, not {task}")
        return problem
    if task == DESIGN:
        return problem if problem.agentic == agentic else None
    design = design_under_test(problem)
    if design is None:
        return None
    spec = specification(problem)
    target, flow = {
        TESTBENCH: (BENCH_FILE, TESTBENCH_FLOW), TESTBENCH_COCOTB: (COCOTB_FILE, TESTBENCH_FLOW), ASSERTION: (PROPERTIES_FILE, ASSERTION_FLOW),
    }[task]
    prompt = task_prompt(task, spec, design)
    context: dict[str, str] = {}
    if agentic:
        target = f"{VERIF_DIR}/{target}"
        context = {SPEC_FILE: spec}  # the design is never shown: the tasks check it against the specification
        prompt += f"\n\nWrite it to `{target}` (the specification is also in `{SPEC_FILE}`)."
    return dataclasses.replace(
        problem,
        id=f"{problem.id}.{task}",
        agentic=agentic,
        prompt=prompt,
        system_message=SYSTEM_MESSAGES[task],
        context=context,
        targets=(target,),
        harness={},
        reference={design.target: design.text},
        patch={},
        repo=None,
        grader=flow,
        task=f"{problem.task}:{task}" if problem.task else task,
        extra={"task": task, "design": design.as_dict(), "draws": _DRAWS}
        | ({"testbench": {"coverage": True}} if coverage and task == TESTBENCH else {}),
    )


def _pose_fragment(problems: list[Problem], fragment: str) -> list[Problem]:
    """A dataset spec's ``#TASK[?options]`` fragment posed (off and off by default)."""
    return pose(problems, TaskOptions.parse(fragment))


#: Why a task's verdict can change from run to run (``harness.randomness.problem_randomness``).
_DRAWS = "the seeded bugs it is scored on are drawn per run from the problem's pool (harness_seed fixes the draw)"
#: A dataset spec's ``#TASK[?options]`` fragment, by task: what :func:`cvdp_gym.data.load_dataset`
#: reads by name (``PluginTable("posing", "POSINGS")``), as the flow table reads :mod:`.flow`.
POSINGS: dict[str, Callable[[list[Problem], str], list[Problem]]] = dict.fromkeys(TASKS, _pose_fragment)
