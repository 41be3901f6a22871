"""CVDP parity: each answer graded here and by the official runner, paired one row each.

The official runner and how its verdicts are read are CVDP's plug-in's ``official`` part
(:mod:`cvdp_gym.benchmarks.cvdp.official`), reached here by name (``OFFICIAL_RUNNERS``), so the
parity command keeps one entry point (:func:`run_parity`) without importing a plug-in.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cvdp_gym.data.problems import CVDP
from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.parity.answers import Answer
from cvdp_gym.parity.compare import ParityRow
from cvdp_gym.parity.official_runner import OfficialRunner
from cvdp_gym.plugins import PluginTable

__all__ = ["OFFICIAL_RUNNERS", "OfficialRunner", "run_parity"]


#: The official runners, by benchmark name: the plug-ins' ``official`` parts that list
#: ``OFFICIAL_RUNNERS`` (CVDP's; the others list per-answer ``OFFICIAL_FLOWS``).
OFFICIAL_RUNNERS: PluginTable[OfficialRunner] = PluginTable("official", "OFFICIAL_RUNNERS", optional=True)


def run_parity(
    answers: list[Answer],
    *,
    runner: HarnessRunner,
    official_repo: Path,
    work: Path,
    python: str | None = None,
    threads: int = 1,
    jobs: int = 1,
    seed: int | None = None,
    timeout_s: float | None = None,
    on_step: Callable[[str], None] = lambda _: None,
    on_ours: Callable[[str], None] = lambda _: None,
) -> list[ParityRow]:
    """Grade ``answers`` here and with the official CVDP runner; one row per answer.

    ``work``: where the official runner's datasets, work folders and logs go; ``threads``:
    the official runner's ``-t``; ``jobs``: our harness runs in parallel; ``seed``: our
    harness seed (default: fresh, recorded per row).
    """
    return OFFICIAL_RUNNERS[CVDP](
        answers, runner=runner, official_repo=official_repo, work=work, python=python, threads=threads, jobs=jobs,
        seed=seed, timeout_s=timeout_s, on_step=on_step, on_ours=on_ours,
    )
