"""The job the ``Grader`` sends to an executor: its stages after extraction, on a worker's runner.

A module-level function of picklable arguments (``cvdp_gym.execution.jobs``), so a thread,
a worker process or a Ray node can run it; it returns plain data, which crosses process and
node boundaries unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cvdp_gym.data.problems import Problem
from cvdp_gym.execution.jobs import RunnerSpec, runner_for
from cvdp_gym.grading.backed import TESTBENCH
from cvdp_gym.grading.stages import run_stages


def grade_job(
    spec: RunnerSpec, lint: bool, interface: bool, problem: Problem, files: Mapping[str, str], seed: int | None = None,
    verdict: str = TESTBENCH,
) -> dict[str, Any]:
    """The grader's stages after extraction (syntax, interface, tests; under
    ``testbench+reference`` the check against the reference), uncached; returns
    ``GradeResult.to_dict()``."""
    runner = runner_for(spec)
    return run_stages(runner, problem, dict(files), lint=lint, interface=interface, seed=seed, verdict=verdict).to_dict()
