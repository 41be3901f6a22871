"""VerilogEval v2 (NVlabs/verilog-eval, ``main``): spec-to-RTL and code completion.

Layout of a copy: ``dataset_<task>/`` holds, per problem, ``ProbNNN_name_prompt.txt``,
``_ref.sv`` (module ``RefModule``), ``_test.sv`` (module ``tb``) and, for code completion,
``_ifc.txt`` (the ``TopModule`` interface); ``problems.txt`` lists the problems in order;
``scripts/verilog-example-prefix_<task>_<n>-shot.txt`` are the in-context examples.

The prompt is built as ``scripts/sv-generate`` builds it: its system message for the
task, the ``n``-shot examples first (``?shots=N``, 0 to 4), then for spec-to-RTL
``Question:``, the problem, the rules (``?rules=1``), the request to answer between
``[BEGIN]`` and ``[DONE]``, and ``Answer:``; for code completion the problem commented out
line by line down to ``module TopModule``, after the task's one-line preamble. The answer
is module ``TopModule``; the reference is ``RefModule`` renamed. Graded by the
``verilog-eval-v2`` flow on Icarus 12 (:mod:`cvdp_gym.benchmarks.verilog_eval_v2.flow`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from cvdp_gym.data.benchmark import Benchmark, Pin, agentic_variant, flag
from cvdp_gym.data.problems import Problem
from cvdp_gym.errors import DatasetError

SPEC_TO_RTL, CODE_COMPLETE = "spec-to-rtl", "code-complete-iccad2023"
#: The answer's module and the reference's, as the test benches instantiate them.
TOP_MODULE, REF_MODULE = "TopModule", "RefModule"
_REF_NAME = re.compile(rf"\b{REF_MODULE}\b")
#: ``sv-generate``'s system message and prompt preamble per task.
SYSTEM = {
    CODE_COMPLETE: (
        "\nYou only complete chats with syntax correct Verilog code. End the Verilog module code "
        "completion with 'endmodule'. Do not include module, input and output definitions.\n"
    ),
    SPEC_TO_RTL: "\nYou are a Verilog RTL designer that only writes code using correct Verilog syntax.\n",
}
PREAMBLE = {
    CODE_COMPLETE: (
        "\n// Implement the Verilog module based on the following description. Assume that signals "
        "are positive clock/clk triggered unless otherwise stated.\n"
    ),
    SPEC_TO_RTL: "",
}
#: ``sv-generate``'s rules section (``--rules``) and its request for ``[BEGIN]``/``[DONE]``.
RULES = """
Here are some additional rules and coding conventions.

 - Declare all ports and signals as logic; do not to use wire or reg.

 - For combinational logic with an always block do not explicitly specify
   the sensitivity list; instead use always @(*).

 - All sized numeric constants must have a size greater than zero
   (e.g, 0'b0 is not a valid expression).

 - An always block must read at least one signal otherwise it will never
   be executed; use an assign statement instead of an always block in
   situations where there is no need to read any signals.

 - if the module uses a synchronous reset signal, this means the reset
   signal is sampled with respect to the clock. When implementing a
   synchronous reset signal, do not include posedge reset in the
   sensitivity list of any sequential always block.
"""
BEGIN_DONE = """
Enclose your code with [BEGIN] and [DONE]. Only output the code snippet
and do NOT output anything else.
"""
MAX_SHOTS = 4
#: A harness file whose name ends so holds modules the benchmark provides beside the answer
#: (ChipBench's submodules given in the prompt, which its reference file also defines): compiled
#: with the answer and counted as its own by the static check, never renamed.
PROVIDED = "_provided.sv"


def build_prompt(task: str, prompt: str, *, examples: str = "", rules: bool = False) -> str:
    """The user message ``sv-generate`` sends (``examples``: the n-shot file's text)."""
    full = examples
    if task == CODE_COMPLETE:
        lines: list[str] = []
        commented = True
        for line in prompt.splitlines():
            if "module TopModule" in line:
                lines.append("")
                commented = False
            lines.append("// " + line if commented else line)
        return full + PREAMBLE[task] + "\n".join(lines)
    full += "\nQuestion:\n" + prompt.strip() + "\n"
    if rules:
        full += RULES
    full = full.rstrip() + "\n" + BEGIN_DONE
    return full + "\nAnswer:\n"


def as_top_module(reference: str) -> str:
    """The reference as an answer: ``RefModule`` renamed ``TopModule``."""
    return _REF_NAME.sub(TOP_MODULE, reference)


def _shots(options: Mapping[str, str]) -> int:
    try:
        shots = int(options.get("shots", "0"))
    except ValueError:
        raise DatasetError(f"option shots={options.get('shots')!r}: expected 0 to {MAX_SHOTS}") from None
    if not 0 <= shots <= MAX_SHOTS:
        raise DatasetError(f"option shots={shots}: expected 0 to {MAX_SHOTS}")
    return shots


_QUESTION, _ANSWER = "Question:\n", "Answer:"


def between_begin_done(code: str) -> str:
    """``code`` as a spec-to-RTL answer: between ``[BEGIN]`` and ``[DONE]``, as the prompt asks."""
    return "[BEGIN]\n" + code.rstrip("\n") + "\n[DONE]"


def question_text(prompt: str) -> str:
    """A spec-to-RTL prompt's own text: after the last ``Question:``, less the wrapping."""
    if _QUESTION in prompt:
        prompt = prompt.rpartition(_QUESTION)[2].rstrip().removesuffix(_ANSWER)
    return without_wrapping(prompt)


def without_wrapping(text: str) -> str:
    """``text`` less the rules, ``[BEGIN]``/``[DONE]`` instructions and code-completion preamble
    VerilogEval puts around every problem's description."""
    for wrapping in (RULES.strip(), BEGIN_DONE.strip(), PREAMBLE[CODE_COMPLETE].strip()):
        text = text.replace(wrapping, " ")
    return text


class VerilogEvalV2(Benchmark):
    name = "verilog-eval-v2"
    title = "VerilogEval v2"
    tasks = (SPEC_TO_RTL, CODE_COMPLETE)
    grader = "verilog-eval-v2"
    toolchain = "icarus12"
    env_var = "CVDP_GYM_VERILOG_EVAL"
    pin = Pin(
        "https://github.com/NVlabs/verilog-eval",
        "c498220d0a52248f8e3fdffe279075215bde2da6",
        "2905829ebc4c02a39736966decbced6915d23ccffdc04e1e63c125fe15a775b0",
        "main",
    )
    #: The paper's headline figures (GPT-4o 63% on spec-to-RTL) use one in-context example
    #: and no rules; ``?shots=0`` is the scripts' own default.
    option_defaults: ClassVar[dict[str, str]] = {"shots": "1", "rules": "0", "agentic": "0"}
    top_module = "TopModule"
    #: Found by ``cvdp-gym check`` on the pinned commit (Icarus 12); a ``task.name`` key is
    #: one task's, a bare name both tasks'.
    defects: ClassVar[dict[str, str]] = {
        "Prob082_lfsr32": "the test bench's 1,000,000 ps watchdog fires before its stimulus ends (the reference times out: TIMEOUT, then Mismatches: 0)",
        "Prob141_count_clock": "the test bench's 1,000,000 ps watchdog fires before its stimulus ends (the reference times out: TIMEOUT, then Mismatches: 0)",
        "Prob156_review2015_fancytimer": "the test bench's 1,000,000 ps watchdog fires before its stimulus ends (the reference times out: TIMEOUT, then Mismatches: 0)",
        "spec-to-rtl.Prob099_m2014_q6c": "the test bench is the code-completion task's: it connects ports Y2 and Y4, which the prompt and reference (Y1, Y3) do not have",
        "spec-to-rtl.Prob031_dff": "the prompt lists q as an input; the test bench and reference have it as an output",
    }

    def holds(self, path: Path) -> bool:
        return any((path / f"dataset_{task}").is_dir() for task in self.tasks)

    def answer_text(self, problem: Problem, files: Mapping[str, str]) -> str | None:
        """Spec-to-RTL answers between ``[BEGIN]`` and ``[DONE]``, as its prompt asks."""
        return between_begin_done(files[problem.targets[0]]) if problem.task == SPEC_TO_RTL else None

    def specification(self, problem: Problem) -> str:
        """The problem's own text: after the last ``Question:`` (spec-to-RTL) or the code-completion
        preamble, less the rules and answer instructions."""
        text = problem.prompt
        if problem.task == SPEC_TO_RTL:
            return question_text(text)
        if problem.task == CODE_COMPLETE:
            text = text.rpartition(PREAMBLE[CODE_COMPLETE].strip())[2]
        return without_wrapping(text)

    def find(self, path: Path) -> tuple[Path, tuple[str, ...]] | None:
        """A clone, or one ``dataset_<task>`` folder of it (that task only)."""
        task = path.name.removeprefix("dataset_")
        if path.is_dir() and not self.holds(path) and path.name.startswith("dataset_") and task in self.tasks:
            return path.parent, (task,)
        return super().find(path)

    def files(self, root: Path) -> list[Path]:
        found = [p for task in self.tasks for p in sorted((root / f"dataset_{task}").glob("*")) if p.is_file()]
        return found + sorted((root / "scripts").glob("verilog-example-prefix_*.txt"))

    def load(self, root: Path, tasks: tuple[str, ...], options: Mapping[str, str]) -> list[Problem]:
        shots, rules, agentic = _shots(options), flag(options, "rules"), flag(options, "agentic")
        problems: list[Problem] = []
        for task in self.check_tasks(tasks):
            folder = root / f"dataset_{task}"
            if not folder.is_dir():
                raise DatasetError(f"{root}: no dataset_{task}/ folder ({self.title})")
            examples = ""
            if shots:
                shot_file = root / "scripts" / f"verilog-example-prefix_{task}_{shots}-shot.txt"
                if not shot_file.is_file():
                    raise DatasetError(f"{shot_file}: missing ({shots}-shot in-context examples of {task})")
                examples = shot_file.read_text(encoding="utf-8")
            for name in problem_names(folder):
                problem = self._problem(folder, task, name, examples, rules)
                if agentic:  # the problem's own text (no in-context examples), the interface to start from
                    problem = agentic_variant(problem, read_problem_file(folder, f"{name}_prompt.txt"), start=problem.extra.get("interface"))
                problems.append(problem)
        return problems

    def _problem(self, folder: Path, task: str, name: str, examples: str, rules: bool) -> Problem:
        def read(suffix: str) -> str:
            return read_problem_file(folder, f"{name}_{suffix}")

        prompt, ref, test = read("prompt.txt"), read("ref.sv"), read("test.sv")
        extra: dict[str, str] = {"name": name}
        if task == CODE_COMPLETE:
            extra["interface"] = read("ifc.txt")
        target = f"{name}_sample01.sv"
        return Problem(
            id=f"{self.name}.{task}.{name}",
            categories=(task,),
            agentic=False,
            prompt=build_prompt(task, prompt, examples=examples, rules=rules),
            context={},
            targets=(target,),
            harness={f"{name}_test.sv": test, f"{name}_ref.sv": ref},
            system_message=SYSTEM[task],
            reference={target: as_top_module(ref)},
            source=str(folder / f"{name}_prompt.txt"),
            benchmark=self.name,
            task=task,
            grader=self.grader,
            toolchain=self.toolchain,
            defect=self.defect_of(task, name),
            extra=extra,
        )


def read_problem_file(folder: Path, name: str) -> str:
    """A problem file's text (``DatasetError`` naming it if unreadable)."""
    path = folder / name
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from None


def problem_names(folder: Path) -> list[str]:
    """The problems of a task folder, in ``problems.txt`` order (else every ``*_prompt.txt``)."""
    listing = folder / "problems.txt"
    if listing.is_file():
        names = [line.strip() for line in listing.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        names = sorted(p.name.removesuffix("_prompt.txt") for p in folder.glob("*_prompt.txt"))
    missing = [n for n in names if not (folder / f"{n}_prompt.txt").is_file()]
    if missing:
        raise DatasetError(f"{folder}: problems.txt names problems without files: {', '.join(missing[:5])}")
    return names


#: This plug-in's datasets (:mod:`cvdp_gym.plugins`).
BENCHMARKS = (VerilogEvalV2(),)
