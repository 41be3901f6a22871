"""What a decontamination run leaves behind: a histogram, a Markdown report, a filtered file.

- ``text_histogram`` / ``histogram_png``: the nearest-neighbour specification ROUGE-L of
  every training item (the PNG only where matplotlib is installed);
- ``markdown_report``: the settings, the counts, the histogram, the flagged items and the
  worst pairs side by side (specification and code excerpts of both);
- ``write_filtered``: the training file without its flagged items, in its own format where
  the items were read from JSONL lines (their ``source`` says which), else a JSONL of the
  kept ids.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path

from cvdp_gym.data import Problem
from cvdp_gym.decontaminate.search import ItemResult, Thresholds
from cvdp_gym.decontaminate.texts import reference_code, specification

BINS = 10
EXCERPT_CHARS = 700


def bin_counts(values: Sequence[float], bins: int = BINS) -> list[int]:
    """How many values fall in each of ``bins`` equal bins of [0, 1] (1.0 in the last)."""
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, max(0, int(value * bins)))] += 1
    return counts


def text_histogram(values: Sequence[float], threshold: float | None = None, *, bins: int = BINS, width: int = 40) -> str:
    """A fixed-width histogram, one line per bin: range, bar, count (``>`` marks the bins
    above ``threshold``)."""
    counts = bin_counts(values, bins)
    top = max(counts) or 1
    lines = []
    for i, count in enumerate(counts):
        low, high = i / bins, (i + 1) / bins
        mark = ">" if threshold is not None and low >= threshold else " "
        bar = "#" * (round(width * count / top) if count else 0)
        lines.append(f"{mark} {low:.1f}-{high:.1f} | {bar:<{width}} {count}")
    return "\n".join(lines)


def histogram_png(values: Sequence[float], path: Path, threshold: float | None = None) -> bool:
    """Write the histogram as a PNG; False (nothing written) where matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, axes = plt.subplots(figsize=(7, 3.5))
    axes.hist(list(values), bins=[i / BINS for i in range(BINS + 1)], color="#4c72b0", edgecolor="white")
    if threshold is not None and threshold < 1.0:
        axes.axvline(threshold, color="#c44e52", linestyle="--", label=f"threshold {threshold:g}")
        axes.legend()
    axes.set_xlabel("ROUGE-L of the specification with its nearest evaluation problem")
    axes.set_ylabel("training items")
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.set_xlim(0, 1)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def _cell(text: str) -> str:
    """Text as one Markdown table cell: escaped, line breaks as <br>, cut to an excerpt."""
    excerpt = text.strip()
    if len(excerpt) > EXCERPT_CHARS:
        excerpt = excerpt[:EXCERPT_CHARS] + " …"
    return html.escape(excerpt, quote=False).replace("|", "&#124;").replace("\n", "<br>") or "(none)"


def score_text(value: float | None) -> str:
    """A score as printed: three decimals, or a dash where there is none."""
    return "–" if value is None else f"{value:.3f}"


def worst_pairs(results: Sequence[ItemResult], count: int) -> list[ItemResult]:
    """The ``count`` items closest to an evaluation problem (flagged or not), closest first."""
    with_match = [r for r in results if r.nearest]
    return sorted(with_match, key=lambda r: r.nearest[0].closeness, reverse=True)[:count]


