"""The benchmark sections of the report (:mod:`cvdp_gym.eval.benchmark_reports`) as tables of text cells.

Contract: :func:`section_tables` gives one section's tables as ``(title, columns, rows)`` of plain
text and :func:`section_notes` its notes (the published figures' settings and sources among them,
as numbered references). report.md, the terminal and the HTML report all render these two, so
the three show the same figures with the same labels.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

__all__ = ["Table", "format_cell", "markdown_lines", "print_sections", "section_notes", "section_tables"]

Table = tuple[str, list[str], list[list[str]]]
Section = dict[str, Any]


def format_cell(cell: dict[str, Any] | None) -> str:
    """``66.33% [52.1–78.0] (÷156)``: the value, its 95% interval if any, and what it was divided by."""
    if not cell or cell.get("value") is None:
        return "-"
    text = f"{cell['value']:.2f}%"
    if cell.get("ci95"):
        low, high = cell["ci95"]
        text += f" [{low:.1f}–{high:.1f}]"
    return f"{text} (÷{cell['of']})"


def _references(section: Section) -> dict[tuple[str, str, str], int]:
    """A number per distinct (settings, source title, where) of the published entries, in order of first use."""
    refs: dict[tuple[str, str, str], int] = {}
    for entry in section.get("published", []):
        refs.setdefault(_ref_key(entry), len(refs) + 1)
    return refs


def _ref_key(entry: dict[str, Any]) -> tuple[str, str, str]:
    return (entry["settings"], entry["source"]["title"], entry["source"]["where"])


def _source(source: dict[str, Any]) -> str:
    where = [f"arXiv {source['arxiv']}" if source.get("arxiv") else "", source.get("url") or ""]
    return f"{source['title']} ({', '.join(w for w in where if w)}), {source['where']}"


def section_tables(section: Section) -> list[Table]:
    """The figures, the class histogram (VerilogEval v2), the published pass@1 beside this run's,
    the defect problems and the samples passed only by the official rule (printed pass words,
    or a reach outside the answer's design)."""
    title = section["title"]
    tables: list[Table] = [(
        f"{title}: the benchmark's own figures",
        ["figure", *(c["label"] for c in section["columns"])],
        [[f["name"], *(format_cell(f["cells"].get(c["key"])) for c in section["columns"])] for f in section["figures"]],
    )]
    if section.get("classes"):
        tables.append((f"{title}: sv-iv-analyze classes (samples)", ["class", "meaning", "official", "ours"],
                       [[c["class"], c["label"], str(c["official"]), str(c["ours"])] for c in section["classes"]]))
    refs = _references(section)
    compared = [[h["label"], "-" if h["value"] is None else f"{h['value']:.1f}", "this run"] for h in section["headline"]]
    compared += [[e["model"], f"{e['value']:g}", f"[{refs[_ref_key(e)]}]"] for e in section.get("published", [])]
    tables.append((f"{title}: pass@1 (%), this run and published", ["model", "pass@1 (%)", "settings and source"], compared))
    if section["defects"]:
        tables.append((f"{title}: problems with a known benchmark defect", ["problem", "defect", "samples", "official passes", "our passes"],
                       [[d["name"], d["defect"], str(d["samples"]), str(d["official_passed"]), str(d["passed"])] for d in section["defects"]]))
    if section["forged"]:
        tables.append((f"{title}: passed only by the official rule (the answer printed the pass words itself)", ["problem", "sample"],
                       [[f["id"], str(f["sample"])] for f in section["forged"]]))
    if section.get("reach_in"):
        tables.append((f"{title}: passed only by the official rule (the answer reached outside its own design)",
                       ["problem", "sample", "what it reached"],
                       [[f["id"], str(f["sample"]), f["reason"]] for f in section["reach_in"]]))
    return tables


def section_notes(section: Section) -> list[str]:
    """The section's notes, then one line per published reference: its settings and where it was read."""
    notes = [
        f"official: {section['problems']} problem(s), {section['samples']} sample(s); "
        f"ours: {section['problems_ours']} problem(s) (those with a known defect left out).",
        *section["notes"],
    ]
    refs = _references(section)
    examples = {key: entry for entry in section.get("published", []) for key in [_ref_key(entry)]}
    for key, number in refs.items():
        notes.append(f"[{number}] {key[0]}. Source: {_source(examples[key]['source'])}.")
    return notes


def _md(text: str) -> str:
    """Text for a Markdown table cell or list item: pipes, tags and line breaks made literal."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def markdown_lines(sections: dict[str, Section]) -> list[str]:
    """report.md's benchmark sections."""
    lines: list[str] = []
    for section in sections.values():
        lines += ["", f"## {section['title']}: the benchmark's own report", ""]
        for title, columns, rows in section_tables(section):
            lines += [f"### {title}", "", "| " + " | ".join(map(_md, columns)) + " |", "|" + "---|" * len(columns)]
            lines += ["| " + " | ".join(map(_md, cells)) + " |" for cells in rows]
            lines.append("")
        lines += [f"- {_md(note)}" for note in section_notes(section)]
    return lines


def print_sections(sections: dict[str, Section], console: Console) -> None:
    """The benchmark sections as rich tables, each followed by its notes."""
    for section in sections.values():
        for title, columns, rows in section_tables(section):
            table = RichTable(title=title)
            for i, column in enumerate(columns):
                table.add_column(escape(column), justify="left" if i == 0 else "right", overflow="fold")
            for cells in rows:
                table.add_row(*(escape(c) for c in cells))
            console.print(table)
        for note in section_notes(section):
            console.print(note, style="dim", markup=False, highlight=False)

