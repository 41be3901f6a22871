"""What the model reads in a verification task: the specification, the design's header, the rules.

Contract: ``task_prompt(task, spec, design)`` is the prompt of ``task`` (``testbench``,
``testbench-cocotb`` or ``assertion``) for the design ``spec`` describes: the specification and
the design's header (its ports), never its body; ``SYSTEM_MESSAGES`` the system message of
each; ``specification(problem)`` a problem's own description, without its benchmark's
instructions of where to write the design (not the task's to follow). The rules a prompt
states are the ones the flows enforce (:mod:`.bench_rules`, :mod:`.cocotb_bench_rules`,
:mod:`.assertions`)."""

from __future__ import annotations

import re

from cvdp_gym.data.benchmarks.catalog import BENCHMARKS
from cvdp_gym.data.module_interface import ports_interface
from cvdp_gym.data.problems import Problem
from cvdp_gym.tasks.design import DesignUnderTest
from cvdp_gym.tasks.names import (
    ASSERTION,
    BENCH_FILE,
    BENCH_TOP,
    COCOTB_FILE,
    TESTBENCH,
    TESTBENCH_COCOTB,
)

__all__ = ["SYSTEM_MESSAGES", "module_header", "specification", "task_prompt"]

#: A CVDP prompt's closing instruction of where to write the design (not the task's to follow).
_WRITE_THE_DESIGN = re.compile(
    r"(?:(?<=^)|(?<=[.!?]\s))(?:write|implement|put|place|provide)\b(?:[^.\n]|\.(?=s?vh?\b))*\bin\s+`?[\w./-]+\.s?vh?`?\.?[ \t]*",
    re.I | re.M,
)
SYSTEM_MESSAGES = {
    TESTBENCH: "You are a hardware verification engineer who writes thorough, self-checking Verilog test benches.",
    TESTBENCH_COCOTB: "You are a hardware verification engineer who writes thorough, self-checking cocotb test benches.",
    ASSERTION: "You are a formal verification engineer who writes precise SystemVerilog assertions.",
}


def specification(problem: Problem) -> str:
    """The problem's own description, without its benchmark's answer instructions."""
    bench = BENCHMARKS.get(problem.benchmark)
    if bench is not None:
        return bench.specification(problem).strip()
    return _WRITE_THE_DESIGN.sub("", problem.prompt).strip()


def task_prompt(task: str, spec: str, design: DesignUnderTest) -> str:
    """The prompt of ``task`` for ``design``, as ``spec`` describes it."""
    prompts = {TESTBENCH: _testbench_prompt, TESTBENCH_COCOTB: _cocotb_prompt, ASSERTION: _assertion_prompt}
    return prompts[task](spec, design)


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