def markdown_report(
    results: Sequence[ItemResult],
    training: dict[str, Problem],
    evaluation: dict[str, Problem],
    thresholds: Thresholds,
    *,
    title: str,
    worst: int = 10,
    png: str | None = None,
) -> str:
    """The report: settings, counts, histogram, flagged items, the ``worst`` pairs side by side."""
    flagged = [r for r in results if r.flagged]
    lines = [
        f"# Decontamination: {title}", "",
        f"- training items: {len(results)}; flagged: {len(flagged)}; kept: {len(results) - len(flagged)}",
        f"- evaluation problems: {len(evaluation)} ({', '.join(sorted({p.benchmark for p in evaluation.values()}))})",
        f"- flagged when: {thresholds.describe()}",
        "- normalisation: specifications lower-cased, punctuation deleted, whitespace words; code with "
        "Verilog comments removed, lower-cased, words and single symbols",
        "", "## Nearest-neighbour specification ROUGE-L", "",
    ]
    if png:
        lines += [f"![histogram]({png})", ""]
    values = [r.nearest_spec_rouge_l for r in results]
    lines += ["```text", text_histogram(values, thresholds.spec_rouge_l if thresholds.spec_rouge_l < 1 else None), "```", ""]
    lines += [f"## Flagged items ({len(flagged)})", ""]
    if flagged:
        lines += ["| training item | nearest evaluation problem | spec ROUGE-L | code ROUGE-L | spec n-gram | code n-gram | why |",
                  "|---|---|---|---|---|---|---|"]
        for result in flagged:
            match = result.nearest[0]
            lines.append(f"| {_cell(result.training_id)} | {_cell(match.evaluation_id)} | {score_text(match.spec_rouge_l)} | "
                         f"{score_text(match.code_rouge_l)} | {score_text(match.spec_ngram_overlap)} | "
                         f"{score_text(match.code_ngram_overlap)} | {_cell('; '.join(result.reasons))} |")
    else:
        lines.append("None.")
    lines += ["", f"## The {worst} closest pairs, side by side", ""]
    for result in worst_pairs(results, worst):
        match = result.nearest[0]
        item, problem = training[result.training_id], evaluation[match.evaluation_id]
        verdict = "flagged" if result.flagged else "kept"
        lines += [
            f"### {_cell(result.training_id)} ↔ {_cell(match.evaluation_id)} ({verdict})", "",
            f"specification ROUGE-L {score_text(match.spec_rouge_l)}, code ROUGE-L {score_text(match.code_rouge_l)}, "
            f"{thresholds.ngram}-gram overlap {score_text(match.spec_ngram_overlap)} / {score_text(match.code_ngram_overlap)}", "",
            "| | training item | evaluation problem |", "|---|---|---|",
            f"| specification | {_cell(specification(item))} | {_cell(specification(problem))} |",
            f"| code | {_cell(reference_code(item))} | {_cell(reference_code(problem))} |", "",
        ]
    return "\n".join(lines) + "\n"


def _source_lines(training: dict[str, Problem]) -> dict[Path, set[int]] | None:
    """The JSONL file and line each training item was read from, by file (the loaders' own
    ``source``: ``path:line``), or None where some item came from anything else."""
    lines: dict[Path, set[int]] = {}
    for problem in training.values():
        path, _, line = problem.source.rpartition(":")
        if not (path.endswith(".jsonl") and line.isdigit() and Path(path).is_file()):
            return None
        lines.setdefault(Path(path), set()).add(int(line))
    return lines


def write_filtered(results: Sequence[ItemResult], training: dict[str, Problem], out_dir: Path) -> list[Path]:
    """The training set less its flagged items: ``<name>.clean.jsonl`` per JSONL file the
    items were read from (that file's own lines, less the flagged items' lines), else
    ``kept_ids.jsonl`` (one ``{"id": ...}`` per kept item)."""
    sources = _source_lines(training)
    if sources is not None and len({path.stem for path in sources}) == len(sources):
        dropped: dict[Path, set[int]] = {path: set() for path in sources}
        for result in results:
            if result.flagged:
                path, _, line = training[result.training_id].source.rpartition(":")
                dropped[Path(path)].add(int(line))
        written = []
        for path, lines in dropped.items():
            target = out_dir / f"{path.stem}.clean.jsonl"
            with path.open("rb") as source:
                target.write_bytes(b"".join(raw for number, raw in enumerate(source, 1) if number not in lines))
            written.append(target)
        return written
    target = out_dir / "kept_ids.jsonl"
    with target.open("w", encoding="utf-8") as handle:
        for result in results:
            if not result.flagged:
                handle.write(json.dumps({"id": result.training_id}) + "\n")
    return [target]
