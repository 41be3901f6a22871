"""``cvdp-gym audit``'s report: each problem's kill rate, each benchmark's distribution.

Contract: ``summarize(audited, skipped, meta)`` is the whole report as plain JSON data:
``meta``, ``benchmarks`` (per benchmark, and task where a dataset holds several: problems
audited and left out, mutant outcomes, the share of built mutants its test bench passes,
the pooled and per-problem kill rates, the problems below 95% and at 0%), ``problems`` (one
row each) and ``mutants`` (one row each). The kill rate is killed / (killed + missed): a
missed mutant passed the test bench and the equivalence grader showed it differs from the
reference; equivalent survivors are dropped and undecided ones counted apart, never in the
rate. ``tables(report)`` gives the report's tables as ``(title, columns, rows)`` of text, which
``to_markdown``, ``to_html`` and the command's terminal tables all render, so the three show
the same figures; ``write_reports`` writes ``audit.json``, ``audit.md`` and ``audit.html``.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cvdp_gym.audit.run import KILLED, MISSED, NOT_GRADED, OUTCOMES, UNBUILT, Audited
from cvdp_gym.data.problems import Problem
from cvdp_gym.grading.backed import EQUIVALENT
from cvdp_gym.grading.result import INTERFACE_ERROR, UNDECIDED
from cvdp_gym.report.pages import esc, page, table

__all__ = ["BELOW", "summarize", "tables", "to_html", "to_markdown", "write_reports"]

Table = tuple[str, list[str], list[list[str]]]
#: A test bench that catches fewer than this share of the wrong mutants is listed.
BELOW = 0.95
#: The kill-rate bins of a benchmark's distribution, ``(label, low, high)``: low <= rate < high.
BINS = (("0%", 0.0, 1e-9), ("above 0%, below 50%", 1e-9, 0.5), ("50% to below 95%", 0.5, BELOW),
        ("95% to below 100%", BELOW, 1.0), ("100%", 1.0, 2.0))
#: Problem statuses: audited, or why its kill rate is not counted.
AUDITED, REFERENCE_FAILS, NONE_DECIDED = "audited", "its reference fails its own test bench", "no mutant decided"


def _group(problem: Problem) -> str:
    return problem.benchmark + (f":{problem.task}" if problem.task else "")


def _problem_row(entry: Audited) -> dict[str, Any]:
    problem = entry.subject.problem
    outcomes = {name: entry.outcome(name) for name in entry.testbench}
    counts = {o: sum(v == o for v in outcomes.values()) for o in OUTCOMES}
    missed = [name for name, o in outcomes.items() if o == MISSED]
    decided = counts[KILLED] + counts[MISSED]
    # A miss the equivalence grader reports as other ports: a port's width changed (see ``notes``).
    ports = sum(entry.equivalence[name].result.failure_class == INTERFACE_ERROR for name in missed)
    runs = [entry.reference, *entry.testbench.values(), *entry.equivalence.values()]
    reference = entry.reference.result if entry.reference is not None else None
    if reference is None or not reference.passed:
        status = REFERENCE_FAILS
    else:
        status = AUDITED if decided else NONE_DECIDED
    return {
        "id": problem.id,
        "benchmark": _group(problem),
        "status": status,
        "reference": reference.verdict if reference is not None else "not run",
        "reference_reason": (reference.reason if reference is not None and not reference.passed else "")[:300],
        "reference_equivalence": entry.reference_equivalence,
        "no_check": entry.subject.no_check,
        "mutants": len(entry.subject.mutants),
        **counts,
        "missed_ports": ports,
        "kill_rate": counts[KILLED] / decided if decided and status == AUDITED else None,
        "run_s": round(sum(o.result.wall_s for o in runs if o is not None), 1),
        "missed_mutants": missed,
        "undecided_mutants": [name for name, o in outcomes.items() if o == UNDECIDED],
    }


def _mutant_rows(entry: Audited) -> list[dict[str, Any]]:
    rows = []
    for name, outcome in entry.testbench.items():
        check = entry.equivalence.get(name)
        rows.append({
            "id": entry.subject.problem.id,
            "mutant": name,
            "kind": name.split(":", 1)[1].split("@", 1)[0],
            "outcome": entry.outcome(name),
            "testbench": outcome.result.verdict,
            "testbench_reason": outcome.result.reason[:300],
            "testbench_s": round(outcome.result.wall_s, 3),
            "equivalence": check.result.verdict if check is not None else None,
            "equivalence_reason": check.result.reason[:300] if check is not None else "",
            "formal": (check.result.official.get("formal") or {}).get("verdict") if check is not None else None,
            "equivalence_s": round(check.result.wall_s, 3) if check is not None else None,
        })
    return rows


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _benchmark(rows: list[dict[str, Any]], skipped: int) -> dict[str, Any]:
    audited = [r for r in rows if r["status"] == AUDITED]
    rates = [r["kill_rate"] for r in audited]
    counts = {o: sum(r[o] for r in rows if r["status"] != REFERENCE_FAILS) for o in OUTCOMES}
    built = counts[KILLED] + counts[MISSED] + counts[EQUIVALENT] + counts[UNDECIDED]
    survived = counts[MISSED] + counts[EQUIVALENT] + counts[UNDECIDED]
    ports = sum(r["missed_ports"] for r in rows if r["status"] != REFERENCE_FAILS)
    return {
        "problems": len(rows) + skipped,
        "audited": len(audited),
        "reference_fails": sum(r["status"] == REFERENCE_FAILS for r in rows),
        "none_decided": sum(r["status"] == NONE_DECIDED for r in rows),
        "left_out": skipped,
        **counts,
        "mutants": sum(counts.values()),
        "missed_ports": ports,
        "passed_by_testbench": _rate(survived, built),
        "kill_rate_pooled": _rate(counts[KILLED], counts[KILLED] + counts[MISSED]),
        "kill_rate_behaviour": _rate(counts[KILLED], counts[KILLED] + counts[MISSED] - ports),
        "kill_rate_mean": statistics.mean(rates) if rates else None,
        "kill_rate_median": statistics.median(rates) if rates else None,
        "below_95": sorted(r["id"] for r in audited if r["kill_rate"] < BELOW),
        "at_0": sorted(r["id"] for r in audited if r["kill_rate"] == 0),
        "at_100": sum(r["kill_rate"] == 1 for r in audited),
        "distribution": {label: sum(low <= rate < high for rate in rates) for label, low, high in BINS},
        "run_s": round(sum(r["run_s"] for r in rows), 1),
        "references_undecided": sum(r["reference_equivalence"] not in (None, EQUIVALENT) for r in rows if r["status"] != REFERENCE_FAILS),
    }


def summarize(audited: Iterable[Audited], skipped: list[tuple[Problem, str]], meta: dict[str, Any]) -> dict[str, Any]:
    """The report (see the module doc); ``skipped``: ``(problem, why)`` left out before any run (``plan``)."""
    entries = list(audited)
    problems = [_problem_row(e) for e in entries]
    left_out = [{"id": problem.id, "benchmark": _group(problem), "why": why} for problem, why in skipped]
    groups = sorted({r["benchmark"] for r in problems} | {r["benchmark"] for r in left_out})
    return {
        "meta": meta,
        "benchmarks": {
            g: _benchmark([r for r in problems if r["benchmark"] == g], sum(r["benchmark"] == g for r in left_out))
            for g in groups
        },
        "problems": problems,
        "mutants": [row for e in entries for row in _mutant_rows(e)],
        "skipped": left_out,
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def tables(report: dict[str, Any]) -> list[Table]:
    """The report's tables, as text cells."""
    benchmarks = report["benchmarks"]
    overview = (
        "Kill rate of each benchmark's own test benches on seeded single-site mutants of its references",
        ["benchmark", "problems audited", "mutants", "killed", "missed (of which a port's width only)", "equivalent (dropped)",
         "undecided", "unbuilt", "not graded", "passed by the test bench", "kill rate (pooled)",
         "kill rate, port-width misses left out", "kill rate (mean per problem)", "problems below 95%", "problems at 0%"],
        [[name, f"{b['audited']} / {b['problems']}", str(b["mutants"]), str(b[KILLED]), f"{b[MISSED]} ({b['missed_ports']})",
          str(b[EQUIVALENT]), str(b[UNDECIDED]), str(b[UNBUILT]), str(b[NOT_GRADED]), _pct(b["passed_by_testbench"]),
          _pct(b["kill_rate_pooled"]), _pct(b["kill_rate_behaviour"]), _pct(b["kill_rate_mean"]), str(len(b["below_95"])),
          str(len(b["at_0"]))] for name, b in benchmarks.items()],
    )
    labels = [label for label, _, _ in BINS]
    distribution = (
        "Problems by kill rate",
        ["benchmark", *labels, "left out: reference fails", "left out: no mutant decided", "left out: not auditable"],
        [[name, *(str(b["distribution"][label]) for label in labels), str(b["reference_fails"]), str(b["none_decided"]),
          str(b["left_out"])] for name, b in benchmarks.items()],
    )
    weak = sorted((r for r in report["problems"] if r["kill_rate"] is not None and r["kill_rate"] < BELOW),
                  key=lambda r: (r["kill_rate"], r["id"]))
    below = (
        f"Problems whose test bench kills fewer than {BELOW:.0%} of the wrong mutants",
        ["problem", "kill rate", "killed", "missed", "undecided", "missed mutants"],
        [[r["id"], _pct(r["kill_rate"]), str(r[KILLED]), str(r[MISSED]), str(r[UNDECIDED]),
          ", ".join(m.removeprefix("mutant:") for m in r["missed_mutants"])] for r in weak],
    )
    out = [overview, distribution, below]
    failing = [r for r in report["problems"] if r["status"] == REFERENCE_FAILS]
    if failing:
        out.append(("Left out: the reference fails its own test bench here", ["problem", "verdict", "reason"],
                    [[r["id"], r["reference"], r["reference_reason"]] for r in failing]))
    return out


