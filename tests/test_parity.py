"""Parity: bubblewrap on the simulation root and Docker on its image give the same verdicts.

Every bundled problem's reference and each known-wrong candidate runs through both
backends; verdict, failure class and cocotb test counts must agree, and each must be
the verdict the bundled set expects.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from cvdp_gym.check import build_jobs
from cvdp_gym.data import load_dataset
from cvdp_gym.data.bundle import bundled_candidates

pytestmark = [pytest.mark.sandbox, pytest.mark.docker, pytest.mark.slow]


def _summary(result) -> tuple:
    tests = result.tests
    return result.verdict, result.failure_class, (tests.total, tests.passed, tests.failed, tests.skipped)


def test_bundled_verdicts_are_identical_on_bubblewrap_and_docker(runner, docker_runner):
    jobs = build_jobs(load_dataset("bundled"), bundled_candidates())
    assert len(jobs) >= 40

    def both(job):
        return _summary(runner.run(job.problem, job.files)), _summary(docker_runner.run(job.problem, job.files))

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(both, jobs))
    rows = [(job.key, job.expected, bwrap, docker) for job, (bwrap, docker) in zip(jobs, outcomes, strict=True)]
    different = [row for row in rows if row[2] != row[3]]
    assert not different, "\n".join(map(str, different))
    unexpected = [row for row in rows if row[2][0] != row[1]]
    assert not unexpected, "\n".join(map(str, unexpected))
    assert docker_runner.versions["sandbox"] == "docker" and runner.versions["sandbox"] == "bubblewrap"
