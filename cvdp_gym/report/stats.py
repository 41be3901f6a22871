"""The numbers of the HTML report, from one eval run folder read back.

A run is read with :func:`cvdp_gym.eval.compare.read_run` (so a missing, truncated or
other-version folder is the same one-line ``RunDirError`` as for ``compare``), then its rows
are the ones it keeps (the last row of each ``(id, sample)``, as ``--resume`` keeps it;
``not_judged`` answers left out, as eval's report leaves them out). Per category and difficulty:

- pass@1 with a 95% interval: the mean over problems of the share of their samples that
  passed, with Wilson's score interval over problems (:func:`cvdp_gym.eval.intervals.wilson`,
  the same interval report.json prints, so both reports agree);
- consistency: problems never, sometimes (flaky across samples) and always solved;
- failure classes: failed samples per verdict, and the share of the failed samples;
- the stage each failure stopped at: the first of the grader's stages (format, syntax, which
  includes the lint, interface, tests) recorded as failed in the row's ``grade.stages``;
  ``not graded`` when no stage ran (a request or grader error, an unsupported problem);
- pass@k for each k the run's ``report.json`` names (else 1 and the usual ladder up to the
  samples per problem), the unbiased estimator averaged over the problems with at least k
  samples, with a seeded percentile bootstrap 95% interval over problems
  (:data:`BOOTSTRAP_RESAMPLES` resamples, seed :data:`BOOTSTRAP_SEED`).

Groups are categories, difficulties and design domains (:mod:`cvdp_gym.report.domains`: by
the id, else the prompt and ports when the run's dataset is the bundled one or a local file).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cvdp_gym.data.problems import difficulty_order
from cvdp_gym.errors import CvdpGymError
from cvdp_gym.eval.compare import read_run
from cvdp_gym.eval.intervals import bootstrap_mean, wilson
from cvdp_gym.eval.passk import default_ks, pass_at_k, problem_counts
from cvdp_gym.eval.run import PASSED
from cvdp_gym.grading.result import STAGES
from cvdp_gym.report.domains import DOMAINS, OTHER, domain_of, module_ports

__all__ = [
    "ALWAYS", "BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "NEVER", "NOT_GRADED", "SOMETIMES", "RunStats", "answer_seconds",
    "consistency", "failure_stage", "group_stats", "group_table", "load_run", "pass_at_1", "pass_at_k_table",
    "problem_domains", "summarize",
]

Row = dict[str, Any]
UNKNOWN = "unknown"
#: The stage of a failure no stage of the grader ran on.
NOT_GRADED = "not graded"
NEVER, SOMETIMES, ALWAYS = "never", "sometimes", "always"
#: The report's pass@k bootstrap: resamples of the problems, and its seed.
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


@dataclass
class RunStats:
    """One run folder read back: its rows, settings and warnings."""

    path: Path
    rows: list[Row]
    meta: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    #: The pass@k values shown (report.json's ``ks``, cut at the most samples of a problem).
    ks: list[int] = field(default_factory=lambda: [1])
    #: Design domain per problem id.
    domains: dict[str, str] = field(default_factory=dict)

    @property
    def problems(self) -> dict[str, list[Row]]:
        """Rows per problem, samples in order, problems sorted by id."""
        out: dict[str, list[Row]] = defaultdict(list)
        for row in sorted(self.rows, key=lambda r: (r["id"], r["sample"])):
            out[row["id"]].append(row)
        return dict(out)


def load_run(path: str | Path) -> RunStats:
    """A run folder's rows and settings; ``RunDirError`` (one line) when it cannot be read."""
    data = read_run(path)  # validates every row, keeps the last of each answer; raises RunDirError
    rows = data.rows
    samples = Counter(r["id"] for r in rows)
    most = max(samples.values(), default=1)
    ks = sorted({1, *(k for k in _report_ks(Path(path)) or default_ks(most) if 1 <= k <= most)})
    domains = problem_domains(sorted(samples), data.settings.get("dataset"))
    return RunStats(Path(path), rows, dict(data.settings), list(data.warnings), ks, domains)


def _report_ks(path: Path) -> list[int]:
    """The ks report.json names (none when it names none: read_run already checked it)."""
    try:
        ks = json.loads((path / "report.json").read_text(encoding="utf-8")).get("ks")
    except (OSError, ValueError, AttributeError):
        return []
    return [int(k) for k in ks if isinstance(k, int)] if isinstance(ks, list) else []


def problem_domains(ids: list[str], dataset: Any = None) -> dict[str, str]:
    """Domain per problem id: the id rule, with prompts and target ports when ``dataset`` is the
    bundled one or a local file (cheap to read; a hub dataset is not fetched for a report)."""
    problems: dict[str, Any] = {}
    if isinstance(dataset, str) and (dataset == "bundled" or Path(dataset).is_file()):
        from cvdp_gym.data import load_dataset

        try:
            problems = {p.id: p for p in load_dataset(dataset).problems}
        except (CvdpGymError, OSError, ValueError):
            problems = {}
    out = {}
    for pid in ids:
        problem = problems.get(pid)
        if problem is None:
            out[pid] = domain_of(pid)
            continue
        texts = [problem.context.get(t) or (problem.reference or {}).get(t) or "" for t in problem.targets]
        ports = [port for text in texts for port in module_ports(text)]
        out[pid] = domain_of(pid, problem.prompt, ports)
    return out


