"""What a benchmark is: where its files come from, and how they become Problems.

A benchmark beside CVDP (VerilogEval v1/v2, RTLLM v1.1/v2.0) is one module under
:mod:`cvdp_gym.data.benchmarks` with a ``Benchmark`` subclass. It says:

- where its files come from: a pinned upstream commit (``Pin``) the user fetches once into
  the user cache (``cvdp-gym benchmarks fetch``), a copy the user names (``benchmark_dir``,
  ``--benchmark-dir``) or an environment variable (``env_var``);
- how its files become ``Problem``\\ s (``load``): the prompt exactly as the benchmark's own
  scripts build it (with their prompt options: ``options``), the test bench and reference
  as the problem's ``harness`` and ``reference``, the grader (a test-bench flow of
  :mod:`cvdp_gym.harness.flows`) and the simulator it requires;
- which of its problems are known defects of the benchmark (``defects``);
- what sets a benchmark whose copies are the user's data files apart (the training sets, all
  in their plug-in ``cvdp_gym/benchmarks/training/``): how a copy is recognised and located
  (``found_by_first_row``, ``own_copy``, ``fetch_own``), how it loads (``load_problems``:
  the rows left out too) and whether figures are published for it (``publishes_figures``),
  so the host calls these and never tests a benchmark's type.

How an answer is extracted (:mod:`cvdp_gym.parsers.benchmark_answers`), run and judged
(:mod:`cvdp_gym.harness.flows`) and added up (:mod:`cvdp_gym.eval.benchmark_reports`) are
the same plug-in's parts in the layers that own those concerns, all keyed by the names
here. The environments, ``eval``, ``report``, ``serve`` and the trainer see only Problems
and grades.

A dataset spec names a benchmark, optionally a task and prompt options:
``verilog-eval-v2``, ``verilog-eval-v2:spec-to-rtl``, ``verilog-eval-v2:spec-to-rtl?shots=1&rules=1``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol
from urllib.parse import parse_qsl

from cvdp_gym.data.problems import Dataset, Problem, Skipped
from cvdp_gym.errors import DatasetError

__all__ = ["Benchmark", "BenchmarkSpec", "DatasetSource", "Pin", "agentic_variant", "flag", "parse_spec"]

#: Where an agentic episode finds a benchmark problem's text, and the folder of its answer.
SPEC_FILE, RTL_DIR = "docs/specification.md", "rtl"


@dataclass(frozen=True)
class Pin:
    """The upstream commit a benchmark is read from, and what its files must hash to.

    ``checksum``: SHA-256 of the benchmark's manifest (``sources.manifest``: every file it
    reads, with each file's SHA-256), so a fetched copy is verified file by file, whichever
    way it was fetched (git or an archive).
    """

    url: str
    commit: str
    checksum: str
    #: The branch or tag the commit is on (for messages and the git fetch).
    ref: str = "main"

    @property
    def archive_url(self) -> str:
        """GitHub's archive of the commit (the fallback when git cannot fetch it)."""
        return f"{self.url.removesuffix('.git')}/archive/{self.commit}.tar.gz"


@dataclass(frozen=True)
class BenchmarkSpec:
    """A parsed dataset spec: the benchmark, its tasks (empty: all) and prompt options."""

    name: str
    tasks: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)


