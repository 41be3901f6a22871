"""``cvdp-gym coverage``: which problems of CVDP files (and of the other benchmarks) this tool
can score, how, and why not.

Contract: ``coverage(sources, ...)`` reads every line of every file and returns one
``CoverageRow`` per line: a problem this tool scores (``scorable``) with ``how`` it is
scored, or a problem (or a line) it cannot score with the ``reason``. It never raises for
what a file holds: a malformed line is a row of its own (``how`` ``malformed``).

It asks the code the grader asks, not a list of rules of its own: records are parsed by
``problem_from_record`` (so ``Problem.scoring``, ``Problem.unsupported``, ``Problem.repo``
are what the environments see); harness problems have their compose files parsed by
``parse_services`` with the Python distributions of the installed cocotb environments, as
the harness runner does before a run, and each service's environment must be installed;
repository-context problems need their repository where the runner's ``RepoStore`` finds it
(a directory or ``NAME.bundle`` in the repos folder, as the official runner's
``CVDP_HEAVY_REPOS_PATH``); judge-scored problems
need a configured judge. So when the grader learns to score more, coverage reports it
without edits here.

``how`` values: ``harness`` (a cocotb harness in the sandbox), ``repo-context harness``,
``bleu`` (BLEU/ROUGE against the reference answer), ``judge`` (an LLM judge), and for the
other benchmarks (a source naming one, ``verilog-eval-v2``, or the path of a copy) the flow
and the simulator it needs (``verilog-eval-v2 on icarus12``). A benchmark's known defects
(``Problem.defect``: its own reference fails its own test bench here, its files disagree)
are scorable, graded and counted in its official figure, and listed with their reason:
a failure there is never the answer's.
``blocker`` of what cannot be scored: ``commercial EDA``, ``unsupported``, ``harness
unreadable``, ``toolchain``, ``no repository``, ``no judge``, ``no reference answer``,
``malformed``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cvdp_gym.data.benchmarks import (
    BENCHMARKS,
    detect,
    is_benchmark_spec,
    load_benchmark,
    parse_spec,
)
from cvdp_gym.data.bundle import bundled_records
from cvdp_gym.data.problems import (
    SCORING_BLEU,
    SCORING_JUDGE,
    Problem,
    jsonl_files,
    problem_from_record,
)
from cvdp_gym.data.repos import RepoStore
from cvdp_gym.errors import DatasetError
from cvdp_gym.harness.compose import HarnessError, parse_services
from cvdp_gym.harness.randomness import problem_randomness
from cvdp_gym.harness.runner import installed_distributions
from cvdp_gym.jsonl import JsonlError, iter_json, one_line
from cvdp_gym.toolchain import Toolchain

__all__ = ["BUNDLED", "CoverageRow", "by_category", "coverage"]

#: The source name that reads the problems bundled with the package.
BUNDLED = "bundled"
_COMMERCIAL_PREFIX = "needs commercial EDA"


@dataclass
class CoverageRow:
    """One problem (or one malformed line) of a covered file."""

    id: str
    source: str
    category: str
    difficulty: str | None
    agentic: bool | None
    scoring: str | None  # Problem.scoring: harness, bleu or judge; None for a malformed line
    scorable: bool
    how: str  # how it is scored (see the module doc), or "malformed"
    blocker: str | None = None  # what stops it, when not scorable
    reason: str = ""  # why not, in one line
    simulators: list[str] = field(default_factory=list)  # SIM of each harness service
    randomised: list[str] = field(default_factory=list)  # harness.randomness reasons
    defect: str | None = None  # a known defect of the benchmark (Problem.defect)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def coverage(
    sources: Iterable[str | Path],
    *,
    toolchain: Toolchain,
    repos: str | Path | RepoStore | None = None,
    judge: bool = False,
    benchmark_dir: str | Path | None = None,
) -> list[CoverageRow]:
    """One row per line of every source (a JSONL file, a folder of them, or ``bundled``), and
    one per problem of every benchmark a source names (or is a copy of).

    ``toolchain``: the toolchain the harnesses would run on (its installed environments
    decide ``RUN pip install`` steps); ``repos``: the repos folder of repository-context
    problems, or the ``RepoStore`` the runner uses (None: ``$CVDP_HEAVY_REPOS_PATH``);
    ``judge``: whether an LLM judge is configured; ``benchmark_dir``: where a named
    benchmark's files are (else as ``data.benchmarks.locate`` finds them). A source that
    cannot be read at all raises ``DatasetError``.
    """
    installed = installed_distributions(toolchain)
    store = repos if isinstance(repos, RepoStore) else RepoStore(repos)
    rows: list[CoverageRow] = []
    benchmarks = [s for s in sources if is_benchmark_spec(str(s)) or detect(Path(s)) is not None]
    for source in benchmarks:
        rows += [_assess_flow(p, toolchain) for p in load_benchmark(source, benchmark_dir=_dir_for(source, benchmark_dir))]
    for location, record, error in _records(s for s in sources if s not in benchmarks):
        if error is not None:
            rows.append(_malformed(location, record, error))
            continue
        try:
            problem = problem_from_record(record, source=location)
        except ValueError as exc:
            rows.append(_malformed(location, record, one_line(str(exc))))
            continue
        rows.append(_assess(problem, toolchain, installed, store, judge))
    return rows


def _records(sources: Iterable[str | Path]) -> Iterator[tuple[str, Any, str | None]]:
    """``(location, record, error)`` for every line of every source."""
    for source in sources:
        if str(source) == BUNDLED:
            for location, record in bundled_records():
                yield location, record, None
            continue
        for file in jsonl_files(Path(source)):
            bad: list[JsonlError] = []  # filled by iter_json as it skips a line, in order
            try:
                for number, record in iter_json(file, on_error=bad.append):
                    yield from _bad_lines(bad, file)
                    yield f"{file}:{number}", record, None
            except JsonlError as exc:  # the file itself cannot be read
                raise DatasetError(str(exc)) from None
            yield from _bad_lines(bad, file)


def _bad_lines(bad: list[JsonlError], file: Path) -> Iterator[tuple[str, Any, str | None]]:
    while bad:
        error = bad.pop(0)
        yield _error_location(error, file), None, one_line(str(error))


def _error_location(error: JsonlError, file: Path) -> str:
    text = str(error)
    prefix = f"{file}:"
    return text.split(": ", 1)[0] if text.startswith(prefix) else str(file)


def _malformed(location: str, record: Any, reason: str) -> CoverageRow:
    rid = record.get("id") if isinstance(record, dict) else None
    categories = record.get("categories") if isinstance(record, dict) else None
    category = categories[0] if isinstance(categories, list) and categories and isinstance(categories[0], str) else "?"
    return CoverageRow(
        id=rid if isinstance(rid, str) and rid else "?", source=location, category=category, difficulty=None,
        agentic=None, scoring=None, scorable=False, how="malformed", blocker="malformed", reason=reason,
    )


def _assess(
    problem: Problem, toolchain: Toolchain, installed: dict[str, set[str]], repos: RepoStore, judge: bool
) -> CoverageRow:
    row = CoverageRow(
        id=problem.id, source=problem.source, category=problem.category, difficulty=problem.difficulty,
        agentic=problem.agentic, scoring=problem.scoring, scorable=False, how=problem.scoring,
    )

    def blocked(blocker: str, reason: str) -> CoverageRow:
        row.blocker, row.reason = blocker, reason
        return row

    if problem.unsupported:
        kind = "commercial EDA" if problem.unsupported.startswith(_COMMERCIAL_PREFIX) else "unsupported"
        return blocked(kind, problem.unsupported)
    if problem.scoring == SCORING_BLEU:
        if problem.reference_answer is None:
            return blocked("no reference answer", "no reference answer (output.response) to score BLEU/ROUGE against")
    elif problem.scoring == SCORING_JUDGE:
        if not judge:
            return blocked("no judge", "scored by an LLM judge, and none is configured (--judge-base-url); the official report gives it 0 credit")
    else:
        if problem.repo is not None:
            row.how = "repo-context harness"
            missing = repos.missing(problem)  # the runner's own lookup
            if missing:
                return blocked("no repository", missing)
        try:
            services = parse_services(problem.harness, installed)
        except HarnessError as exc:
            return blocked("harness unreadable", one_line(str(exc)))
        row.simulators = [s.environment.get("SIM", "?") for s in services]
        row.randomised = list(problem_randomness(problem))
        for service in services:
            if service.unsupported or service.generation is None:
                reason = service.unsupported or "no local environment for this service"
                kind = "commercial EDA" if "commercial" in reason else "unsupported"
                return blocked(kind, f"service {service.name}: {reason}")
            if service.generation not in installed:
                return blocked("toolchain", f"service {service.name}: simulation environment {service.generation} ({toolchain.kind}) is not installed; run: cvdp-gym toolchain install")
    row.scorable = True
    return row


def _dir_for(source: str | Path, benchmark_dir: str | Path | None) -> str | Path | None:
    """``benchmark_dir`` for a named benchmark it holds (several may be covered at once)."""
    name = parse_spec(str(source)).name
    if benchmark_dir is None or name not in BENCHMARKS:
        return None
    return benchmark_dir if BENCHMARKS[name].holds(Path(benchmark_dir)) else None


def _assess_flow(problem: Problem, toolchain: Toolchain) -> CoverageRow:
    """A benchmark problem: scored by its flow on the simulator it names, if that is here."""
    row = CoverageRow(
        id=problem.id, source=problem.source, category=f"{problem.benchmark}/{problem.category or '-'}",
        difficulty=problem.difficulty, agentic=problem.agentic, scoring=problem.scoring, scorable=True,
        how=f"{problem.grader} on {problem.toolchain}"
        + (" (reference unchecked)" if problem.extra.get("checked_reference") is False else ""),
        defect=problem.defect,
    )
    missing = toolchain.simulator_missing(problem.toolchain)
    if missing:
        row.scorable, row.blocker, row.reason = False, "toolchain", missing
    return row


def by_category(rows: Iterable[CoverageRow]) -> dict[str, dict[str, Any]]:
    """Per category: problems, how many are scorable, counts by ``how`` and by ``blocker``,
    and how many are known benchmark defects."""
    table: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = table.setdefault(
            row.category, {"problems": 0, "scorable": 0, "how": Counter(), "blocked": Counter(), "defects": 0}
        )
        entry["problems"] += 1
        entry["defects"] += row.defect is not None
        if row.scorable:
            entry["scorable"] += 1
            entry["how"][row.how] += 1
        else:
            entry["blocked"][row.blocker or "?"] += 1
    return {category: table[category] for category in sorted(table)}
