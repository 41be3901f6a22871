"""Published benchmark figures, to print beside a run's own: each benchmark plug-in's own
``published.json`` (``cvdp_gym/benchmarks/<name>/published.json``; a third party's package the
same way, :mod:`cvdp_gym.plugins`), read here and nowhere else.

Contract: :func:`published` returns the entries for one benchmark, task and metric, each a dict
``{benchmark, task, model, metric, value, settings, source, ...}`` with ``value`` a percentage as
published, ``settings`` the text that says how the figure was produced (samples, temperature,
prompt, simulator, denominator) and ``source`` ``{title, arxiv, url, where, ...}`` saying where it
was read. A file stores each settings text and source once, by key; they are resolved here, and
each whole file is checked on first load (a malformed entry is a ``ConfigError`` naming it), so a
figure is never shown without what it means and where it came from. A plug-in that publishes no
figures has no file.
"""

from __future__ import annotations

import json
import re
import warnings
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from cvdp_gym.data.benchmarks.catalog import BENCHMARKS
from cvdp_gym.errors import ConfigError
from cvdp_gym.plugins import BUILT_IN, packages

__all__ = ["PUBLISHED_FILE", "known_tasks", "published", "published_files"]

#: The file a benchmark plug-in's package holds its published figures in.
PUBLISHED_FILE = "published.json"
_METRIC = re.compile(r"^pass@[1-9]\d*$")


@cache
def known_tasks() -> dict[str, tuple[str, ...]]:
    """The benchmarks an entry may name (``Problem.benchmark``), with their tasks (the training
    sets publish no figures)."""
    return {b.name: tuple(b.tasks) or ("",) for b in BENCHMARKS.values() if b.publishes_figures}


@cache
def published_files() -> dict[str, Traversable]:
    """Each benchmark plug-in's ``published.json``, by package, for those that have one."""
    found = {}
    for package in packages():
        try:
            candidate = files(package) / PUBLISHED_FILE
        except Exception as exc:  # a third party's package that cannot be imported publishes nothing here
            if package in BUILT_IN:
                raise
            warnings.warn(f"benchmark plug-in {package}: cannot read its {PUBLISHED_FILE}: {exc}", stacklevel=2)
            continue
        if candidate.is_file():
            found[package] = candidate
    return found


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check(entry: Any, settings: dict[str, Any], sources: dict[str, Any], where: str) -> dict[str, Any]:
    """The entry with its settings and source resolved; ``ConfigError`` naming what is wrong."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: not an object")
    problems = []
    if entry.get("task") not in known_tasks().get(entry.get("benchmark"), ()):
        problems.append(f"benchmark/task {entry.get('benchmark')!r}/{entry.get('task')!r}")
    if not _text(entry.get("model")):
        problems.append("model")
    if not isinstance(entry.get("metric"), str) or not _METRIC.match(entry["metric"]):
        problems.append("metric")
    value = entry.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        problems.append("value (a percentage)")
    setting, source = settings.get(entry.get("settings")), sources.get(entry.get("source"))
    if not _text(setting):
        problems.append("settings")
    if not isinstance(source, dict) or not _text(source.get("title")) or not _text(source.get("where")) or not (
        _text(source.get("arxiv")) or _text(source.get("url"))
    ):
        problems.append("source (title, where, arxiv or url)")
    if problems:
        raise ConfigError(f"{where}: bad {', '.join(problems)}")
    return {**entry, "settings": setting, "source": dict(source)}


@cache
def _entries(path: Traversable) -> tuple[dict[str, Any], ...]:
    """Every entry of the file, checked and resolved (read once)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the published figures: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise ConfigError(f"{path}: no entries list")
    settings, sources = doc.get("settings") or {}, doc.get("sources") or {}
    return tuple(_check(e, settings, sources, f"{path}: entry {i}") for i, e in enumerate(doc["entries"]))


def published(benchmark: str, task: str = "", metric: str = "pass@1", *, path: Path | None = None) -> list[dict[str, Any]]:
    """The published entries for ``benchmark``/``task`` and ``metric`` (copies, highest value first),
    from every plug-in's file (``path``: that file only)."""
    entries = [e for f in ((path,) if path else published_files().values()) for e in _entries(f)]
    found = [e for e in entries if (e["benchmark"], e["task"], e["metric"]) == (benchmark, task or "", metric)]
    return [{**e, "source": dict(e["source"])} for e in sorted(found, key=lambda e: (-e["value"], e["model"]))]
