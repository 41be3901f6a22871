"""What the adapters share: one grader and one parsed dataset per process, answer text.

Each library creates many short-lived environments (one per rollout); building a grader
(toolchain detection, cache) or parsing a dataset for each would dominate a rollout's cost,
so they are made once per distinct set of options and shared (``Grader`` is thread-safe).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from typing import Any

from cvdp_gym.data import Dataset, load_dataset
from cvdp_gym.errors import ConfigError
from cvdp_gym.grading import Grader
from cvdp_gym.grading.settings import GraderSettings


def shared_grader(settings: GraderSettings | None = None, **fields: Any) -> Grader:
    """One ``Grader`` per distinct settings in this process: ``settings`` (None: the defaults)
    with ``fields`` set on them, of plain values (names, numbers, ``QualitySettings``: they are
    the key)."""
    return _grader(dataclasses.replace(settings or GraderSettings(), **fields))


@functools.lru_cache(maxsize=8)
def _grader(settings: GraderSettings) -> Grader:
    return Grader.from_settings(settings)


@functools.lru_cache(maxsize=8)
def _load(
    dataset: str,
    ids: tuple[str, ...] | None,
    categories: tuple[str, ...] | None,
    difficulty: tuple[str, ...] | None,
    agentic: bool,
) -> Dataset:
    loaded = load_dataset(dataset, ids=ids, categories=categories, difficulty=difficulty)
    problems = [p for p in loaded.problems if p.agentic == agentic]
    if not problems:
        kind = "agentic" if agentic else "non-agentic"
        raise ConfigError(f"no {kind} problems in {dataset!r} with these filters")
    return Dataset(problems, loaded.skipped, loaded.source)


def problems(
    dataset: str = "bundled",
    *,
    agentic: bool,
    ids: Iterable[str] | None = None,
    categories: Iterable[str] | None = None,
    difficulty: Iterable[str] | str | None = None,
) -> Dataset:
    """The (cached) problems of one kind from ``dataset`` after the filters."""
    if isinstance(difficulty, str):
        difficulty = [difficulty]

    def key(values: Iterable[str] | None) -> tuple[str, ...] | None:
        return tuple(values) if values is not None else None

    return _load(str(dataset), key(ids), key(categories), key(difficulty), agentic)


def answer_text(completion: Any) -> str:
    """The text of a completion: a string, or chat messages (their assistant contents joined)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if isinstance(completion, list):
        parts = []
        for message in completion:
            if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
                content = message.get("content") or ""
                if isinstance(content, list):  # content parts
                    content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
                parts.append(str(content))
        return "\n".join(parts)
    return "" if completion is None else str(completion)


def grade_metrics(info: dict[str, Any]) -> dict[str, float]:
    """Numeric per-episode metrics from a graded step's documented ``info`` keys."""
    stages = info.get("stages") or {}
    tests = info.get("tests") or {}
    return {
        "passed": float(bool(info.get("passed"))),
        "format_ok": float(bool((stages.get("format") or {}).get("passed"))),
        "syntax_ok": float(bool((stages.get("syntax") or {}).get("passed"))),
        "tests_passed": float(tests.get("passed", 0)),
        "tests_total": float(tests.get("total", 0)),
        "excluded": float(bool(info.get("excluded"))),
        "infra_failure": float(bool(info.get("infra_failure"))),
    }
