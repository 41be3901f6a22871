"""Which problems of a dataset a command takes (the dataset itself is each command's own
argument or option)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cvdp_gym.cli._options import (
    BenchmarkDirOpt,
    CategoryOpt,
    DifficultyOpt,
    IdsOpt,
    LenientOpt,
    TaskOpt,
    load_problems,
    task_options,
)

if TYPE_CHECKING:
    from cvdp_gym.data import Dataset
    from cvdp_gym.tasks.posing import TaskOptions


@dataclass(frozen=True)
class ProblemOptions:
    """``--benchmark-dir``, ``--id``, ``--category``, ``--difficulty``, ``--lenient``, ``--task``."""

    benchmark_dir: BenchmarkDirOpt = None
    ids: IdsOpt = None
    category: CategoryOpt = None
    difficulty: DifficultyOpt = None
    lenient: LenientOpt = False
    task: TaskOpt = "design"

    @property
    def posing(self) -> TaskOptions:
        """``--task`` as the tasks read it (:func:`~cvdp_gym.cli._options.task_options`)."""
        return task_options(self.task)

    def load(self, dataset: str, *, agentic: bool = False) -> Dataset:
        """The selected problems of ``dataset``; one that cannot be read is a one-line error.
        ``agentic``: a verification task posed as agentic episodes (``eval --task ... --agentic``)."""
        return load_problems(
            dataset, self.ids, self.category, self.difficulty, self.lenient, benchmark_dir=self.benchmark_dir,
            task=self.task, agentic=agentic,
        )
