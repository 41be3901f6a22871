"""Parity: bubblewrap on the simulation root and a container engine on its image (Docker,
rootless Podman) give the same verdicts.

Every bundled problem's reference and each known-wrong candidate runs through bubblewrap
and Docker; verdict, failure class and cocotb test counts must agree, and each must be the
verdict the bundled set expects; rootless Podman runs the same jobs on the same image.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support import verdict_summary

pytestmark = [pytest.mark.sandbox, pytest.mark.docker, pytest.mark.slow]


def test_bundled_verdicts_are_identical_on_bubblewrap_and_docker(runner, container_runner, bundled_jobs, bundled_results):
    assert len(bundled_jobs) >= 40
    jobs = bundled_jobs
    with ThreadPoolExecutor(2) as pool:
        docker = list(pool.map(lambda job: verdict_summary(container_runner.run(job.problem, job.files)), jobs))
    rows = [
        (job.key, job.expected, verdict_summary(bundled_results[job.key]), found)
        for job, found in zip(jobs, docker, strict=True)
    ]
    different = [row for row in rows if row[2] != row[3]]
    assert not different, "\n".join(map(str, different))
    unexpected = [row for row in rows if row[2][0] != row[1]]
    assert not unexpected, "\n".join(map(str, unexpected))
    assert container_runner.versions["sandbox"] in ("docker", "podman") and runner.versions["sandbox"] == "bubblewrap"


def test_benchmark_flows_give_the_same_verdicts_in_docker(runner, container_runner):
    """VerilogEval (Icarus 12 bound over the image's Icarus 13, as over the root's) and RTLLM:
    a reference and a wrong answer per made-up copy, the same verdicts and official readings
    on both backends, and the Icarus each used."""
    from pathlib import Path

    from cvdp_gym.data import load_dataset

    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
    jobs = []
    for spec, copy in (("verilog-eval-v2:spec-to-rtl", "verilog-eval"), ("verilog-eval-v1", "verilog-eval-v1"), ("rtllm-v2", "rtllm")):
        problem = load_dataset(spec, benchmark_dir=fixtures / copy).problems[0]
        target = problem.targets[0]
        jobs += [(problem, problem.reference), (problem, {target: problem.reference[target].replace("endmodule", "", 1)})]

    def both(job):
        problem, files = job
        return runner.run(problem, files), container_runner.run(problem, files)

    with ThreadPoolExecutor(2) as pool:
        pairs = list(pool.map(both, jobs))
    def readings(result):  # everything but RTLLM's measured simulation time
        return result.verdict, {k: v for k, v in result.official.items() if k != "seconds"}, vars(result.tests)

    for (problem, _), (here, there) in zip(jobs, pairs, strict=True):
        assert readings(here) == readings(there), problem.id
        assert here.toolchain["simulator"] == there.toolchain["simulator"]
    assert [here.passed for here, _ in pairs] == [True, False] * 3
    assert pairs[0][1].toolchain["simulator"].startswith("Icarus Verilog version 12.")
    assert pairs[4][1].toolchain["simulator"].startswith("Icarus Verilog version 13.")
