"""Draw runs' metrics (``metrics.jsonl``) as a PNG: one panel per metric, one line per run; or
groups of runs (seeds) as mean lines in min–max bands."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rtl_trainer.errors import ConfigError
from rtl_trainer.loop.runlog import RunLog

DEFAULT_METRICS = ("env/all/pass_rate", "env/all/reward/total", "teacher_kl", "entropy")


def plot_runs(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    title: str | None = None,
) -> Path:
    """Plot ``metrics`` against step for each run; metrics no run logged are skipped."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {Path(d).name: RunLog(d).metrics() for d in run_dirs}
    shown = [m for m in metrics if any(m in row for rows in runs.values() for row in rows)]
    if not shown:
        raise ConfigError(f"none of {', '.join(metrics)} is in {', '.join(str(d) for d in run_dirs)}")
    fig, axes = plt.subplots(1, len(shown), figsize=(4.5 * len(shown), 3.6), squeeze=False)
    for ax, metric in zip(axes[0], shown, strict=True):
        for name, rows in runs.items():
            points = [(row["step"], row[metric]) for row in rows if metric in row]
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, marker="o", markersize=3, label=name)
        ax.set_title(metric)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return save_figure(fig, out, title)


def plot_bands(
    curves: Mapping[str, Mapping[str, Sequence[float]]],
    out: str | Path,
    *,
    y: str,
    xs: Sequence[tuple[str, str]],
    finals: Mapping[str, Sequence[float]] | None = None,
    references: Mapping[str, float] | None = None,
    y_label: str | None = None,
    ylim: tuple[float, float] | None = None,
    title: str | None = None,
) -> Path:
    """Groups of runs (seeds) as a mean line in a min–max band: one panel per x axis
    (``xs``: a curve key and its label; ``y`` names ``{y}_mean``, ``{y}_min``, ``{y}_max``);
    then, with ``finals``, a panel of each group's final values (a dot per run, the mean
    ± sample std as a bar) with ``references`` as horizontal lines."""
    import statistics

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys([*curves, *(finals or {})]))
    color = {name: f"C{i}" for i, name in enumerate(names)}
    panels = len(xs) + (1 if finals else 0)
    fig, axes = plt.subplots(1, panels, figsize=(5.0 * panels, 3.8), squeeze=False)
    for ax, (key, label) in zip(axes[0], xs, strict=False):
        for name, curve in curves.items():
            if not curve.get(key):
                continue
            ax.plot(curve[key], curve[f"{y}_mean"], marker="o", markersize=3, color=color[name], label=f"{name} (mean)")
            ax.fill_between(curve[key], curve[f"{y}_min"], curve[f"{y}_max"], color=color[name], alpha=0.2,
                            label=f"{name} (min–max)")
        ax.set_xlabel(label)
        ax.xaxis.set_major_formatter(_thousands)
        ax.set_ylabel(y_label or y)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if finals:
        ax = axes[0][-1]
        for i, (name, values) in enumerate(finals.items()):
            ax.scatter([i] * len(values), values, color=color[name], alpha=0.6, zorder=3)
            std = statistics.stdev(values) if len(values) > 1 else 0.0
            ax.errorbar([i], [statistics.fmean(values)], yerr=[std], fmt="_", markersize=20, capsize=6, color="black",
                        zorder=4)
        for j, (name, value) in enumerate((references or {}).items()):
            ax.axhline(value, linestyle="--", color=f"C{len(names) + j}", label=name)
        ax.set_xticks(range(len(finals)), list(finals))
        ax.set_title("final values (dots: runs; bar: mean ± std)", fontsize=10)
        ax.grid(alpha=0.3, axis="y")
        if references:
            ax.legend(fontsize=8)
    if ylim:
        for ax in axes[0]:
            ax.set_ylim(*ylim)
    return save_figure(fig, out, title, fontsize=10)


def save_figure(fig: Any, out: str | Path, title: str | None = None, *, fontsize: float | None = None) -> Path:
    """Title, lay out and write ``fig`` to ``out`` (its folder created), then free it."""
    import matplotlib.pyplot as plt

    if title:
        fig.suptitle(title, fontsize=fontsize)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _thousands(value: float, _position: int) -> str:
    """Axis ticks of token counts: ``350k`` rather than ``350000``."""
    return f"{value / 1e3:g}k" if abs(value) >= 1e3 else f"{value:g}"
