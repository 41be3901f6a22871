"""``cvdp-gym parity``: the official CVDP runner and this tool, on the same answers.

``run_parity`` grades each answer here (the harness, as ``cvdp-gym check``), writes the
answers as the official runner's golden-mode input (``answers.official_datasets``), runs a
user's clone of NVlabs/cvdp_benchmark on it with Docker (``official.run_official``, images
mapped by ``official.OfficialImages``), reads its verdicts, and pairs them
(``compare.ParityRow``). Failures of the machine are reported apart, never as verdicts.

VerilogEval v2/v1 and RTLLM: ``benchmarks.run_benchmark_parity`` runs the benchmark's own
scripts from a user's clone (in the sandbox) and our flows on the same answers (the
references, seeded ``mutants``, or a file), one ``benchmarks.rows.BenchmarkRow`` each.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cvdp_gym.check import CheckJob, run_jobs
from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.parity.answers import Answer, answers_from_file, bundled_answers, official_datasets
from cvdp_gym.parity.compare import AGREE, DISAGREE, LEFT_OUT, ParityRow, agreement, summary_json
from cvdp_gym.parity.official import (
    MACHINE,
    OfficialImages,
    OfficialVerdict,
    check_official_repo,
    docker_compose_ok,
    machine_failure,
    official_python,
    read_verdicts,
    run_official,
)
from cvdp_gym.sandbox.docker import DockerSandbox

__all__ = [
    "AGREE",
    "DISAGREE",
    "LEFT_OUT",
    "Answer",
    "ParityRow",
    "agreement",
    "answers_from_file",
    "bundled_answers",
    "machine_failure",
    "official_datasets",
    "read_verdicts",
    "run_parity",
    "summary_json",
]


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
