"""Verification as a task: a design problem turned into a test-bench or an assertion problem.

Contract: ``task_problem(problem, task)`` poses ``problem`` (any problem with a reference
design: CVDP, VerilogEval, RTLLM, ChipBench, the training sets) as ``task``:

- ``testbench``: the model writes a self-checking test bench (module ``tb`` in ``tb.sv``) for
  the design the specification describes, seeing the specification and the design's ports,
  never the design; graded by ``tasks.testbench_flow`` (it passes on the reference
  and fails on seeded mutants that are shown not to be equivalent);
- ``testbench-cocotb``: the same with a cocotb test bench in Python (``test_tb.py``), run by
  cocotb 2.0.1 on Icarus: for users whose flows verify in Python, as CVDP's harnesses do;
- ``assertion``: the model writes SVA properties for the design the specification describes,
  seeing the specification and the design's header (its ports), never its body; they are
  placed at the end of the design's top module but may read only its ports and their own
  helper declarations (a restatement of the design needs its text or its internal names);
  graded by ``tasks.assertion_flow`` with Yosys's formal (ports only, hold on the
  reference, not vacuous, fail on mutants).

It returns None for a problem with no reference design (no task can be posed). The task
problem keeps the reference design under ``reference`` and what the graders need in
``extra["design"]`` (:class:`DesignUnderTest`, whose ``as_problem`` is the reference-graded
problem the mutants are checked against). ``task_problems`` poses a whole list.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from cvdp_gym.data.benchmark import SPEC_FILE
from cvdp_gym.data.benchmarks.catalog import BENCHMARKS
from cvdp_gym.data.module_interface import ports_interface
from cvdp_gym.data.problems import REFERENCE_GRADER, Problem
from cvdp_gym.errors import ConfigError

__all__ = [
    "ASSERTION",
    "ASSERTION_FLOW",
    "BENCH_FILE",
    "BENCH_TASKS",
    "BENCH_TOP",
    "COCOTB_FILE",
    "DESIGN",
    "PROPERTIES_FILE",
    "TASKS",
    "TESTBENCH",
    "TESTBENCH_COCOTB",
    "TESTBENCH_FLOW",
    "DesignUnderTest",
    "design_under_test",
    "is_task_problem",
    "module_header",
    "task_problem",
    "task_problems",
]

DESIGN, TESTBENCH, TESTBENCH_COCOTB, ASSERTION = "design", "testbench", "testbench-cocotb", "assertion"
#: What a problem can be posed as: the design itself (the benchmark's own task), or a check of it.
TASKS = (DESIGN, TESTBENCH, TESTBENCH_COCOTB, ASSERTION)
#: The tasks whose answer is a test bench (Verilog or cocotb), graded by the same flow.
BENCH_TASKS = (TESTBENCH, TESTBENCH_COCOTB)
TESTBENCH_FLOW, ASSERTION_FLOW = "testbench-task", "assertion-task"
BENCH_FILE, BENCH_TOP, PROPERTIES_FILE, COCOTB_FILE = "tb.sv", "tb", "properties.sv", "test_tb.py"
#: The name the design's file has in every run (the reference and every mutant alike).
DESIGN_FILE = "design.sv"
#: Where an agentic episode's test bench or assertions go.
VERIF_DIR = "verif"
_MODULE = re.compile(r"\bmodule\b")


@dataclass(frozen=True)
class DesignUnderTest:
    """The design a task checks: its file as the source problem names it, its top, its text."""

    source_id: str
    target: str
    top: str
    text: str
    #: The source problem's reference-grader settings (``extra["equivalence"]``), if any.
    equivalence: dict[str, Any] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def as_problem(self) -> Problem:
        """The reference-graded design problem (the judge of whether a mutant is a real bug)."""
        extra: dict[str, Any] = {"top": self.top}
        if self.equivalence:
            extra["equivalence"] = dict(self.equivalence)
        return Problem(
            id=self.source_id, categories=(), agentic=False, prompt="", context={}, targets=(self.target,),
            harness={}, reference={self.target: self.text}, grader=REFERENCE_GRADER, extra=extra,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DesignUnderTest:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


def design_under_test(problem: Problem) -> DesignUnderTest | None:
    """``problem``'s reference design as a whole module text with its top, or None without one."""
    target = problem.targets[0] if problem.targets else ""
    reference = problem.reference or {}
    text = reference.get(target) or next(iter(reference.values()), "")
    if not text.strip():
        return None
    header = str(problem.extra.get("header") or "")
    if header and not _MODULE.search(text):  # a completion (VerilogEval v1) follows its header
        text = header.rstrip() + "\n" + text
    bench = BENCHMARKS.get(problem.benchmark)
    top = problem.extra.get("top") or problem.extra.get("module") or (bench.top_module if bench else None)
    top = str(top or PurePosixPath(target or DESIGN_FILE).stem)
    settings = problem.extra.get("equivalence")
    return DesignUnderTest(problem.id, target or DESIGN_FILE, top, text, dict(settings) if isinstance(settings, dict) else {})


