"""``index.html``: one section per eval run, with its figures under ``images/`` and its
problem and transcript pages under ``run<N>/``. Static: no script, no network, relative links.
Under the overview table, each VerilogEval or RTLLM run's benchmark figures: the same tables
and notes as report.md (:mod:`cvdp_gym.eval.benchmark_tables`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from cvdp_gym.eval.benchmark_reports import benchmark_reports
from cvdp_gym.eval.benchmark_tables import section_notes, section_tables
from cvdp_gym.eval.run import RESULTS
from cvdp_gym.report.pages import (
    esc,
    link,
    page,
    safe_name,
    table,
    transcript_file,
    verdict_cell,
    write_problem_page,
    write_transcript_page,
)
from cvdp_gym.report.plots import write_figures
from cvdp_gym.report.stats import (
    ALWAYS,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    NEVER,
    SOMETIMES,
    RunStats,
    answer_seconds,
    failure_stage,
    load_run,
    summarize,
)

__all__ = ["SECTIONS", "write_html_report"]

#: The section headings of each run (tests check they are all there).
SECTIONS = (
    "pass@k by category and difficulty", "Consistency across samples", "Failure classes",
    "Stage each failure stopped at", "Time per answer", "Problems", "Domains",
)
PASS, CONSISTENCY, FAILURES, STAGES_, TIME, PROBLEMS, DOMAINS = SECTIONS
INDEX = "index.html"
IMAGES = "images"
#: Slowest problems listed.
SLOWEST = 15


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _ci(g: dict[str, Any]) -> str:
    low, high = g["pass@1_ci95"]
    return f"{_pct(low)}–{_pct(high)}"


def _groups(summary: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("overall", "", summary["overall"]),
        *(("category", n, g) for n, g in summary["by_category"].items()),
        *(("difficulty", n, g) for n, g in summary["by_difficulty"].items()),
    ]


def _passk_cells(g: dict[str, Any], ks: list[int]) -> list[str]:
    cells = []
    for k in ks:
        value = g["pass@k"].get(k)
        if value is None:
            cells += ["-", "-"]
        else:
            low, high = value["ci95"]
            cells += [esc(_pct(value["rate"])), esc(f"{_pct(low)}–{_pct(high)}")]
    return cells


def _passk_heads(ks: list[int]) -> list[str]:
    return [h for k in ks for h in (f"pass@{k}", f"pass@{k} 95% CI (bootstrap)")]


def _pass_table(summary: dict[str, Any]) -> str:
    ks = summary["ks"]
    rows = [
        [esc(name or kind), esc(g["problems"]), esc(g["samples"]), esc(_pct(g["pass@1"])), esc(_ci(g)), *_passk_cells(g, ks)]
        for kind, name, g in _groups(summary)
    ]
    return table(["group", "problems", "samples", "pass@1", "pass@1 95% CI (Wilson)", *_passk_heads(ks)], rows)


def _domain_table(summary: dict[str, Any]) -> str:
    ks = summary["ks"]
    overall = summary["overall"]
    failed_all = overall["samples"] - overall["passed_samples"]
    rows = []
    for name, g in summary["by_domain"].items():
        failed = g["samples"] - g["passed_samples"]
        share = f"{failed} ({_pct(failed / failed_all)})" if failed_all else "0"
        rows.append([esc(name), esc(g["problems"]), esc(g["samples"]), esc(_pct(g["pass@1"])), esc(_ci(g)),
                     *_passk_cells(g, ks), esc(share)])
    return table(["domain", "problems", "samples", "pass@1", "pass@1 95% CI (Wilson)", *_passk_heads(ks),
                  "failed samples (share of the run's failures)"], rows)


def _consistency_table(summary: dict[str, Any]) -> str:
    rows = []
    for kind, name, g in _groups(summary):
        if kind == "difficulty":
            continue
        c = g["consistency"]
        rows.append([esc(name or kind), esc(g["problems"]), esc(c[NEVER]), esc(c[SOMETIMES]), esc(c[ALWAYS])])
    return table(["group", "problems", "never solved", "sometimes (flaky)", "always solved"], rows)


def _failure_table(summary: dict[str, Any], key: str, order: list[str]) -> str:
    rows = []
    for kind, name, g in _groups(summary):
        if kind == "difficulty":
            continue
        failed = g["samples"] - g["passed_samples"]
        cells = [esc(name or kind), esc(g["samples"]), esc(failed)]
        for label in order:
            n = g[key].get(label, 0)
            cells.append(esc(f"{n} ({_pct(n / failed)})") if n else "0")
        rows.append(cells)
    return table(["group", "samples", "failed", *order], rows)


def _slowest_table(run: RunStats, summary: dict[str, Any], pages: dict[str, Path], here: Path) -> str:
    rows = [
        [link(pages[pid], here, pid), esc(f"{most:.2f}"), esc(f"{mean:.2f}")]
        for pid, most, mean in summary["slowest"][:SLOWEST]
    ]
    return table(["problem", "slowest answer (s)", "mean (s)"], rows)


def _problem_rows(run: RunStats, number: int, out: Path, pages: dict[str, Path], transcripts: dict[str, dict[int, Path]]) -> list[list[str]]:
    rows = []
    for pid, rs in run.problems.items():
        first = rs[0]
        passed = sum(bool(r.get("passed")) for r in rs)
        verdicts = " ".join(verdict_cell(r) for r in rs)
        stages = ", ".join(sorted({failure_stage(r) or "" for r in rs} - {""})) or "-"
        links = " ".join(link(p, out, f"#{s}") for s, p in sorted(transcripts.get(pid, {}).items()))
        mean = sum(answer_seconds(r) for r in rs) / len(rs)
        rows.append([
            link(pages[pid], out, pid), esc(first.get("category")), esc(first.get("difficulty")), esc(run.domains.get(pid)), esc(len(rs)),
            esc(passed), f'<span class="l">{verdicts}</span>', esc(stages), esc(f"{mean:.2f}"), links or "-",
        ])
    return rows


def _run_section(run: RunStats, summary: dict[str, Any], number: int, out: Path) -> str:
    prefix = f"run{number}"
    figures = write_figures(summary, out / IMAGES, prefix)
    run_pages = out / prefix
    pages = {pid: run_pages / "problems" / f"{safe_name(pid)}.html" for pid in run.problems}
    transcripts: dict[str, dict[int, Path]] = {}
    for pid, rs in run.problems.items():
        for row in rs:
            source = transcript_file(run.path, row)
            if source is not None:
                target = run_pages / "transcripts" / f"{safe_name(pid)}.{row['sample']}.html"
                write_transcript_page(target, source, out / INDEX, pages[pid])
                transcripts.setdefault(pid, {})[row["sample"]] = target
        write_problem_page(pages[pid], run.path, out / INDEX, pid, rs, transcripts.get(pid, {}))

    def img(name: str, alt: str) -> str:
        return f'<p><img src="{IMAGES}/{esc(figures[name])}" alt="{esc(alt)}"></p>' if name in figures else ""

    anchor = f"run-{number}"
    classes = list(summary["overall"]["failure_classes"])
    stages = list(summary["overall"]["failure_stages"])
    meta = "".join(f"<li>{esc(k)}: {esc(v)}</li>" for k, v in run.meta.items() if v not in (None, "", []))
    warnings = "".join(f'<li class="fail">{esc(w)}</li>' for w in run.warnings)
    parts = [
        f'<h2 id="{anchor}">Run {number}: {esc(run.meta.get("source") or run.path.name)}</h2>',
        f"<p>folder {link(run.path, out, str(run.path))} · {link(run.path / RESULTS, out, RESULTS)}"
        f" · {link(run.path / 'report.md', out, 'report.md')} · {link(run.path / 'report.json', out, 'report.json')}</p>",
        f"<ul>{meta}{warnings}</ul>",
        f'<h3 id="{anchor}-pass">{PASS}</h3>',
        "<p>pass@1: the mean over problems of the share of samples that passed, with Wilson's score interval over problems "
        "(as report.json). pass@k: the unbiased estimator over the problems with at least k samples, with a percentile "
        f"bootstrap interval over problems ({BOOTSTRAP_RESAMPLES:,} resamples, seed {BOOTSTRAP_SEED}).</p>",
        _pass_table(summary), img("pass_rates", "pass@1 by category and difficulty"),
        f'<h3 id="{anchor}-domains">{DOMAINS}</h3>',
        "<p>Design domain of each problem: the first matching rule on the id's design name, else the prompt, else the "
        "target module's ports (the rules: docs/evaluating.md, Reports).</p>",
        _domain_table(summary), img("domains", "pass@1 by design domain"),
        f'<h3 id="{anchor}-consistency">{CONSISTENCY}</h3>',
        "<p>Per problem, over its samples: never passed, passed in some samples only, passed in all.</p>",
        _consistency_table(summary), img("consistency", "consistency and failure stages by category"),
        f'<h3 id="{anchor}-failures">{FAILURES}</h3>',
        "<p>Failed samples per verdict (share of the group's failed samples).</p>",
        _failure_table(summary, "failure_classes", classes),
        f'<h3 id="{anchor}-stages">{STAGES_}</h3>',
        "<p>The first grader stage recorded as failed in the row's <code>grade.stages</code> (syntax includes the lint); "
        "<i>not graded</i>: no stage ran (request or grader error, unsupported).</p>",
        _failure_table(summary, "failure_stages", stages),
        f'<h3 id="{anchor}-time">{TIME}</h3>',
    ]
    if summary["has_time"]:
        what = "episode wall time" if summary["episodes"] else "grading wall time (wall_s)"
        parts += [f"<p>Per answer: {esc(what)}.</p>", img("times", "time per answer"), _slowest_table(run, summary, pages, out)]
    else:
        parts.append('<p class="muted">The rows record no time.</p>')
    parts += [
        f'<h3 id="{anchor}-problems">{PROBLEMS}</h3>',
        table(["problem", "category", "difficulty", "domain", "samples", "passed", "verdicts", "stopped at", "mean s", "transcripts"],
              _problem_rows(run, number, out, pages, transcripts)),
    ]
    return "\n".join(parts)


def _benchmark_figures(run: RunStats, number: int) -> str:
    """The run's benchmark sections (none for a CVDP run), as report.md shows them."""
    parts = []
    for section in benchmark_reports(run.rows, run.meta).values():
        parts.append(f'<h3 id="run-{number}-{esc(safe_name(section["benchmark"] + "-" + section["task"]))}">'
                     f"Run {number}: {esc(section['title'])}, the benchmark's own report</h3>")
        for title, columns, rows in section_tables(section):
            parts += [f"<h4>{esc(title)}</h4>", table(columns, [[esc(c) for c in cells] for cells in rows])]
        parts.append('<ul class="muted">' + "".join(f"<li>{esc(note)}</li>" for note in section_notes(section)) + "</ul>")
    return "\n".join(parts)


