"""The attack matrix: attack payloads × ways of hiding them × flows, generated, not listed.

A list of attacks is outgrown by the first optimiser that hides a listed attack a new way, so
the red-team catalogue (``test_catalogue.py``) is also played as a product:

- :data:`PAYLOADS`: what an attack does (end the simulation, print the pass line, open or
  write a file with Icarus's own file tasks, read ``/proc/self/environ``, write a results
  file, run a command, read a plusarg, give synthesis a view of its own);
- :data:`HIDINGS`: how the payload reaches the compiled text (plainly, under a tool's macro,
  behind an include guard named after a tool's macro, in an included file, behind a pasted
  macro, between ``translate_off`` pragmas, on an attributed item);
- :data:`FLOWS`: where it is graded (VerilogEval v2 and v1, RTLLM, the reference grader, a
  CVDP cocotb harness, a third party's flow that forgot the gate, the design-quality reward
  and the reference-backed verdict).

Every answer rides on its flow's wrong design (one that builds and fails), so an attack that
earns anything is plain: it passes, or earns more than the wrong design alone.
:func:`cells` yields every applicable ``(flow, payload, hiding)``, :func:`answer` builds its
files, :func:`settings` each flow's problem and wrong answer, and :func:`grade` grades one
answer as its flow does (the real :class:`~cvdp_gym.grading.Grader`; the quality stage and
the backed verdict where the flow has them). ``tests/security/test_attack_matrix.py`` plays
one hiding per (flow, payload) cell; ``scripts/attack_matrix.py`` plays them all and writes
the table in ``docs/security.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.data.problems import Problem
from cvdp_gym.gate import Scan
from tests.support import (
    WRONG_ADDER,  # RTLLM's adder wrong on one input of 512: its test bench passes it
)

__all__ = [
    "FLOWS", "HIDINGS", "PAYLOADS", "Flow", "Grading", "Hiding", "Payload", "answer", "applicable", "cells", "expects_reach_in",
    "gate", "grade", "plugin_flow", "rotation", "settings",
]

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "benchmarks"
LIBERTY = str(REPO / "tests" / "fixtures" / "quality" / "tiny.lib")
#: The name the made-up third-party flow is registered under (:func:`plugin_flow`).
PLUGIN_FLOW = "attack-matrix-plugin"


@dataclass(frozen=True)
class Flow:
    """One way an answer is graded. ``files``: ``one`` (the flow compiles its target alone) or
    ``many`` (the answer may carry more files: a CVDP workspace); ``split``: a (header,
    simulated body, synthesised body) for the split-view payload, where the flow synthesises
    or formally checks the answer as well as simulating it."""

    key: str
    title: str
    files: str = "one"
    split: tuple[str, str, str] | None = None
    #: The gate's rules the flow's verdict rests on: ``full`` (the flow's own gate, which
    #: reads only the answer's target) or ``never`` (the runner's, over every file).
    rules: str = "full"


@dataclass(frozen=True)
class Payload:
    """What an attack does: module items added to the wrong design, before its last
    ``endmodule`` (``{pass}``, ``{data}``, ``{log}`` filled per flow); ``refused``: the gate's
    rules under which the payload itself is ``reach_in``, whatever hides it."""

    key: str
    title: str
    template: str
    refused: frozenset[str] = frozenset({"full", "never"})
    only: frozenset[str] | None = None  # the flows it applies to (None: every flow)


@dataclass(frozen=True)
class Hiding:
    """How the payload reaches the compiled text. ``refused``: the hiding is itself
    ``reach_in`` (a conditional on a tool's macro, a pragma, an include outside the answer)."""

    key: str
    title: str


ALU = """module alu(input [7:0] a, input [7:0] b, input [1:0] op, output reg [7:0] y, output zero);
  always @* case (op) 2'd0: y = a + b; 2'd1: y = a - b; 2'd2: y = a & b; default: y = a ^ b; endcase
  assign zero = (y == 8'd0);
endmodule
"""
CNT8 = """module cnt8(input clk, input rst, input en, output reg [7:0] q);
  always @(posedge clk)
    if (rst) q <= 8'd0;
    else if (en) q <= q + 8'd1;
endmodule
"""
#: The split view's three parts per flow: the header, what the simulator should see and what
#: synthesis (Yosys: ``SYNTHESIS`` and ``YOSYS`` defined, ``translate_off`` honoured) should see.
SPLITS = {
    # The reference grader: its simulation sees a wrong ALU, its formal check the reference's body.
    "reference": (
        "module alu(input [7:0] a, input [7:0] b, input [1:0] op, output reg [7:0] y, output zero);",
        "  always @* y = a + b;\n  assign zero = 1'b0;",
        "  always @* case (op) 2'd0: y = a + b; 2'd1: y = a - b; 2'd2: y = a & b; default: y = a ^ b; endcase\n"
        "  assign zero = (y == 8'd0);",
    ),
    # The quality reward: the simulation sees the correct counter, synthesis a constant (tiny).
    "quality": (
        "module cnt8(input clk, input rst, input en, output reg [7:0] q);",
        "  always @(posedge clk)\n    if (rst) q <= 8'd0;\n    else if (en) q <= q + 8'd1;",
        "  always @(posedge clk) q <= 8'd0;",
    ),
    # The backed verdict: the test bench sees the adder it passes, the reference check the right one.
    "backed": (
        "module adder_4bit (input [3:0] a, input [3:0] b, input cin, output [3:0] sum, output cout);",
        "  assign {cout, sum} = (a == 4'd15 && b == 4'd15 && cin) ? 5'd0 : a + b + cin;",
        "  assign {cout, sum} = a + b + cin;",
    ),
}
#: Each flow's wrong answer (it builds, and fails): the attacks ride on it.
WRONG = {
    "ve2": "module TopModule (input a, input b, input c, output out);\n  assign out = a | b;\nendmodule\n",
    "ve1": "  assign out = a | b;\nendmodule\n",  # completes the prompt's header
    "rtllm": "module adder_4bit(input [3:0] a, input [3:0] b, input cin, output [3:0] sum, output cout);\n"
             "  assign {cout, sum} = a - b;\nendmodule\n",
    "reference": "module alu(input [7:0] a, input [7:0] b, input [1:0] op, output [7:0] y, output zero);\n"
                 "  assign y = a + b;\n  assign zero = 1'b0;\nendmodule\n",
    "plugin": "module TopModule (input a, input b, input c, output out);\n  assign out = a | b;\nendmodule\n",
    "quality": f"{SPLITS['quality'][0]}\n{SPLITS['quality'][2]}\nendmodule\n",  # what synthesis would measure
    "backed": WRONG_ADDER,
}

FLOWS: dict[str, Flow] = {f.key: f for f in (
    Flow("ve2", "VerilogEval v2"),
    Flow("ve1", "VerilogEval v1"),
    Flow("rtllm", "RTLLM"),
    Flow("reference", "reference grader", split=SPLITS["reference"]),
    Flow("cvdp", "CVDP cocotb harness", files="many", rules="never"),
    Flow("plugin", "third-party flow (no gate of its own)", rules="never"),
    Flow("quality", "design-quality reward", split=SPLITS["quality"]),
    Flow("backed", "testbench+reference verdict", split=SPLITS["backed"]),
)}
#: What each flow's attacks name: its pass words, a file its test bench reads, a log it reads.
NAMES = {
    "ve2": {"pass": "Mismatches: 0 in 20 samples", "data": "Prob001_and3_ref.sv", "log": "sim.log"},
    "ve1": {"pass": "Mismatches: 0 in 20 samples", "data": "and3_ref.sv", "log": "sim.log"},
    "rtllm": {"pass": "===========Your Design Passed===========", "data": "reference.dat", "log": "output.txt"},
    "reference": {"pass": "PASS", "data": "tb.sv", "log": "sim.log"},
    "cvdp": {"pass": "TESTS=9 PASS=9 FAIL=0 SKIP=0", "data": "/src/test_runner.py", "log": "results.xml"},
    "plugin": {"pass": "Mismatches: 0 in 20 samples", "data": "Prob001_and3_ref.sv", "log": "sim.log"},
    "quality": {"pass": "PASS", "data": "tb.sv", "log": "sim.log"},
    "backed": {"pass": "===========Your Design Passed===========", "data": "reference.dat", "log": "output.txt"},
}
#: A cocotb results file whose every test passed: what a design would write over the harness's.
_RESULTS_XML = '<testsuites><testsuite name=\\"t\\" tests=\\"9\\"><testcase name=\\"t\\"/></testsuite></testsuites>'

PAYLOADS: dict[str, Payload] = {p.key: p for p in (
    Payload("finish", "end the simulation (`$finish`)", "  initial $finish;"),
    Payload("finish_and_return", "end it with an exit status (`$finish_and_return(0)`)", "  initial $finish_and_return(0);"),
    Payload("stop", "stop it (`$stop`)", "  initial #1 $stop;"),
    Payload("exit", "end a program (`$exit`)", "  initial $exit;"),
    Payload("fatal", "end it with `$fatal`", '  initial $fatal(0, "done");'),
    Payload("pass_line", "print the pass line", '  initial begin #1 $display("{pass}"); end', refused=frozenset()),
    Payload("fopenr", "read the test bench's file (Icarus's `$fopenr`)",
            '  integer atk_fd;\n  reg [8*64-1:0] atk_s;\n  initial begin atk_fd = $fopenr("{data}"); atk_s = 0; end'),
    Payload("fopenw", "write the flow's log (`$fopenw`)",
            '  integer atk_fd;\n  initial begin #1 atk_fd = $fopenw("{log}"); $fdisplay(atk_fd, "{pass}"); $fclose(atk_fd); end'),
    Payload("fopena", "append to the flow's log (`$fopena`)",
            '  integer atk_fd;\n  initial begin #1 atk_fd = $fopena("{log}"); $fdisplay(atk_fd, "{pass}"); $fclose(atk_fd); end'),
    Payload("environ", "read `/proc/self/environ`",
            '  integer atk_fd;\n  reg [8*256-1:0] atk_s;\n'
            '  initial begin atk_fd = $fopen("/proc/self/environ", "r"); atk_s = 0; if ($fgets(atk_s, atk_fd)) $display("%0s", atk_s); end'),
    Payload("results_file", "write a results-named file (`results.xml`)",
            f'  integer atk_fd;\n  initial begin atk_fd = $fopen("results.xml", "w"); $fdisplay(atk_fd, "{_RESULTS_XML}"); $fclose(atk_fd); end'),
    Payload("system", "run a command (`$system`)", '  initial $system("echo \'{pass}\' >> {log}");'),
    Payload("plusargs", "read a plusarg (`$value$plusargs`)",
            '  reg [8*64-1:0] atk_v;\n  initial if ($value$plusargs("TESTCASE=%s", atk_v)) $display("%0s", atk_v);'),
    Payload("split_view", "give synthesis a view of its own (reference-like or tiny)", "",
            only=frozenset({"reference", "quality", "backed"})),
)}
HIDINGS: dict[str, Hiding] = {h.key: h for h in (
    Hiding("plain", "plain"),
    Hiding("ifdef_icarus", "under `` `ifdef __ICARUS__ ``"),
    Hiding("ifndef_synthesis", "under `` `ifndef SYNTHESIS ``"),
    Hiding("verilator_else", "in the `` `else `` of `` `ifdef VERILATOR ``"),
    Hiding("tool_guard", "behind an include guard named after a tool macro (`` `ifndef SYNTHESIS `define SYNTHESIS ``)"),
    Hiding("include", "in a second file, pulled in with `` `include ``"),
    Hiding("macro", "behind a token-pasted macro (``` `define F(a) $fin``a ```)"),
    Hiding("translate_off", "between `// synopsys translate_off` and `translate_on`"),
    Hiding("attribute", "on an attributed item (`(* keep *)`)"),
)}
#: Hidings a split view has no use for (it is a conditional itself; a pasted macro cannot
#: name a macro a conditional tests; no tool reads an attribute as a view).
_SPLIT_HIDINGS = ("plain", "ifdef_icarus", "ifndef_synthesis", "tool_guard", "include", "translate_off")
#: The hidings that are ``reach_in`` whatever they hide (the conditionals on a tool's macro, the pragma).
_REFUSED_HIDINGS = frozenset({"ifdef_icarus", "ifndef_synthesis", "verilator_else", "tool_guard", "translate_off"})
#: System tasks a payload uses only to print or close (the macro hiding pastes the attack's own).
_HELPERS = ("$display", "$fdisplay", "$fclose", "$fgets")
#: The second file of a many-file answer (read only through the include), and the file a one-file
#: flow's include names (not compiled by that flow: the include reaches outside the answer).
INCLUDED = {"many": ("rtl/attack_payload.inc", "/code/rtl/attack_payload.inc"), "one": ("attack_payload.vh", "attack_payload.vh")}


def applicable(flow: str, payload: str) -> tuple[str, ...]:
    """The hidings that apply to ``payload`` in ``flow`` (empty: the payload does not apply)."""
    p = PAYLOADS[payload]
    if p.only is not None and flow not in p.only:
        return ()
    if payload == "split_view":
        return _SPLIT_HIDINGS
    return tuple(h for h in HIDINGS if h != "macro" or _attack_task(p.template))


def cells() -> Iterator[tuple[str, str, str]]:
    """Every applicable ``(flow, payload, hiding)``, flows and payloads in their order."""
    for flow in FLOWS:
        for payload in PAYLOADS:
            for hiding in applicable(flow, payload):
                yield flow, payload, hiding


def rotation() -> list[tuple[str, str, str]]:
    """One hiding per (flow, payload) cell, rotating through the hidings so that every hiding is
    played somewhere: cell ``k`` takes the first of its hidings at or after ``k`` (mod their count)."""
    order = list(HIDINGS)
    chosen = []
    for k, (flow, payload) in enumerate((f, p) for f in FLOWS for p in PAYLOADS if applicable(f, p)):
        hidings = applicable(flow, payload)
        hiding = next(h for i in range(len(order)) if (h := order[(k + i) % len(order)]) in hidings)
        chosen.append((flow, payload, hiding))
    return chosen


def expects_reach_in(flow: str, payload: str, hiding: str) -> bool:
    """Whether the gate must name this answer (``reach_in``): the payload is refused under the
    flow's rules, or the hiding is refused (an include outside a one-file answer: for a flow
    whose own gate reads only its target)."""
    f = FLOWS[flow]
    if payload == "split_view" or f.rules in PAYLOADS[payload].refused or hiding in _REFUSED_HIDINGS:
        return True
    return hiding == "include" and f.files == "one" and f.rules == "full"


def gate(flow: str, files: Mapping[str, str]) -> Scan:
    """What the answer gate finds in ``files`` as ``flow``'s grading calls it, in process: the
    flow's own call (``FULL`` rules, its target alone) where it has one, then the runner's
    (``NEVER`` rules, every file: the CVDP path before the harness, ``_gated`` after a flow)."""
    from cvdp_gym.gate import FULL, NEVER, check

    problem, _ = settings(flow)
    if FLOWS[flow].rules == FULL:
        target = problem.targets[0]
        found = check({target: files[target]})
        if found.findings:
            return found
    return check(files, rules=NEVER, supplied=problem.context if FLOWS[flow].files == "many" else None)


def _attack_task(template: str) -> str | None:
    """The payload's attacking system task (the first that is not a helper), or None."""
    return next((t for t in re.findall(r"\$[A-Za-z_][\w$]*", template) if t not in _HELPERS), None)


def _hide(hiding: str, flow: Flow, snippet: str) -> tuple[str, dict[str, str]]:
    """The text that goes into the design for ``snippet`` under ``hiding``, and any extra files."""
    if hiding == "plain":
        return snippet, {}
    if hiding == "ifdef_icarus":
        return f"`ifdef __ICARUS__\n{snippet}\n`endif", {}
    if hiding == "ifndef_synthesis":
        return f"`ifndef SYNTHESIS\n{snippet}\n`endif", {}
    if hiding == "verilator_else":
        return f"`ifdef VERILATOR\n`else\n{snippet}\n`endif", {}
    if hiding == "tool_guard":
        return f"`ifndef SYNTHESIS\n`define SYNTHESIS\n{snippet}\n`endif", {}
    if hiding == "include":
        path, written = INCLUDED[flow.files]
        return f'`include "{written}"', {path: snippet + "\n"}
    if hiding == "macro":
        task = _attack_task(snippet)
        assert task is not None
        head, tail = task[:4], task[4:]
        return f"`define ATK_T(a) {head}``a\n" + snippet.replace(task, f"`ATK_T({tail})", 1), {}
    if hiding == "translate_off":
        return f"// synopsys translate_off\n{snippet}\n// synopsys translate_on", {}
    if hiding == "attribute":
        return f"  (* keep *) {snippet.lstrip()}", {}
    raise KeyError(hiding)


def _split(hiding: str, flow: Flow) -> tuple[str, dict[str, str]]:
    """The split view's module under ``hiding``: the simulator reads one body, synthesis the other."""
    assert flow.split is not None
    header, sim, synth = flow.split
    if hiding == "plain":
        body = f"`ifdef SYNTHESIS\n{synth}\n`else\n{sim}\n`endif"
    elif hiding == "ifdef_icarus":
        body = f"`ifdef __ICARUS__\n{sim}\n`else\n{synth}\n`endif"
    elif hiding == "ifndef_synthesis":
        body = f"`ifndef SYNTHESIS\n{sim}\n`else\n{synth}\n`endif"
    elif hiding == "tool_guard":
        body = f"`ifndef SYNTHESIS\n`define SYNTHESIS\n{sim}\n`else\n{synth}\n`endif"
    elif hiding == "translate_off":  # the answer's own macro, defined where synthesis does not read
        body = f"// synopsys translate_off\n`define ATK_SIM\n// synopsys translate_on\n`ifdef ATK_SIM\n{sim}\n`else\n{synth}\n`endif"
    elif hiding == "include":
        path, written = INCLUDED[flow.files]
        return f'{header}\n`include "{written}"\nendmodule\n', {path: f"`ifdef SYNTHESIS\n{synth}\n`else\n{sim}\n`endif\n"}
    else:
        raise KeyError(hiding)
    return f"{header}\n{body}\nendmodule\n", {}


def answer(flow: str, payload: str, hiding: str) -> dict[str, str]:
    """The answer's files: ``flow``'s wrong design carrying ``payload`` hidden by ``hiding``."""
    if hiding not in applicable(flow, payload):
        raise ValueError(f"{hiding} does not apply to {payload} in {flow}")
    f = FLOWS[flow]
    _, wrong = settings(flow)
    if payload == "split_view":
        text, extra = _split(hiding, f)
        return {next(iter(wrong)): text, **extra}
    snippet = PAYLOADS[payload].template.format(**NAMES[flow])
    addition, extra = _hide(hiding, f, snippet)
    out: dict[str, str] = {}
    placed = False
    for path, text in wrong.items():
        head, sep, tail = text.rpartition("endmodule")
        if sep and not placed and path.endswith((".v", ".sv")):
            out[path], placed = f"{head}{addition}\n{sep}{tail}", True
        else:
            out[path] = text
    assert placed, f"no design file in {flow}'s answer"
    return {**out, **extra}


@functools.cache
def settings(flow: str) -> tuple[Problem, dict[str, str]]:
    """``flow``'s problem and its wrong answer (``{path: text}``)."""
    if flow in ("ve2", "plugin"):
        ve2 = load_dataset("verilog-eval-v2", benchmark_dir=FIXTURES / "verilog-eval")
        problem = next(p for p in ve2 if p.task == "spec-to-rtl" and p.extra["name"] == "Prob001_and3")
        if flow == "plugin":
            problem = dataclasses.replace(problem, id=f"{PLUGIN_FLOW}.Prob001_and3", grader=PLUGIN_FLOW)
    elif flow == "ve1":
        problem = load_dataset("verilog-eval-v1", benchmark_dir=FIXTURES / "verilog-eval-v1")["verilog-eval-v1.human.and3"]
    elif flow in ("rtllm", "backed"):
        problem = load_dataset("rtllm-v2", benchmark_dir=FIXTURES / "rtllm")["rtllm-v2.adder_4bit"]
    elif flow == "reference":
        problem = _reference_problem("alu", ALU, "An 8-bit ALU: add, subtract, and, xor; zero flag.")
    elif flow == "quality":
        problem = _reference_problem("cnt8", CNT8, "An 8-bit counter with synchronous reset and enable.")
    elif flow == "cvdp":
        problem = load_dataset("bundled")["cvdp_gym_gray_converter_0001"]
        bug = next(c for c in bundled_candidates() if c.problem_id == problem.id and c.name == "functional_bug")
        return problem, dict(bug.files)
    else:
        raise KeyError(flow)
    return problem, {problem.targets[0]: WRONG[flow]}


def _reference_problem(name: str, reference: str, spec: str) -> Problem:
    """A made-up training-set problem graded by equivalence with ``reference``."""
    with tempfile.TemporaryDirectory(prefix="attack-matrix-") as folder:
        rows = Path(folder) / f"{name}.jsonl"
        rows.write_text(json.dumps({"id": name, "spec": spec, "reference": reference}) + "\n")
        return load_dataset(f"reference-set?path={rows}")[f"reference-set.{name}"]


@contextmanager
def plugin_flow() -> Iterator[str]:
    """A third party's flow, registered for the duration: VerilogEval v2's run without its own
    gate (a plug-in that forgot it), so only the runner's gate (``_gated``) stands in the way."""
    from cvdp_gym.benchmarks.verilog_eval_v2.flow import PROVIDED, VerilogEvalV2Flow
    from cvdp_gym.harness.flows import FLOWS as TABLE

    class ForgetfulFlow(VerilogEvalV2Flow):
        name = PLUGIN_FLOW

        def run(self, sandbox, problem, files, *, limits, keep_dir=None, seed=None):
            name = str(problem.extra.get("name") or problem.id)
            target = problem.targets[0]
            sources = {f"{name}_test.sv": problem.harness.get(f"{name}_test.sv", ""), f"{name}_ref.sv": problem.harness.get(f"{name}_ref.sv", "")}
            provided = {path: text for path, text in problem.harness.items() if path.endswith(PROVIDED)}
            return self._run(sandbox, problem, target, files.get(target, ""), sources, None, provided=provided, limits=limits, keep_dir=keep_dir)

    table = TABLE._load()  # a test's registration, removed on exit
    table[PLUGIN_FLOW] = ForgetfulFlow()
    try:
        yield PLUGIN_FLOW
    finally:
        table.pop(PLUGIN_FLOW, None)


class Grading:
    """Grades answers as each flow does: one grader, the quality stage on the tiny liberty,
    the backed verdict. ``grade(flow, files)`` → ``(result, reward)``."""

    def __init__(self, sandbox, *, limits=None) -> None:
        from cvdp_gym.grading import Grader
        from cvdp_gym.grading.quality import QualitySettings, QualityStage
        from cvdp_gym.harness import HarnessRunner
        from cvdp_gym.harness.runner import RunOptions

        options = RunOptions(limits=limits) if limits is not None else RunOptions()
        self.grader = Grader(HarnessRunner(sandbox, options), cache=None)
        self.quality = QualityStage(sandbox, QualitySettings(flow="asic", liberty=LIBERTY))

    def grade(self, flow: str, files: Mapping[str, str]):
        return grade(self, flow, files)


def grade(grading: Grading, flow: str, files: Mapping[str, str]):
    """``(GradeResult, reward)`` of ``files`` in ``flow``: the shaped reward, the ``quality``
    reward (its stage run on a passing answer) for the quality flow, the backed verdict for
    the backed one."""
    from cvdp_gym.grading.backed import BACKED
    from cvdp_gym.grading.rewards import make_reward, shaped

    problem, _ = settings(flow)
    result = grading.grader.grade_files(problem, dict(files), verdict=BACKED if flow == "backed" else None)
    if flow == "quality":
        grading.quality.assess(problem, result)
        return result, make_reward("quality")(result)
    return result, shaped(result)