def failure_stage(row: Row) -> str | None:
    """The grader stage a failed answer stopped at (None for a passed one)."""
    if row.get("passed"):
        return None
    stages = (row.get("grade") or {}).get("stages") or []
    for stage in stages:
        if stage.get("passed") is False:
            return str(stage.get("name"))
    ran = [s for s in stages if s.get("passed") is not None]
    return NOT_GRADED if not ran else "tests"


def consistency(counts: Mapping[str, list[int]]) -> dict[str, int]:
    """Problems whose samples never, sometimes or always passed (``counts``: ``problem_counts``)."""
    out = {NEVER: 0, SOMETIMES: 0, ALWAYS: 0}
    for n, c in counts.values():
        out[NEVER if c == 0 else ALWAYS if c == n else SOMETIMES] += 1
    return out


def pass_at_1(counts: Mapping[str, list[int]]) -> tuple[float, int, tuple[float, float]]:
    """pass@1 (mean over problems of their pass share), the problems, and its Wilson 95% interval."""
    n = len(counts)
    rate = sum(c / s for s, c in counts.values()) / n if n else 0.0
    return rate, n, wilson(rate, n)


def pass_at_k_table(counts: Mapping[str, list[int]], ks: list[int]) -> dict[int, dict[str, Any]]:
    """Unbiased pass@k per k over the problems with at least k samples, with a seeded
    percentile bootstrap 95% interval over those problems."""
    out: dict[int, dict[str, Any]] = {}
    for k in ks:
        values = [pass_at_k(n, c, k) for n, c in counts.values() if n >= k]
        if not values:
            continue
        low, high = bootstrap_mean(values, resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED)
        out[k] = {"rate": sum(values) / len(values), "ci95": [low, high], "problems": len(values)}
    return out


def group_stats(rows: list[Row], ks: list[int] | None = None) -> dict[str, Any]:
    counts = problem_counts(rows)
    rate, n, ci = pass_at_1(counts)
    failed = [r for r in rows if not r.get("passed")]
    classes = Counter(str(r.get("verdict") or "failed") for r in failed)
    stages = Counter(failure_stage(r) or NOT_GRADED for r in failed)
    return {
        "problems": n,
        "samples": len(rows),
        "passed_samples": len(rows) - len(failed),
        "pass@1": rate,
        "pass@1_ci95": list(ci),
        "pass@k": pass_at_k_table(counts, ks or [1]),
        "consistency": consistency(counts),
        "failure_classes": dict(sorted(classes.items(), key=lambda kv: (-kv[1], kv[0]))),
        "failure_shares": {k: v / len(failed) for k, v in classes.items()} if failed else {},
        "failure_stages": {s: stages[s] for s in (*STAGES, NOT_GRADED) if stages.get(s)},
    }


def _domain_order(name: str) -> tuple[int, str]:
    return (DOMAINS.index(name) if name in DOMAINS else len(DOMAINS), name)


def group_table(
    rows: list[Row], field_name: str, ks: list[int] | None = None, key: Callable[[Row], str] | None = None
) -> dict[str, dict[str, Any]]:
    """``group_stats`` per value of ``field_name`` (category, difficulty, or domain with ``key``), in report order."""
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        groups[key(r) if key else str(r.get(field_name) or UNKNOWN)].append(r)
    order = {"difficulty": difficulty_order, "domain": _domain_order}.get(field_name)
    return {name: group_stats(groups[name], ks) for name in sorted(groups, key=order)}


def answer_seconds(row: Row) -> float:
    """Time of one answer: the episode's wall time for agentic/refine rows, else the grading time."""
    value = row.get("episode_s") if row.get("episode_s") is not None else row.get("wall_s")
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def summarize(run: RunStats) -> dict[str, Any]:
    """Everything the run's section shows, as plain data."""
    times = [answer_seconds(r) for r in run.rows]
    per_problem = run.problems
    slowest = sorted(
        ((pid, max(answer_seconds(r) for r in rs), sum(answer_seconds(r) for r in rs) / len(rs)) for pid, rs in per_problem.items()),
        key=lambda t: (-t[1], t[0]),
    )
    overall = group_stats(run.rows, run.ks)
    return {
        "ks": run.ks,
        "overall": overall,
        "by_category": group_table(run.rows, "category", run.ks),
        "by_difficulty": group_table(run.rows, "difficulty", run.ks),
        "by_domain": group_table(run.rows, "domain", run.ks, key=lambda r: run.domains.get(r["id"]) or OTHER),
        "has_time": any(t > 0 for t in times),
        "times": times,
        "slowest": slowest,
        "episodes": any("turns" in r or "max_attempts" in r for r in run.rows),
        "verdict_order": [PASSED, *overall["failure_classes"]],
    }