def is_task_problem(problem: Problem) -> bool:
    """Whether ``problem`` asks for a test bench or assertions (posed by :func:`task_problem`)."""
    return problem.grader in (TESTBENCH_FLOW, ASSERTION_FLOW)


#: A CVDP prompt's closing instruction of where to write the design (not the task's to follow).
_WRITE_THE_DESIGN = re.compile(
    r"(?:(?<=^)|(?<=[.!?]\s))(?:write|implement|put|place|provide)\b(?:[^.\n]|\.(?=s?vh?\b))*\bin\s+`?[\w./-]+\.s?vh?`?\.?[ \t]*",
    re.I | re.M,
)


def specification(problem: Problem) -> str:
    """The problem's own description, without its benchmark's answer instructions."""
    bench = BENCHMARKS.get(problem.benchmark)
    if bench is not None:
        return bench.specification(problem).strip()
    return _WRITE_THE_DESIGN.sub("", problem.prompt).strip()


def task_problem(problem: Problem, task: str, *, agentic: bool = False, coverage: bool = False) -> Problem | None:
    """``problem`` posed as ``task`` (``design`` returns it as it is), or None with no reference.

    ``coverage``: a test bench's grade also measures its line and toggle coverage of the
    reference (Verilator; about 4.5 s an answer, so off by default, on for ``eval``).
    ``agentic``: as an agentic episode, the specification in ``docs/specification.md`` (never
    the design), the answer written to ``verif/``."""
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
    if task == TESTBENCH:
        prompt, target, flow = _testbench_prompt(spec, design), BENCH_FILE, TESTBENCH_FLOW
    elif task == TESTBENCH_COCOTB:
        prompt, target, flow = _cocotb_prompt(spec, design), COCOTB_FILE, TESTBENCH_FLOW
    else:
        prompt, target, flow = _assertion_prompt(spec, design), PROPERTIES_FILE, ASSERTION_FLOW
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
        system_message=_SYSTEM[task],
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


def task_problems(problems: Iterable[Problem], task: str, *, agentic: bool = False, coverage: bool = False) -> list[Problem]:
    """Every problem of ``problems`` that can be posed as ``task`` (those with a reference design)."""
    posed = (task_problem(p, task, agentic=agentic, coverage=coverage) for p in problems)
    return [p for p in posed if p is not None]


#: Why a task's verdict can change from run to run (``harness.randomness.problem_randomness``).
_DRAWS = "the seeded bugs it is scored on are drawn per run from the problem's pool (harness_seed fixes the draw)"
_SYSTEM = {
    TESTBENCH: "You are a hardware verification engineer who writes thorough, self-checking Verilog test benches.",
    TESTBENCH_COCOTB: "You are a hardware verification engineer who writes thorough, self-checking cocotb test benches.",
    ASSERTION: "You are a formal verification engineer who writes precise SystemVerilog assertions.",
}


def module_header(text: str, top: str) -> str:
    """The header of module ``top`` in ``text`` (``module top ... );``), or "" when not found."""
    found = re.search(rf"\bmodule\s+{re.escape(top)}\b.*?\)\s*;", text, re.S)
    return found.group(0) if found else ""


