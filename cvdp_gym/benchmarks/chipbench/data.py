"""ChipBench (zhongkaiyu/ChipBench, MIT): Verilog generation and debugging, a fork of VerilogEval v2.

Layout of a copy: ``Verilog Gen/dataset_<task>`` for the generation tasks (``self_contain`` 30
problems, ``not_self_contain`` 6, ``cpu_ip`` 9) and ``Verilog Debugging/dataset_<task>`` for the
debugging ones (``debug_{zero,one}_shot_{assignment,timing,arithmetic,state_machine}``: 30, 29,
24 and 6 each), three files per problem as in VerilogEval v2: ``<name>_prompt.txt``,
``<name>_ref.sv`` (``RefModule``) and ``<name>_test.sv``. The folders' ``problems.txt`` lists
only 1 of 6 and 1 of 9 problems in ``not_self_contain`` and ``cpu_ip``, so problems are found by
their prompt files; one number names different problems in different folders, so an id holds
the task (``chipbench.cpu_ip.Prob002_alu``).

Prompts are built as ``scripts/sv-generate`` builds them: every ChipBench task takes the
spec-to-RTL path (system message, ``Question:``, ``[BEGIN]``/``[DONE]``), with no in-context
example and no rules (the build's defaults; its ``--examples`` fails for these task names). A
debugging prompt holds the buggy module (``one_shot``: also a VCD dump of its simulation, up
to 179 KB). Graded by the ``chipbench`` flow, VerilogEval v2's Makefile rule (the two share
``Makefile.in`` and ``sv-iv-analyze`` byte for byte) on Icarus 12.

Submodules the prompt provides: where the reference file also defines one (``dual_port_RAM``,
``slave_mod``), it is the benchmark's, given to every answer: the problem's harness holds it in
``<name>_provided.sv``, compiled beside the answer and never hidden (an answer that defines it
again fails to compile, as by the benchmark's own Makefile), and the reference file less it.
The reference as an answer: ``RefModule`` renamed ``TopModule`` (its own helper modules renamed
too, as the benchmark's Makefile compiles the answer and the reference file together), without those, with the
modules the prompt provides that the reference file uses but does not define (``decoder_38``...:
the answer must bring them), and for ``cpu_ip`` the test bench's `` `define`` lines the
reference relies on (the test bench is compiled after the answer).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from cvdp_gym.benchmarks.verilog_eval_v2.data import (
    PROVIDED,
    SPEC_TO_RTL,
    SYSTEM,
    as_top_module,
    between_begin_done,
    build_prompt,
    question_text,
    read_problem_file,
)
from cvdp_gym.data.benchmark import Benchmark, Pin, agentic_variant, flag
from cvdp_gym.data.problems import Problem
from cvdp_gym.errors import DatasetError

__all__ = ["BENCHMARKS", "ChipBench"]

GENERATION = ("self_contain", "not_self_contain", "cpu_ip")
DEBUGGING = tuple(
    f"debug_{shot}_shot_{kind}" for shot in ("zero", "one") for kind in ("assignment", "timing", "arithmetic", "state_machine")
)
_GEN_DIR, _DEBUG_DIR = "Verilog Gen", "Verilog Debugging"
_MODULE = re.compile(r"\bmodule\s+([A-Za-z_]\w*)\b.*?\bendmodule\b", re.S)
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_DEFINE = re.compile(r"^\s*`define\b.*$", re.M)
_LCM = "the reference drives lcm_out to z while its GCD register is 0, and the test bench's check turns z into x: it reports mismatches for the reference itself"


def task_folder(root: Path, task: str) -> Path:
    """Where ``task``'s problems are in a copy rooted at ``root``."""
    return root / (_GEN_DIR if task in GENERATION else _DEBUG_DIR) / f"dataset_{task}"


def provided_modules(prompt: str, reference: str) -> list[str]:
    """The modules the prompt's code blocks define that the reference uses but does not define."""
    defined = {m.group(1) for m in _MODULE.finditer(reference)}
    found: dict[str, str] = {}
    for block in _FENCE.findall(prompt):
        for match in _MODULE.finditer(block):
            name = match.group(1)
            if name != "TopModule" and name not in defined and re.search(rf"\b{name}\b", reference):
                found.setdefault(name, match.group(0))
    return list(found.values())


def split_provided(prompt: str, reference: str) -> tuple[str, str]:
    """``(the reference less, the modules it defines that the prompt provides)``: those are the
    benchmark's, given to every answer, not the reference's to hide (see ``PROVIDED``)."""
    given = {m.group(1) for block in _FENCE.findall(prompt) for m in _MODULE.finditer(block)}
    spans = [m for m in _MODULE.finditer(reference) if m.group(1) in given and m.group(1) != "RefModule"]
    rest, cut = reference, 0
    for match in spans:
        start, end = match.start() - cut, match.end() - cut
        rest, cut = rest[:start] + rest[end:], cut + end - start
    return rest, "\n\n".join(m.group(0) for m in spans)


