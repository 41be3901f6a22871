"""VerilogEval v2's own flow on answers: the clone's ``configure`` + ``Makefile.in`` and ``sv-iv-analyze``.

Contract: ``VerilogEvalV2Official().run(answers, ...)`` returns one ``BenchmarkVerdict`` per
answer, keyed by ``Answer.index``, with ``reading = {"class": C}``: the class the clone's
own ``scripts/sv-iv-analyze`` wrote for that sample in ``summary.csv``; the sample's
``-sv-iv-test.log`` is kept for the disagreement printout. Nothing of the clone is run from
this project's code but its own scripts.

How it runs, in a build folder per task and sample count (``WORK/verilog-eval-v2/<task>-n<N>``),
all in the sandbox with Icarus 12 bound in and the clone read-only at ``/benchmark``::

    /benchmark/configure --with-task=T --with-samples=N --with-problems=/work/problems.txt
    make SHELL=/bin/bash -jJ          # default target: every sample's sv-iv-test log, then
                                      # sv-iv-analyze --csv=summary.csv $(problems)

Each answer is written first as ``ProbNNN_name/ProbNNN_name_sampleNN.sv`` with an empty
``ProbNNN_name_sampleNN-sv-generate.log`` (what ``sv-generate`` leaves), both dated after
the problem's prompt so ``make`` never calls ``sv-generate``. ``configure`` gives every
problem the same number of samples, hence one build folder per answer count (at most 99
samples: the scripts' two-digit sample numbers). Shims, none of which touches a verdict:

- ``SHELL=/bin/bash``: the recipes use ``&>``, ``[[ ]]`` and ``PIPESTATUS``; the root's
  ``/bin/sh`` is dash (the Makefile assumes a bash ``/bin/sh``).
- ``python`` → ``python3``: ``sv-iv-analyze`` and ``echo-progress`` start with
  ``#!/usr/bin/env python``; the root names its interpreter ``python3`` only.
- ``column`` → ``cat``: ``configure`` aligns ``samples.mk`` with util-linux's ``column -t``,
  which the root lacks; make reads the lines the same either way.
- ``langchain.schema``: ``sv-iv-analyze`` imports ``SystemMessage`` and ``HumanMessage``
  from it and never uses them; a two-class package on ``PYTHONPATH`` stands in.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cvdp_gym.errors import ConfigError
from cvdp_gym.parity.answers import Answer
from cvdp_gym.parity.benchmarks.sandboxed import (
    BenchmarkVerdict,
    machine,
    machine_reason,
    missing,
    newer_than,
    run_sandboxed,
    verdict,
    write_executable,
)
from cvdp_gym.sandbox.base import Limits, Mount, Sandbox

#: ``sv-iv-analyze``'s pass class, and the most samples its two-digit numbering allows.
PASS_CLASS, MAX_SAMPLES = ".", 99
#: The official simulation limit (``timeout 30``), for sizing the sandbox's own.
SIM_LIMIT_S = 30
_REQUIRED = ("configure", "Makefile.in", "scripts/sv-iv-analyze")


def _shims(folder: Path) -> Path:
    write_executable(folder / "bin" / "python", '#!/bin/sh\nexec python3 "$@"\n')
    write_executable(folder / "bin" / "column", "#!/bin/sh\n# configure's `column -t` only aligns samples.mk\nexec cat\n")
    package = folder / "py" / "langchain"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "schema.py").write_text(
        '"""Stand-in: sv-iv-analyze imports these names and never uses them."""\n\n\n'
        "class SystemMessage:\n    pass\n\n\nclass HumanMessage:\n    pass\n",
        encoding="utf-8",
    )
    return folder


class VerilogEvalV2Official:
    """VerilogEval v2's Makefile flow and analysis script, run from a user's clone."""

    benchmark = "verilog-eval-v2"
    reading_keys = ("class",)

    def reading_passed(self, reading: dict[str, Any]) -> bool:
        """``sv-iv-analyze``'s class ``.``: no mismatch."""
        return reading.get("class") == "."

    #: What the error names when a folder is not a clone of the benchmark.
    upstream = "NVlabs/verilog-eval (main)"

    def check(self, clone: Path) -> None:
        absent = [name for name in _REQUIRED if not (clone / name).is_file()]
        if absent:
            raise ConfigError(f"{clone} is not a clone of {self.upstream}: no {', '.join(absent)}")

    def dataset(self, clone: Path, task: str) -> Path:
        """The clone's folder of ``task``'s problems."""
        return clone / f"dataset_{task}"

    def configure(self, clone: Path, task: str) -> tuple[str, list[Mount]]:
        """The ``configure`` options that pick ``task``'s problems, and any mount they need."""
        del clone
        return f"--with-task={task}", []

    def run(
        self,
        answers: Sequence[Answer],
        *,
        sandbox: Sandbox,
        clone: Path,
        work: Path,
        jobs: int = 1,
        on_done: Callable[[Answer], None] = lambda _: None,
    ) -> dict[int, BenchmarkVerdict]:
        self.check(clone)
        parity = _shims(work / "shims")
        out: dict[int, BenchmarkVerdict] = {}
        for (task, count, round_number), batch in _batches(answers).items():
            folder = work / self.benchmark / f"{task}-n{count:02d}" / f"round{round_number}"
            out.update(self._build(batch, task, count, sandbox=sandbox, clone=clone, parity=parity, folder=folder, jobs=jobs))
            for answers_of_problem in batch.values():
                for answer in answers_of_problem:
                    on_done(answer)
        return out

    def _build(
        self, batch: dict[str, list[Answer]], task: str, count: int, *, sandbox: Sandbox, clone: Path, parity: Path,
        folder: Path, jobs: int,
    ) -> dict[int, BenchmarkVerdict]:
        dataset = self.dataset(clone, task)
        if not dataset.is_dir():
            where = dataset.relative_to(clone) if dataset.is_relative_to(clone) else dataset
            return {a.index: machine(str(a.index), f"{clone} has no {where}") for b in batch.values() for a in b}
        options, mounts = self.configure(clone, task)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "problems.txt").write_text("".join(f"{name}\n" for name in batch), encoding="utf-8")
        samples: dict[int, tuple[str, int]] = {}
        for name, answers in batch.items():
            for number, answer in enumerate(answers, 1):
                stem = folder / name / f"{name}_sample{number:02d}"
                stem.parent.mkdir(parents=True, exist_ok=True)
                sample = stem.with_name(stem.name + ".sv")
                sample.write_text(answer.files.get(answer.problem.targets[0], ""), encoding="utf-8")
                log = stem.with_name(stem.name + "-sv-generate.log")
                log.write_text("", encoding="utf-8")
                for path in (sample, log):
                    newer_than(path, dataset / f"{name}_prompt.txt")
                samples[answer.index] = (name, number)
        script = (
            f"/benchmark/configure {options} --with-samples={count} --with-problems=/work/problems.txt "
            "> configure.log 2>&1 || { echo 'configure failed'; tail -5 configure.log; exit 3; }\n"
            f"make SHELL=/bin/bash -j{max(1, jobs)} > make.log 2>&1\n"
            "status=$?; echo \"make exit $status\"; tail -3 make.log; exit $status\n"
        )
        wall = 120.0 + (SIM_LIMIT_S + 5.0) * len(samples) / max(1, jobs)
        start = time.monotonic()
        result = run_sandboxed(
            sandbox, script, clone=clone, parity=parity, work=folder, simulator="icarus12", extra_mounts=mounts,
            limits=Limits(wall_s=wall, memory_mb=8192, processes=1024), env={"PYTHONPATH": "/parity/py"},
        )
        seconds = (time.monotonic() - start) / max(1, len(samples))
        (folder / "sandbox.log").write_text(result.output, encoding="utf-8")
        classes = read_summary(folder / "summary.csv")
        out: dict[int, BenchmarkVerdict] = {}
        for index, (name, number) in samples.items():
            key = f"{name}_sample{number:02d}"
            cls = classes.get((name, number))
            if cls is None:
                why = machine_reason(result, "configure + make") if result.returncode != 0 or not classes else ""
                out[index] = machine(key, why, result.output) if why else missing(key, "summary.csv has no class for it")
                continue
            log = folder / name / f"{key}-sv-iv-test.log"
            out[index] = verdict(key, cls == PASS_CLASS, {"class": cls}, reason=f"class {cls}", logs=[log], seconds=seconds)
        return out