#: How a bench is scored, as both bench prompts say it.
_EARNS = (
    "- It must pass on a correct design and fail on a wrong one: a bench that fails a correct design earns "
    "nothing, and it earns more the more wrong designs it catches.\n"
)


def _bench_preamble(kind: str, spec: str, design: DesignUnderTest, where: str) -> str:
    """What both bench prompts open with: the request, the specification, the design's header."""
    header = module_header(design.text, design.top)
    interface = f" Its header:\n\n```verilog\n{header}\n```" if header else ""
    return (
        f"Write a self-checking {kind} for the design this specification describes.\n\n"
        f"## Specification\n\n{spec}\n\n"
        f"## The design under test\n\nModule `{design.top}`{where}{interface}\n\n"
        f"## What to write\n\n"
    )


def _testbench_prompt(spec: str, design: DesignUnderTest) -> str:
    where = "; it is compiled beside your test bench, so do not define it yourself."
    return _bench_preamble("test bench", spec, design, where) + (
        f"- One file, `{BENCH_FILE}`, holding a module `{BENCH_TOP}` with no ports that instantiates `{design.top}`, "
        f"drives its inputs (clock and reset too, if it has them) and checks its outputs against what the "
        f"specification says.\n"
        f"- Report every mismatch with `$error(...)` (or `$fatal`, or a line that begins with `ERROR`), and end the "
        f"simulation with `$finish`.\n"
        f"{_EARNS}"
        f"- Use only the design's ports: no hierarchical names into it, no files, no `$fopen`, `$readmem*`, "
        f"`$system` or plusargs.\n\n"
        f"Give the whole file in one ```verilog code block."
    )


def _cocotb_prompt(spec: str, design: DesignUnderTest) -> str:
    where = ", the top level cocotb drives (its handle is the test's `dut` argument)."
    return _bench_preamble("cocotb test bench", spec, design, where) + (
        f"- One file, `{COCOTB_FILE}`: one or more `@cocotb.test()` coroutines (cocotb 2.0) that drive the inputs "
        f"(start a `cocotb.clock.Clock` on the clock, apply the reset, if the design has them) and `assert` that "
        f"the outputs match what the specification says.\n"
        f"{_EARNS}"
        f"- Use only the design's ports (`dut.<port>`); import only `cocotb` and the standard `random`, `math`, "
        f"`itertools`, `collections`, `functools`, `dataclasses`, `typing`, `enum` and `operator`; no files.\n\n"
        f"Give the whole file in one ```python code block."
    )


def _assertion_prompt(spec: str, design: DesignUnderTest) -> str:
    # the header the harness reads too (imported here: the harness imports this module)

    header = ports_interface(design.text, design.top) or f"module {design.top} (...);"
    return (
        f"Write SystemVerilog assertions that check the design this specification describes.\n\n"
        f"## Specification\n\n{spec}\n\n"
        f"## The design under test\n\nModule `{design.top}` (its body is not shown). Its header:\n\n"
        f"```verilog\n{header}\n```\n\n"
        f"## What to write\n\n"
        f"- Concurrent assertions, `assert property (@(posedge clk) [disable iff (...)] ...);`, with any helper "
        f"`wire`/`reg` declarations and `assign`/`always` blocks they need (a model of the specified behaviour, "
        f"for example). They are placed inside module `{design.top}`, but they may read only its ports (and "
        f"parameters) and the helper declarations they make themselves: a name inside the design, a hierarchical "
        f"name into it or a module instance earns nothing. Begin helper names with `chk_` (they share the "
        f"module's scope with the design's own signals).\n"
        f"- Supported: boolean expressions, `$past`, `$rose`, `$fell`, `$stable`, fixed delays `##N`, and the "
        f"implications `|->` and `|=>`. Not supported (a property using them earns nothing): delay ranges "
        f"`##[m:n]`, repetition `[*n]`, `[->n]`, `[=n]`, `throughout`, `within`, `intersect`, `until`, "
        f"`s_eventually`, named sequences.\n"
        f"- Every property must hold on a correct design (one that fails it earns nothing) and should fail on a "
        f"wrong one; a property whose condition can never be true is vacuous and earns nothing.\n\n"
        f"Give the assertions (not the module) in one ```systemverilog code block."
    )