def reference_answer(task: str, prompt: str, reference: str, testbench: str) -> str:
    """The reference as an answer (see the module doc): without the modules the benchmark
    provides, with those the prompt gives that the reference file lacks."""
    own = as_top_module(split_provided(prompt, reference)[0])
    for name in {m.group(1) for m in _MODULE.finditer(own)} - {"TopModule"}:  # its own helpers, renamed
        own = re.sub(rf"\b{name}\b", f"{name}_of_answer", own)  # so they never clash with the reference file's
    parts = [own.rstrip(), *provided_modules(prompt, reference)]
    if task == "cpu_ip":
        defines = _DEFINE.findall(testbench)
        if defines:
            parts.insert(0, "\n".join(line.strip() for line in defines))
    return "\n\n".join(parts) + "\n"


class ChipBench(Benchmark):
    name = "chipbench"
    title = "ChipBench"
    tasks = (*GENERATION, *DEBUGGING)
    grader = "chipbench"
    toolchain = "icarus12"
    env_var = "CVDP_GYM_CHIPBENCH"
    top_module = "TopModule"
    pin = Pin(
        "https://github.com/zhongkaiyu/ChipBench",
        "74fe7d283225ae030ef59326a06111c9d372b48e",
        "de5d286d643e17cf3f454925dc38207b0f34afea08ff589328333c52924d4259",
        "main",
    )
    option_defaults: ClassVar[dict[str, str]] = {"agentic": "0"}
    #: Found by ``cvdp-gym check`` on the pinned commit (Icarus 12); a ``task.name`` key is one
    #: task's, a bare name every task's that has the problem.
    defects: ClassVar[dict[str, str]] = {
        "Prob013_least_common_multiple": _LCM,
        "cpu_ip.Prob008_chapter12_ctrl": "the test bench never prints a Mismatches line, so sv-iv-analyze cannot pass any answer",
        "cpu_ip.Prob009_cp0_reg": "the test bench never prints a Mismatches line, so sv-iv-analyze cannot pass any answer",
        "not_self_contain.Prob006_cpu_top": "the test bench does not compile on Icarus 12 (line 223: `initial stats1 = '{default:0};`)",
    }

    def holds(self, path: Path) -> bool:
        return any(task_folder(path, task).is_dir() for task in self.tasks)

    def answer_text(self, problem: Problem, files: Mapping[str, str]) -> str | None:
        return between_begin_done(files[problem.targets[0]])

    def specification(self, problem: Problem) -> str:
        return question_text(problem.prompt)

    def find(self, path: Path) -> tuple[Path, tuple[str, ...]] | None:
        """A clone, or one ``dataset_<task>`` folder of it (that task only)."""
        task = path.name.removeprefix("dataset_")
        if path.is_dir() and task in self.tasks and path.parent.name in (_GEN_DIR, _DEBUG_DIR):
            return path.parent.parent, (task,)
        return super().find(path)

    def files(self, root: Path) -> list[Path]:
        return [p for task in self.tasks for p in sorted(task_folder(root, task).glob("Prob*")) if p.is_file()]

    def load(self, root: Path, tasks: tuple[str, ...], options: Mapping[str, str]) -> list[Problem]:
        agentic = flag(self.options(options), "agentic")
        problems: list[Problem] = []
        named = bool(tasks)
        for task in self.check_tasks(tasks):
            folder = task_folder(root, task)
            if not folder.is_dir() and not named:  # a copy of some tasks only: the tasks it has
                continue
            if not folder.is_dir():
                raise DatasetError(f"{root}: no {folder.relative_to(root)}/ folder ({self.title})")
            for prompt_file in sorted(folder.glob("*_prompt.txt")):
                problems.append(self.problem(folder, task, prompt_file.name.removesuffix("_prompt.txt"), agentic=agentic))
        return problems

    def problem(self, folder: Path, task: str, name: str, *, agentic: bool = False) -> Problem:
        """One problem of a task folder (``agentic``: as an agentic episode on its own text)."""
        prompt, ref, test = (read_problem_file(folder, f"{name}_{suffix}") for suffix in ("prompt.txt", "ref.sv", "test.sv"))
        target = f"{name}_sample01.sv"
        rest, provided = split_provided(prompt, ref)
        harness = {f"{name}_test.sv": test, f"{name}_ref.sv": rest} | ({f"{name}{PROVIDED}": provided + "\n"} if provided else {})
        problem = Problem(
            id=f"{self.name}.{task}.{name}",
            categories=(task,),
            agentic=False,
            prompt=build_prompt(SPEC_TO_RTL, prompt),
            context={},
            targets=(target,),
            harness=harness,
            system_message=SYSTEM[SPEC_TO_RTL],
            reference={target: reference_answer(task, prompt, ref, test)},
            source=str(folder / f"{name}_prompt.txt"),
            benchmark=self.name,
            task=task,
            grader=self.grader,
            toolchain=self.toolchain,
            defect=self.defect_of(task, name),
            extra={"name": name},
        )
        return agentic_variant(problem, prompt) if agentic else problem


#: This plug-in's datasets (:mod:`cvdp_gym.plugins`).
BENCHMARKS = (ChipBench(),)
