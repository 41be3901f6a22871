"""VerilogEval v1 (NVlabs/verilog-eval, branch ``release/1.0.0``): Human and Machine.

Layout of a copy: ``data/VerilogEval_Human.jsonl`` (156 problems) and
``data/VerilogEval_Machine.jsonl`` (143), one record per problem: ``task_id``, ``prompt``
(the ``top_module`` header), ``canonical_solution`` (the body after the header) and
``test`` (the test bench with ``reference_module``); the descriptions a model is prompted
with are in ``descriptions/VerilogDescription_{Human,Machine}.jsonl``
(``detail_description``).

v1 was made for completion models and ships no chat prompt: the user message here is the
description commented out line by line, then the header, after the system message and
preamble VerilogEval v2 uses for the same code-completion task. An answer is the
completion: the module's body after the header (a whole module is cut down to its body,
:mod:`cvdp_gym.benchmarks.verilog_eval_v2.answers`). Graded by the ``verilog-eval-v1`` flow
(``verilog_eval/execution.py``'s rule) on Icarus 12, which v1's README requires.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cvdp_gym.benchmarks.verilog_eval_v2.data import (
    CODE_COMPLETE,
    PREAMBLE,
    SYSTEM,
    without_wrapping,
)
from cvdp_gym.data.benchmark import Benchmark, Pin
from cvdp_gym.data.problems import Problem
from cvdp_gym.errors import DatasetError
from cvdp_gym.jsonl import JsonlError, iter_json

HUMAN, MACHINE = "human", "machine"
_FILES = {HUMAN: "Human", MACHINE: "Machine"}
#: The record fields a problem needs.
FIELDS = ("task_id", "prompt", "canonical_solution", "test")


def build_prompt(description: str, header: str) -> str:
    """The user message: the description as ``//`` comments, then the module header."""
    commented = "\n".join("// " + line for line in description.strip().splitlines())
    return PREAMBLE[CODE_COMPLETE] + commented + "\n\n" + header


def is_record(record: Any) -> bool:
    """A VerilogEval v1 problem record (what a ``.jsonl`` of v1 holds)."""
    return isinstance(record, dict) and all(isinstance(record.get(k), str) for k in FIELDS)


class VerilogEvalV1(Benchmark):
    name = "verilog-eval-v1"
    title = "VerilogEval v1"
    tasks = (HUMAN, MACHINE)
    grader = "verilog-eval-v1"
    toolchain = "icarus12"
    env_var = "CVDP_GYM_VERILOG_EVAL_V1"
    pin = Pin(
        "https://github.com/NVlabs/verilog-eval",
        "4fa0ac4ed70ff1685114c25cd2e4c17cbba6a0c4",
        "7952e9a72772814f599fc1051fa0b4419ad941e1b056643447d56fb38bc00950",
        "release/1.0.0",
    )

    def holds(self, path: Path) -> bool:
        return any((path / "data" / f"VerilogEval_{f}.jsonl").is_file() for f in _FILES.values())

    def answer_text(self, problem: Problem, files: Mapping[str, str]) -> str | None:
        """A completion as it is (the body after the prompt's header)."""
        return files[problem.targets[0]]

    def specification(self, problem: Problem) -> str:
        """The prompt less the code-completion preamble it shares with VerilogEval v2."""
        return without_wrapping(problem.prompt)

    def find(self, path: Path) -> tuple[Path, tuple[str, ...]] | None:
        """A clone, or one of its ``.jsonl`` files (its task from the file's name; human if it names none)."""
        if path.suffix == ".jsonl" and path.is_file() and _first_is_record(path):
            return path, (next((t for t, label in _FILES.items() if label.lower() in path.name.lower()), HUMAN),)
        return super().find(path)

    def files(self, root: Path) -> list[Path]:
        names = [f"data/VerilogEval_{f}.jsonl" for f in _FILES.values()]
        names += [f"descriptions/VerilogDescription_{f}.jsonl" for f in _FILES.values()]
        return [root / n for n in names if (root / n).is_file()]

    def load(self, root: Path, tasks: tuple[str, ...], options: Mapping[str, str]) -> list[Problem]:
        if root.is_file():
            return self._load_file(root, tasks[0] if tasks else HUMAN)
        problems: list[Problem] = []
        for task in self.check_tasks(tasks):
            data = root / "data" / f"VerilogEval_{_FILES[task]}.jsonl"
            described = root / "descriptions" / f"VerilogDescription_{_FILES[task]}.jsonl"
            descriptions = descriptions_in(described)
            for record in _records(data):
                if not is_record(record):
                    raise DatasetError(f"{data}: a record without {', '.join(FIELDS)}")
                problems.append(self.problem(record, task, descriptions.get(record["task_id"], ""), str(data)))
        return problems

    def _load_file(self, path: Path, task: str) -> list[Problem]:
        """One ``.jsonl`` of records; the descriptions from its clone's ``descriptions/`` if there."""
        try:
            records = [r for _, r in iter_json(path)]
        except JsonlError as exc:
            raise DatasetError(str(exc)) from None
        bad = next((i for i, r in enumerate(records, 1) if not is_record(r)), None)
        if bad is not None:
            raise DatasetError(f"{path}:{bad}: not a VerilogEval v1 record (task_id, prompt, canonical_solution, test)")
        described = path.parent.parent / "descriptions" / f"VerilogDescription_{_FILES[task]}.jsonl"
        descriptions = descriptions_in(described)
        return [self.problem(r, task, descriptions.get(r["task_id"], ""), str(path)) for r in records]

    def problem(self, record: Mapping[str, str], task: str, description: str, source: str) -> Problem:
        """One record as a Problem (``description``: its detail description, if any)."""
        task_id = record["task_id"]
        target = f"{task_id}_completion.sv"
        return Problem(
            id=f"{self.name}.{task}.{task_id}",
            categories=(task,),
            agentic=False,
            prompt=build_prompt(description or "Complete the module.", record["prompt"]),
            context={},
            targets=(target,),
            harness={f"{task_id}_test.sv": record["test"], f"{task_id}_prompt.sv": record["prompt"]},
            system_message=SYSTEM[CODE_COMPLETE],
            reference={target: record["canonical_solution"]},
            source=source,
            benchmark=self.name,
            task=task,
            grader=self.grader,
            toolchain=self.toolchain,
            defect=self.defects.get(f"{task}.{task_id}"),
            extra={"name": task_id, "header": record["prompt"]},
        )


def descriptions_in(path: Path) -> dict[str, str]:
    """task_id -> detail_description of a ``VerilogDescription_*.jsonl`` (a missing file: none)."""
    return {r["task_id"]: r.get("detail_description", "") for r in _records(path) if "task_id" in r}


def _first_is_record(path: Path) -> bool:
    try:
        for _, record in iter_json(path):
            return is_record(record)
    except JsonlError:
        return False
    return False


#: This plug-in's datasets (:mod:`cvdp_gym.plugins`).
BENCHMARKS = (VerilogEvalV1(),)


def _records(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file (a missing file: none; a bad line: ``DatasetError``)."""
    if not path.is_file():
        return []
    try:
        return [record for _, record in iter_json(path) if isinstance(record, dict)]
    except JsonlError as exc:
        raise DatasetError(str(exc)) from None
