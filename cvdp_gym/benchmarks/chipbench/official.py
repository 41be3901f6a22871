"""ChipBench's own flow on answers: the clone's ``configure`` + ``Makefile.in`` and ``sv-iv-analyze``,
run as for VerilogEval v2 (:mod:`cvdp_gym.benchmarks.verilog_eval_v2.official`; the scripts are
the same byte for byte).

The one difference is where a task's problems are: ``configure``'s default
(``dataset_<task>`` at the clone's root) does not exist in ChipBench, and its
``--with-dataset`` breaks on the spaces in ``Verilog Gen/``: the task's folder is mounted
read-only at ``/dataset`` and named by ``--with-dataset=/dataset`` (the README's own route,
a ``dataset_<task>`` link at the root, would write into the clone).
"""

from __future__ import annotations

from pathlib import Path

from cvdp_gym.benchmarks.chipbench.data import task_folder
from cvdp_gym.benchmarks.verilog_eval_v2.official import VerilogEvalV2Official
from cvdp_gym.sandbox.base import Mount

__all__ = ["OFFICIAL_FLOWS", "ChipBenchOfficial"]

DATASET = "/dataset"


class ChipBenchOfficial(VerilogEvalV2Official):
    """ChipBench's Makefile flow and analysis script, run from a user's clone."""

    benchmark = "chipbench"
    upstream = "zhongkaiyu/ChipBench"

    def dataset(self, clone: Path, task: str) -> Path:
        return task_folder(clone, task)

    def configure(self, clone: Path, task: str) -> tuple[str, list[Mount]]:
        return f"--with-task={task} --with-dataset={DATASET}", [Mount(task_folder(clone, task).resolve(), DATASET)]


#: This plug-in's official flow (:mod:`cvdp_gym.plugins`).
OFFICIAL_FLOWS = (ChipBenchOfficial(),)