class Benchmark:
    """One benchmark's data plug-in; subclasses set the class attributes and ``load``."""

    #: The dataset name (``verilog-eval-v2``), a title, and its tasks (a spec that names
    #: none loads them all).
    name: ClassVar[str]
    title: ClassVar[str]
    tasks: ClassVar[tuple[str, ...]]
    #: The grader (a flow of ``harness.flows``) and the simulator its runs need.
    grader: ClassVar[str]
    toolchain: ClassVar[str]
    #: The variable naming a local copy, and the pinned upstream commit.
    env_var: ClassVar[str]
    pin: ClassVar[Pin]
    #: Prompt options the spec may set (``?name=value``), with their defaults.
    option_defaults: ClassVar[dict[str, str]] = {}
    #: Problems whose own reference fails its own test bench on this benchmark's toolchain,
    #: or whose files disagree, found by ``cvdp-gym check`` on the pinned commit: name -> reason.
    defects: ClassVar[dict[str, str]] = {}
    #: The top module every answer defines, when the benchmark fixes one (``TopModule``), for
    #: the graders and mutants that compare an answer with the reference by module.
    top_module: ClassVar[str | None] = None
    #: Whether a copy is the user's data files, recognised by their first row (a training
    #: set's JSONL, JSON or Parquet rows) rather than by a folder's layout: such benchmarks are
    #: tried after every other (``find``), and a spec naming one is located from its options
    #: when loaded (``?path``, ``?hf``: :meth:`load_problems`), not before.
    found_by_first_row: ClassVar[bool] = False
    #: Whether published figures may name it (``eval``'s published tables); the training
    #: sets publish none.
    publishes_figures: ClassVar[bool] = True

    def defect_of(self, task: str, name: str) -> str | None:
        """The known defect of problem ``name`` in ``task`` (``defects`` keyed ``task.name``, or
        ``name`` for every task that has it), or None."""
        return self.defects.get(f"{task}.{name}") or self.defects.get(name)

    def options(self, given: Mapping[str, str]) -> dict[str, str]:
        """The prompt options with their defaults; an unknown one is a ``DatasetError``."""
        unknown = sorted(set(given) - set(self.option_defaults))
        if unknown:
            known = ", ".join(sorted(self.option_defaults)) or "none"
            raise DatasetError(f"{self.name}: unknown option {', '.join(unknown)} (options: {known})")
        return {**self.option_defaults, **given}

    def check_tasks(self, tasks: tuple[str, ...]) -> tuple[str, ...]:
        """The tasks to load (all when none are named); an unknown one is a ``DatasetError``."""
        for task in tasks:
            if task not in self.tasks:
                known = f"tasks: {', '.join(self.tasks)}" if self.tasks else "it has no tasks"
                raise DatasetError(f"{self.name} has no task {task!r} ({known})")
        return tasks or self.tasks

    def holds(self, path: Path) -> bool:
        """Whether ``path`` is a copy of this benchmark (its root folder)."""
        raise NotImplementedError

    def answer_text(self, problem: Problem, files: Mapping[str, str]) -> str | None:
        """``files`` written as this benchmark's prompt asks for an answer (None: the project's
        default, a fenced block); how a reference becomes a model-shaped answer in tests and demos."""
        return None

    def specification(self, problem: Problem) -> str:
        """``problem``'s own specification: its prompt less the text this benchmark wraps around
        every problem (in-context examples, rules, answer instructions), which says nothing about
        one problem (what decontamination compares). The default: the whole prompt."""
        return problem.prompt

    def find(self, path: Path) -> tuple[Path, tuple[str, ...]] | None:
        """``(root, tasks)`` when ``path`` is a copy of this benchmark or of a part of it (one
        task's folder, one data file), else None: how a folder named on the command line is
        recognised. The default: ``path`` is the root of a copy (:meth:`holds`)."""
        return (path, ()) if path.is_dir() and self.holds(path) else None

    def files(self, root: Path) -> list[Path]:
        """Every file of a copy that problems are read from (the manifest's files)."""
        raise NotImplementedError

    def load(self, root: Path, tasks: tuple[str, ...], options: Mapping[str, str]) -> list[Problem]:
        """The problems of ``tasks`` in the copy at ``root``, prompts built with ``options``."""
        raise NotImplementedError

    def load_problems(
        self, root: Path | None, tasks: tuple[str, ...], options: Mapping[str, str], *,
        explicit: str | Path | None = None, lenient: bool = False,
    ) -> tuple[list[Problem], list[Skipped]]:
        """The problems of ``tasks`` and the rows left out with why (``lenient``: skipped, not
        fatal), from the copy at ``root`` (None: located from ``explicit`` and ``options``,
        for a benchmark ``found_by_first_row``). The default: :meth:`load` of ``root``, none
        left out."""
        if root is None:
            raise DatasetError(f"{self.name}: no copy to load problems from")
        return self.load(root, tasks, options), []

    def own_copy(self, explicit: str | Path | None) -> Path | None:
        """Where its files are when the benchmark finds them itself (a training set: its one
        data file, or their folder), or None (the default): the pinned copy, found by
        :func:`cvdp_gym.data.benchmarks.sources.locate`."""
        return None

    def fetch_own(self, log: Callable[[str], None]) -> Path | None:
        """Fetch its files itself (a training set: its default Hugging Face download) and say
        where they are, or None (the default): the pinned commit is fetched
        (:func:`cvdp_gym.data.benchmarks.sources.fetch`)."""
        return None

    def describe(self) -> dict[str, Any]:
        """What ``cvdp-gym benchmarks list`` shows."""
        return {
            "name": self.name, "title": self.title, "tasks": list(self.tasks), "grader": self.grader,
            "toolchain": self.toolchain, "env_var": self.env_var, "upstream": self.pin.url,
            "commit": self.pin.commit, "ref": self.pin.ref, "options": dict(self.option_defaults),
        }


