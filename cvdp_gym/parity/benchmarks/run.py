"""``cvdp-gym parity`` for VerilogEval v2/v1 and RTLLM: the benchmark's own scripts vs our flows.

Contract: ``run_benchmark_parity(answers, runner=, clone=, work=)`` grades every answer with
our flow (``HarnessRunner.run``, :mod:`cvdp_gym.harness.flows`) and with the benchmark's own
scripts from the user's ``clone`` (``OFFICIAL_FLOWS``, the plug-ins' ``official`` parts:
VerilogEval v2's configure + Makefile + ``sv-iv-analyze``, v1's ``check_correctness``, RTLLM's
``auto_run.py`` with Icarus standing in for VCS, ...; each in the project's sandbox), and returns one ``rows.BenchmarkRow`` per
answer. The clone is only read. A flow that could not run at all gives ``machine``
verdicts (reported apart, never as verdicts); one that ran but named no result for an
answer gives ``missing``.

``benchmark_answers(spec, problems)`` makes the answers: ``references`` (each problem's
reference), ``mutants[:N]`` (the references and N seeded mutants of each,
:mod:`cvdp_gym.data.mutants`) or a JSONL of ``{id, name?, files: {path: text}}`` or
``{id, name?, response: text}`` lines (a response is extracted as the benchmark extracts
it, :func:`cvdp_gym.parsers.benchmark_answers.extract_answer`); ``clone_for`` finds the clone
a dataset spec or path names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from cvdp_gym.check import CheckJob, run_jobs
from cvdp_gym.data.benchmarks import benchmark, detect, is_benchmark_spec, locate, parse_spec
from cvdp_gym.data.mutants import benchmark_mutants
from cvdp_gym.data.problems import Problem
from cvdp_gym.errors import ConfigError, DatasetError
from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.jsonl import JsonlError, iter_json
from cvdp_gym.parity.answers import Answer
from cvdp_gym.parity.benchmarks.official_flows import OFFICIAL_FLOWS, OfficialFlow
from cvdp_gym.parity.benchmarks.rows import BenchmarkRow
from cvdp_gym.parity.benchmarks.sandboxed import BenchmarkVerdict, machine, missing

__all__ = [
    "OFFICIAL_FLOWS",
    "BenchmarkVerdict",
    "OfficialFlow",
    "benchmark_answers",
    "clone_for",
    "is_benchmark_dataset",
    "run_benchmark_parity",
]

#: The ANSWERS words, and the name a reference answer gets.
REFERENCES, MUTANTS, REFERENCE = "references", "mutants", "reference"
DEFAULT_MUTANTS = 3


def is_benchmark_dataset(dataset: str) -> bool:
    """``dataset`` names a benchmark beside CVDP (a spec, or the path of a copy)."""
    return is_benchmark_spec(dataset) or detect(Path(dataset)) is not None


def clone_for(dataset: str, benchmark_dir: Path | None) -> Path:
    """The clone whose scripts the official side runs: ``benchmark_dir`` if given, else the
    copy the dataset spec locates (``--benchmark-dir``, the env var, the cache) or names."""
    if benchmark_dir is not None:
        return benchmark_dir.resolve()
    if is_benchmark_spec(dataset):
        return locate(benchmark(parse_spec(dataset).name)).resolve()
    found = detect(Path(dataset))
    if found is None:
        raise DatasetError(f"{dataset} is not a copy of a known benchmark")
    bench, root = found[0], found[1].resolve()
    if root.is_file():  # one data file of a copy (a VerilogEval v1 .jsonl): its clone is above it
        return next((p for p in root.parents if bench.holds(p)), root.parent)
    return root


def benchmark_answers(spec: str, problems: Sequence[Problem], *, seed: int = 0, hangs: int = 3) -> tuple[list[Answer], list[str]]:
    """The answers ``spec`` names (see the module doc), and ids it names that are not among ``problems``."""
    with_reference = [p for p in problems if p.reference]
    answers: list[Answer] = []
    if spec in (REFERENCES, MUTANTS) or spec.startswith(MUTANTS + ":"):
        for problem in with_reference:
            answers.append(Answer(len(answers), problem, REFERENCE, dict(problem.reference or {}), "passed"))
        if spec != REFERENCES:
            count = spec.partition(":")[2]
            if count and not count.isdigit():
                raise ConfigError(f"ANSWERS {spec!r}: expected mutants or mutants:N")
            for problem, mutant in benchmark_mutants(with_reference, int(count or DEFAULT_MUTANTS), seed=seed, hangs=hangs):
                answers.append(Answer(len(answers), problem, f"mutant:{mutant.kind}", {problem.targets[0]: mutant.text}))
        return answers, []
    return answers_from_jsonl(Path(spec), problems)


def answers_from_jsonl(path: Path, problems: Sequence[Problem]) -> tuple[list[Answer], list[str]]:
    """``{id, name?, files | response}`` lines as answers (``id``: the full id or the benchmark's name)."""
    from cvdp_gym.parsers.benchmark_answers import extract_answer

    by_id = {p.id: p for p in problems} | {str(p.extra.get("name")): p for p in problems if p.extra.get("name")}
    answers: list[Answer] = []
    unknown: list[str] = []
    try:
        for number, item in iter_json(path):
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                raise DatasetError(f"{path}:{number}: expected an object with an id")
            problem = by_id.get(item["id"])
            if problem is None:
                unknown.append(item["id"])
                continue
            if isinstance(item.get("files"), dict):
                files = {str(k): str(v) for k, v in item["files"].items()}
            elif isinstance(item.get("response"), str):
                files = extract_answer(problem, item["response"]).files
            else:
                raise DatasetError(f"{path}:{number}: expected files {{path: text}} or a response")
            answers.append(Answer(len(answers), problem, str(item.get("name") or f"answer{len(answers)}"), files))
    except JsonlError as exc:
        raise DatasetError(str(exc)) from None
    return answers, unknown


def run_benchmark_parity(
    answers: Sequence[Answer],
    *,
    runner: HarnessRunner,
    clone: Path,
    work: Path,
    jobs: int = 1,
    seed: int | None = None,
    on_step: Callable[[str], None] = lambda _: None,
    on_ours: Callable[[str], None] = lambda _: None,
    on_official: Callable[[str], None] = lambda _: None,
) -> list[BenchmarkRow]:
    """Grade ``answers`` with our flows and with the benchmark's own scripts; one row per answer."""
    flows = sorted({a.problem.flow or "" for a in answers})
    unknown = [f for f in flows if f not in OFFICIAL_FLOWS]
    if unknown or len(flows) != 1:
        raise ConfigError(f"benchmark parity compares one benchmark's answers at a time (flows: {', '.join(flows)})")
    official_flow = OFFICIAL_FLOWS[flows[0]]
    official_flow.check(clone)
    on_step("grading here")
    jobs_here = [CheckJob(a.problem, str(a.index), a.files, "?") for a in answers]
    ours = {o.name: o.result for o in run_jobs(jobs_here, runner, jobs_parallel=jobs, seed=seed, on_done=lambda o: on_ours(o.problem_id))}
    on_step(f"the benchmark's own scripts ({len(answers)} answers)")
    work.mkdir(parents=True, exist_ok=True)
    try:
        official = official_flow.run(
            answers, sandbox=runner.sandbox, clone=clone, work=work.resolve(), jobs=jobs, on_done=lambda a: on_official(a.problem.id),
        )
    except (ConfigError, OSError) as exc:
        official = {a.index: machine(str(a.index), f"the official flow could not run: {exc}") for a in answers}
    return [
        BenchmarkRow(a, ours[str(a.index)], official.get(a.index) or missing(str(a.index), "the official flow named no result"))
        for a in answers
    ]