def _batches(answers: Sequence[Answer]) -> dict[tuple[str, int, int], dict[str, list[Answer]]]:
    """Answers by (task, samples per problem, round): one build folder each; a problem with
    more than ``MAX_SAMPLES`` answers goes to as many rounds."""
    by_problem: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    for answer in answers:
        problem = answer.problem
        by_problem[(problem.task, str(problem.extra.get("name") or problem.id))].append(answer)
    batches: dict[tuple[str, int, int], dict[str, list[Answer]]] = defaultdict(dict)
    for (task, name), listed in by_problem.items():
        for round_number, first in enumerate(range(0, len(listed), MAX_SAMPLES)):
            chunk = listed[first:first + MAX_SAMPLES]
            batches[(task, len(chunk), round_number)][name] = chunk
    return dict(batches)


def read_summary(path: Path) -> dict[tuple[str, int], str]:
    """``sv-iv-analyze``'s ``summary.csv``: ``problem,npass,nsamples,rate,class1,class2,...``."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    out: dict[tuple[str, int], str] = {}
    for line in lines:
        parts = line.split(",")
        if len(parts) < 5:
            continue
        for number, cls in enumerate(parts[4:], 1):
            out[(parts[0], number)] = cls
    return out


#: This plug-in's official flow (:mod:`cvdp_gym.plugins`).
OFFICIAL_FLOWS = (VerilogEvalV2Official(),)