class DatasetSource(Protocol):
    """A plug-in's own dataset specs, read beside the catalog's benchmarks (CVDP's: ``bundled``,
    ``hf[:PATTERN[@REVISION]]``, JSONL files), listed in its ``data`` part's ``DATASET_SOURCES``."""

    name: str
    #: Whether it reads a path no benchmark's layout claimed (CVDP's JSONL files): the last resort.
    reads_paths: bool

    def names(self, text: str) -> bool:
        """Whether ``text`` is one of its own words (``bundled``, ``hf:...``), not a path."""
        ...

    def load(self, text: str, *, token: str | None, cache_dir: str | Path | None, **filters: Any) -> Dataset:
        """The problems ``text`` names, filtered as :func:`cvdp_gym.data.load_dataset` says."""
        ...


def parse_spec(text: str) -> BenchmarkSpec:
    """``NAME[:TASK[,TASK...]][?key=value&...]`` -> a ``BenchmarkSpec`` (names unchecked)."""
    head, _, query = text.partition("?")
    name, _, tasks = head.partition(":")
    options = dict(parse_qsl(query, keep_blank_values=True)) if query else {}
    return BenchmarkSpec(name.strip(), tuple(t.strip() for t in tasks.split(",") if t.strip()), options)


def flag(options: Mapping[str, str], name: str) -> bool:
    """A yes/no option: ``1``/``true``/``yes``/``on`` or given bare (``?rules``), else ``0``..."""
    value = options.get(name, "0").strip().lower()
    if value in ("", "1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise DatasetError(f"option {name}={value!r}: expected 0 or 1")


def agentic_variant(problem: Problem, description: str, *, start: str | None = None) -> Problem:
    """``problem`` as an agentic episode (``?agentic=1``): the benchmark's own description in
    ``docs/specification.md`` and in the prompt, the answer's file under ``rtl/`` (``start``: the
    text it begins with, a code-completion's interface), graded by the same flow. The prompt is
    the description and where to write the design, not the single-shot wrapping (``[BEGIN]``...)."""
    target = problem.targets[0]
    inside = f"{RTL_DIR}/{target}"
    context = {SPEC_FILE: description} | ({inside: start} if start is not None else {})
    prompt = (
        f"{description.rstrip()}\n\nImplement this in `{inside}` (the specification is also in `{SPEC_FILE}`). "
        "Compile and test your design in the workspace before you finish."
    )
    reference = {inside: problem.reference[target]} if problem.reference and target in problem.reference else None
    return dataclasses.replace(
        problem, agentic=True, prompt=prompt, system_message=None, context=context, targets=(inside,), reference=reference,
    )
