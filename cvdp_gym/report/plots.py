"""The report's figures: PNGs drawn with matplotlib's Agg backend on an opaque white face.

Every figure has an explicit white background (``facecolor="white"``, never transparent) and
dark text, so it reads the same on a light or a dark page. Colours come from the
colour-blind-safe tab10 cycle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cvdp_gym.report.stats import ALWAYS, NEVER, SOMETIMES

__all__ = ["write_figures"]

_STYLE = {
    "figure.facecolor": "white", "axes.facecolor": "white", "savefig.facecolor": "white",
    "text.color": "#222222", "axes.labelcolor": "#222222", "xtick.color": "#222222", "ytick.color": "#222222",
    "axes.edgecolor": "#444444", "axes.grid": True, "axes.axisbelow": True, "grid.color": "#dddddd", "font.size": 9,
}
DPI = 90


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, facecolor="white", transparent=False)
    plt.close(fig)


def _pass_rates(ax: Any, groups: dict[str, dict[str, Any]], title: str) -> None:
    names = list(groups)
    rates = [100 * groups[n]["pass@1"] for n in names]
    low = [r - 100 * groups[n]["pass@1_ci95"][0] for r, n in zip(rates, names, strict=True)]
    high = [100 * groups[n]["pass@1_ci95"][1] - r for r, n in zip(rates, names, strict=True)]
    ax.bar(names, rates, color="tab:blue", yerr=[low, high], capsize=3, ecolor="#333333")
    ax.set_title(f"pass@1 by {title} (95% Wilson interval)")
    ax.set_ylabel("pass@1 (%)")
    ax.set_ylim(0, 100)
    ax.tick_params(axis="x", rotation=30)


def _stacked(ax: Any, groups: dict[str, dict[str, Any]], key: str, order: list[str], colors: dict[str, str] | None, title: str, ylabel: str) -> None:
    names = list(groups)
    bottom = [0] * len(names)
    for label in order:
        counts = [groups[n][key].get(label, 0) for n in names]
        if not any(counts):
            continue
        ax.bar(names, counts, bottom=bottom, label=label, color=(colors or {}).get(label))
        bottom = [b + c for b, c in zip(bottom, counts, strict=True)]
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.tick_params(axis="x", rotation=30)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small", facecolor="white", labelcolor="#222222")


def write_figures(summary: dict[str, Any], images: Path, prefix: str) -> dict[str, str]:
    """Draw the run's figures into ``images``; their file names by figure."""
    plt = _pyplot()
    images.mkdir(parents=True, exist_ok=True)
    out: dict[str, str] = {}
    with plt.rc_context(_STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
        _pass_rates(axes[0], summary["by_category"], "category")
        _pass_rates(axes[1], summary["by_difficulty"], "difficulty")
        out["pass_rates"] = f"{prefix}-pass-rates.png"
        _save(plt, fig, images / out["pass_rates"])

        if summary.get("by_domain"):
            fig, ax = plt.subplots(figsize=(11, 3.8))
            _pass_rates(ax, summary["by_domain"], "design domain")
            out["domains"] = f"{prefix}-domains.png"
            _save(plt, fig, images / out["domains"])

        fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
        _stacked(axes[0], summary["by_category"], "consistency", [ALWAYS, SOMETIMES, NEVER],
                 {ALWAYS: "tab:green", SOMETIMES: "tab:orange", NEVER: "tab:red"},
                 "problems solved never / sometimes / always", "problems")
        stages = list(dict.fromkeys(s for g in summary["by_category"].values() for s in g["failure_stages"]))
        _stacked(axes[1], summary["by_category"], "failure_stages", stages, None, "stage each failure stopped at", "failed samples")
        out["consistency"] = f"{prefix}-consistency-stages.png"
        _save(plt, fig, images / out["consistency"])

        if summary["has_time"]:
            fig, ax = plt.subplots(figsize=(11, 3.2))
            ax.hist(summary["times"], bins=min(50, max(5, len(summary["times"]) // 10)), color="tab:purple")
            ax.set_title("time per answer")
            ax.set_xlabel("seconds")
            ax.set_ylabel("answers")
            out["times"] = f"{prefix}-times.png"
            _save(plt, fig, images / out["times"])
    return out