def notes(report: dict[str, Any]) -> list[str]:
    """What a reader needs to read the figures right."""
    meta = report["meta"]
    lines = [
        f"{meta['mutants_per_problem']} seeded single-site behaviour mutants per problem at most (seed {meta['seed']}; "
        "operators, constants, conditions, reset polarity, internal widths, case items, state transitions, an output made X).",
        "killed: the test bench fails it by behaviour (test failure, timeout); missed: the test bench passes it and the "
        "reference-equivalence grader shows it differs; equivalent: passes both (a correct rewrite, dropped); undecided: the "
        "equivalence grader could not decide (counted apart, never a kill or a miss); unbuilt: rejected before simulating.",
        "kill rate = killed / (killed + missed); 'passed by the test bench' = the built mutants it passes, equivalent ones included.",
    ]
    lines.append("a miss of 'a port's width only': the mutant changed a port's width and the equivalence grader reports that "
                 "(the reference's ports are the interface), while the test bench, connecting fixed-width wires, sees only the "
                 "bits it connects; 'kill rate, port-width misses left out' counts behaviour misses only.")
    undecided_refs = sum(b["references_undecided"] for b in report["benchmarks"].values())
    if undecided_refs:
        lines.append(f"{undecided_refs} reference(s) were not decided equivalent to themselves by the equivalence grader: "
                     "their survivors are likely undecided too.")
    return lines


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def to_markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    lines = [f"# Test-bench audit: {meta['dataset']}", ""]
    lines += [f"- {key}: {value}" for key, value in meta.items() if value not in (None, "")]
    for title, columns, rows in tables(report):
        lines += ["", f"## {title}", ""]
        if not rows:
            lines.append("None.")
            continue
        lines += ["| " + " | ".join(map(_md, columns)) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(map(_md, cells)) + " |" for cells in rows]
    lines += ["", "## Notes", "", *(f"- {_md(note)}" for note in notes(report))]
    return "\n".join(lines) + "\n"


def to_html(report: dict[str, Any]) -> str:
    meta = report["meta"]
    parts = [f"<h1>Test-bench audit: {esc(meta['dataset'])}</h1>",
             "<ul>" + "".join(f"<li>{esc(k)}: {esc(v)}</li>" for k, v in meta.items() if v not in (None, "")) + "</ul>"]
    for title, columns, rows in tables(report):
        parts.append(f"<h2>{esc(title)}</h2>")
        parts.append(table(columns, [[esc(c) for c in cells] for cells in rows]) if rows else '<p class="muted">None.</p>')
    parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes(report)) + "</ul>")
    return page(f"Test-bench audit: {meta['dataset']}", "\n".join(parts))


def write_reports(report: dict[str, Any], out: Path) -> dict[str, Path]:
    """``audit.json``, ``audit.md`` and ``audit.html`` in ``out``; their paths by format."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "audit.json", "markdown": out / "audit.md", "html": out / "audit.html"}
    paths["json"].write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    paths["markdown"].write_text(to_markdown(report), encoding="utf-8")
    paths["html"].write_text(to_html(report), encoding="utf-8")
    return paths
