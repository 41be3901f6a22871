"""The report's detail pages: one per problem (its answers, verdicts, logs) and one per
episode transcript (turns, tool calls and outputs, final diff, grade).

Every string from a run is escaped (``html.escape``); links are relative, to files that
exist when the page is written; long texts are folded in ``<details>``.
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cvdp_gym.eval.run import RESULTS
from cvdp_gym.report.stats import answer_seconds, failure_stage

__all__ = [
    "STYLE", "block", "esc", "link", "page", "rel", "safe_name", "table", "transcript_file", "verdict_cell",
    "write_problem_page", "write_transcript_page",
]

Row = dict[str, Any]
#: Texts longer than this (characters or lines) are folded.
FOLD_CHARS, FOLD_LINES = 1500, 25
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")

STYLE = """
:root { color-scheme: light dark; --fg: #1d1d1f; --bg: #ffffff; --muted: #666; --line: #d0d0d0; --code: #f4f4f4; --pass: #1a7f37; --fail: #c62828; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e6e6; --bg: #161618; --muted: #a0a0a0; --line: #3a3a3a; --code: #222226; --pass: #56d364; --fail: #ff7b72; } }
body { font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 1.5em auto; max-width: 1200px; padding: 0 1em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 3px 7px; text-align: right; vertical-align: top; }
th:first-child, td:first-child, td.l { text-align: left; }
pre { background: var(--code); padding: .6em; overflow-x: auto; white-space: pre-wrap; word-break: break-word; font-size: 12px; }
img { max-width: 100%; border: 1px solid var(--line); background: #fff; }
.pass { color: var(--pass); } .fail { color: var(--fail); } .muted { color: var(--muted); }
a { color: #2f6fd0; } @media (prefers-color-scheme: dark) { a { color: #79b8ff; } }
details { margin: .3em 0; } summary { cursor: pointer; }
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def safe_name(name: str) -> str:
    return _UNSAFE.sub("_", name)


def rel(target: Path, page_dir: Path) -> str:
    """A relative, URL-quoted link from a page in ``page_dir`` to ``target``."""
    return quote(os.path.relpath(Path(target).resolve(), Path(page_dir).resolve()).replace(os.sep, "/"))


def link(target: Path, page_dir: Path, label: str, *, written: bool = False) -> str:
    """``<a>`` to ``target`` when it exists (or is a page this report writes: ``written``), else the label alone."""
    if not written and not Path(target).exists():
        return esc(label)
    return f'<a href="{esc(rel(target, page_dir))}">{esc(label)}</a>'


def page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def table(columns: list[str], rows: list[list[str]]) -> str:
    """A table of already escaped cells."""
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>\n" for cells in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False)


def block(label: str, value: Any, *, open_short: bool = True) -> str:
    """A ``<pre>`` of ``value``, folded in ``<details>`` when long (or always, if not ``open_short``)."""
    text = _text(value)
    if not text:
        return f'<p class="muted">{esc(label)}: (empty)</p>'
    long = len(text) > FOLD_CHARS or text.count("\n") > FOLD_LINES
    if long or not open_short:
        size = f"{len(text):,} characters, {text.count(chr(10)) + 1} lines"
        return f"<details><summary>{esc(label)} ({size})</summary><pre>{esc(text)}</pre></details>"
    return f"<p><b>{esc(label)}</b></p><pre>{esc(text)}</pre>"


def verdict_cell(row: Row) -> str:
    verdict = esc(row.get("verdict"))
    return f'<span class="pass">{verdict}</span>' if row.get("passed") else f'<span class="fail">{verdict}</span>'


def transcript_file(run_dir: Path, row: Row) -> Path | None:
    """The transcript JSON a row names, when it exists inside the run folder."""
    name = row.get("transcript")
    if not isinstance(name, str) or not name:
        return None
    path = (run_dir / name).resolve()
    return path if path.is_file() and run_dir.resolve() in path.parents else None


def _stages(grade: dict[str, Any]) -> str:
    rows = [
        [esc(s.get("name")), "-" if s.get("passed") is None else ("ok" if s["passed"] else "failed"),
         f'<span class="l">{esc(str(s.get("detail") or "")[:300])}</span>', f"{float(s.get('seconds') or 0):.2f}"]
        for s in grade.get("stages") or []
    ]
    return table(["stage", "result", "detail", "s"], rows) if rows else ""


def write_problem_page(path: Path, run_dir: Path, index: Path, pid: str, rows: list[Row], transcript_pages: dict[int, Path]) -> None:
    """A problem's page: every sample's verdict, stage, reason, time, answer and log."""
    here = path.parent
    parts = [
        f"<p>{link(index, here, '← report', written=True)} · run folder {link(run_dir, here, str(run_dir))} · "
        f"{link(run_dir / RESULTS, here, RESULTS)}</p>",
        f"<h1>{esc(pid)}</h1>",
        f"<p>category {esc(rows[0].get('category'))}, difficulty {esc(rows[0].get('difficulty'))}, "
        f"{sum(bool(r.get('passed')) for r in rows)} of {len(rows)} sample(s) passed</p>",
    ]
    for row in rows:
        sample = row["sample"]
        links = []
        if sample in transcript_pages:
            links.append(link(transcript_pages[sample], here, "transcript", written=True))
        raw = transcript_file(run_dir, row)
        if raw is not None:
            links.append(link(raw, here, "transcript JSON"))
        grade = row.get("grade") or {}
        parts += [
            f'<h2 id="s{sample}">sample {sample}: {verdict_cell(row)}</h2>',
            f"<p>stopped at: {esc(failure_stage(row) or '-')} · tests {esc(row.get('tests_passed'))}/{esc(row.get('tests_total'))}"
            f" · reward {esc(row.get('reward'))} · {answer_seconds(row):.2f} s {' · '.join(['', *links]) if links else ''}</p>",
            f"<p>reason: {esc(row.get('reason') or '-')}</p>",
            _stages(grade),
            block("answer", row.get("response") or "", open_short=False),
        ]
        if grade.get("log_tail"):
            parts.append(block("log tail", grade["log_tail"], open_short=False))
        if grade.get("failures"):
            parts.append(block("failing tests", grade["failures"], open_short=False))
    _write(path, pid, parts)


def _step(step: dict[str, Any]) -> str:
    """One turn of an agentic episode or one attempt of a refine episode."""
    if "attempt" in step:
        title = f"attempt {step['attempt']}: " + ("passed" if step.get("passed") else esc(step.get("failure_class") or "failed"))
    else:
        title = f"turn {esc(step.get('turn'))}"
    assistant = step.get("assistant") or {}
    parts = [f"<h3>{title}</h3>"]
    if step.get("reasoning"):
        parts.append(block("reasoning", step["reasoning"], open_short=False))
    content = assistant.get("content") if isinstance(assistant, dict) else assistant
    parts.append(block("assistant", content or ""))
    for call in step.get("tool_calls") or []:
        parts.append(block("tool call", call))
    for output in step.get("outputs") or []:
        parts.append(block("tool output", output.get("content") if isinstance(output, dict) else output))
    if step.get("reason"):
        parts.append(f"<p>reason: {esc(step['reason'])}</p>")
    if step.get("feedback"):
        parts.append(block("feedback", step["feedback"]))
    timing = [f"{k} {step[k]} s" for k in ("request_s", "step_s") if step.get(k) is not None]
    if timing:
        parts.append(f'<p class="muted">{esc(", ".join(timing))}</p>')
    return "\n".join(parts)


def write_transcript_page(path: Path, source: Path, index: Path, problem_page: Path) -> None:
    """An episode's page from its transcript JSON: turns, calls, outputs, final diff, grade."""
    here = path.parent
    try:
        record = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        record = {"error": f"cannot read {source.name}: {exc}"}
    if not isinstance(record, dict):
        record = {"error": f"{source.name}: not a transcript object"}
    title = f"{record.get('id', source.stem)} sample {record.get('sample', '?')}"
    facts = [
        (k, record.get(k)) for k in (
            "verdict", "reward", "reason", "end_reason", "model", "tool_mode", "turns", "tool_calls", "malformed_calls",
            "commands_run", "attempts", "passed_at_attempt", "max_attempts", "feedback", "episode_s", "error",
        ) if record.get(k) not in (None, "")
    ]
    parts = [
        f"<p>{link(index, here, '← report', written=True)} · {link(problem_page, here, 'problem page', written=True)} · {link(source, here, 'transcript JSON')}</p>",
        f"<h1>{esc(title)}</h1>",
        table(["field", "value"], [[esc(k), f'<span class="l">{esc(_text(v))}</span>'] for k, v in facts]),
        "<h2>Turns</h2>",
        *(_step(s) for s in record.get("steps") or [] if isinstance(s, dict)),
        "<h2>Final diff</h2>",
        block("final diff", record.get("final_diff") or record.get("patch") or record.get("final_answer") or ""),
        "<h2>Grade</h2>",
        _stages(record.get("grade") or {}),
    ]
    grade = record.get("grade") or {}
    if grade.get("log_tail"):
        parts.append(block("log tail", grade["log_tail"], open_short=False))
    if record.get("messages"):
        parts.append(block("all messages (as sent)", record["messages"], open_short=False))
    _write(path, title, parts)


def _write(path: Path, title: str, parts: list[str]) -> None:
    """One page of the report, its folder created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page(title, "\n".join(parts)), encoding="utf-8")
