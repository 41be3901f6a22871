"""CVDP parity: each answer graded here and by the official runner, paired one row each.

The official runner reads the answers as its golden-mode datasets, runs in Docker on a
user's clone, and its verdicts are read back; a machine failure on either side is reported
as such, never as a verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cvdp_gym.check import CheckJob, run_jobs
from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.parity.answers import Answer, official_datasets
from cvdp_gym.parity.compare import ParityRow
from cvdp_gym.parity.official import (
    MACHINE,
    OfficialImages,
    OfficialVerdict,
    check_official_repo,
    docker_compose_ok,
    official_python,
    read_verdicts,
    run_official,
)
from cvdp_gym.sandbox.docker import DockerSandbox


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
    """Grade ``answers`` here and with the official runner; one row per answer.

    ``work``: where the official runner's datasets, work folders and logs go; ``threads``:
    the official runner's ``-t``; ``jobs``: our harness runs in parallel; ``seed``: our
    harness seed (default: fresh, recorded per row).
    """
    check_official_repo(official_repo)
    images = OfficialImages(DockerSandbox(runner.toolchain))  # no engine: SandboxUnavailable, before any work
    compose_problem = docker_compose_ok()
    problem_jobs = [CheckJob(a.problem, f"{a.index}", a.files, "?") for a in answers]
    on_step("grading here")
    ours = {o.name: o.result for o in run_jobs(problem_jobs, runner, jobs_parallel=jobs, seed=seed, on_done=lambda o: on_ours(o.problem_id))}
    datasets = official_datasets(answers, work / "datasets")
    official: dict[str, OfficialVerdict] = {}
    try:
        for dataset in datasets.files:
            ids = [i for i, a in datasets.ids.items() if ("agentic" in dataset.name) == a.problem.agentic]
            if compose_problem is not None:
                official.update({i: OfficialVerdict(i, MACHINE, compose_problem) for i in ids})
                continue
            images.prepare([datasets.ids[i].problem for i in ids], agentic="agentic" in dataset.name)
            on_step(f"official runner on {dataset.name} ({len(ids)} answers)")
            out_dir = work / dataset.stem
            code, output = run_official(
                official_repo, dataset, out_dir, python=official_python(official_repo, python), threads=threads, timeout_s=timeout_s
            )
            (work / f"{dataset.stem}.console.log").write_text(output, encoding="utf-8")
            official.update(read_verdicts(out_dir, ids, output if code != 0 else ""))
    finally:
        images.close()
    rows: list[ParityRow] = []
    by_answer = {a.index: i for i, a in datasets.ids.items()}
    for answer in answers:
        verdict = official.get(by_answer.get(answer.index, ""))
        if verdict is None:
            reason = next((why for a, why in datasets.left_out if a.index == answer.index), "not run by the official runner")
            verdict = OfficialVerdict("", "missing", reason)
        rows.append(ParityRow(answer, ours[str(answer.index)], verdict))
    return rows