def write_html_report(run_dirs: list[str | Path], out: str | Path) -> Path:
    """Write ``index.html``, ``images/`` and the detail pages for ``run_dirs`` into ``out``;
    the index's path. A run folder that cannot be read is a ``RunDirError`` before anything is written."""
    runs = [load_run(path) for path in run_dirs]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summaries = [summarize(run) for run in runs]
    overview = []
    for number, (run, summary) in enumerate(zip(runs, summaries, strict=True), 1):
        overall = summary["overall"]
        low, high = overall["pass@1_ci95"]
        overview.append([f'<a href="#run-{number}">{number}</a>', f'<span class="l">{esc(run.meta.get("source") or "")}</span>',
                         esc(run.path), esc(overall["problems"]), esc(len(run.rows)),
                         esc(f"{_pct(overall['pass@1'])} [{_pct(low)}, {_pct(high)}]")])
    sections = [_run_section(run, summary, number, out) for number, (run, summary) in enumerate(zip(runs, summaries, strict=True), 1)]
    body = [
        "<h1>cvdp-gym evaluation report</h1>",
        f'<p class="muted">written {esc(time.strftime("%Y-%m-%d %H:%M:%S"))}; static page, no scripts</p>',
        table(["run", "source", "folder", "problems", "samples", "pass@1 [95% CI]"], overview),
        *(_benchmark_figures(run, number) for number, run in enumerate(runs, 1)),
        *sections,
    ]
    index = out / INDEX
    index.write_text(page("cvdp-gym evaluation report", "\n".join(body)), encoding="utf-8")
    return index
