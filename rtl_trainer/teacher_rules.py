"""Teacher rules (``TrainConfig.teachers``): which teacher model scores which problem.

Each rule names a teacher ``model`` (and optionally its chat ``renderer`` and a short
``name``) and the problems it teaches: ``problems`` (glob patterns on the problem id),
``categories`` (``cid003`` or ``3``) and ``difficulty``. Within a rule every key given must
match; the first rule that matches a problem names its teacher, and ``TrainConfig.teacher``
(when set) teaches the problems no rule matches. A run holds one dataset, so a rule per
dataset is the plain ``teacher``. Loading the teachers is ``rtl_trainer.loop.teachers``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtl_trainer.errors import ConfigError

#: The keys a ``teachers`` rule may have.
RULE_KEYS = ("name", "model", "renderer", "problems", "categories", "difficulty")
#: The name of the plain ``teacher`` when rules are given too.
DEFAULT_NAME = "default"


@dataclass(frozen=True)
class TeacherRule:
    """One ``teachers`` entry: the teacher ``model`` for the problems it matches."""

    name: str
    model: str
    renderer: str | None = None
    problems: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    difficulty: tuple[str, ...] = ()

    def matches(self, problem_id: str, categories: Sequence[str], difficulty: str | None) -> bool:
        """Every key the rule gives matches (a rule with no keys matches every problem)."""
        if self.problems and not any(fnmatch.fnmatchcase(problem_id, p) for p in self.problems):
            return False
        if self.categories and not set(self.categories) & {_category(c) for c in categories}:
            return False
        return not self.difficulty or difficulty in self.difficulty


def _category(text: str) -> str:
    """``3``, ``cid3`` and ``cid003`` all name ``cid003``; other text is kept."""
    digits = str(text).lower().removeprefix("cid")
    return f"cid{int(digits):03d}" if digits.isdigit() else str(text)


def _strings(value: Any, key: str, index: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return (str(value),)
    if isinstance(value, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        return tuple(str(v) for v in value)
    raise ConfigError(f"teachers[{index}].{key} must be a string or a list of strings, not {value!r}")


def parse_rules(rules: Sequence[dict[str, Any]] | None) -> list[TeacherRule]:
    """``TrainConfig.teachers`` as rules; a ``ConfigError`` names the rule and key at fault.
    A rule without ``name`` is called after its model (``…/step00160`` -> its folder names)."""
    parsed: list[TeacherRule] = []
    for index, rule in enumerate(rules or []):
        if not isinstance(rule, dict):
            raise ConfigError(f"teachers[{index}] must be a mapping with a model, not {rule!r}")
        unknown = sorted(set(rule) - set(RULE_KEYS))
        if unknown:
            raise ConfigError(f"teachers[{index}]: unknown keys {unknown}; a rule has {list(RULE_KEYS)}")
        model = rule.get("model")
        if not isinstance(model, str) or not model:
            raise ConfigError(f"teachers[{index}] needs a model (a model name, a model directory or a saved state)")
        renderer = rule.get("renderer")
        if renderer is not None and not isinstance(renderer, str):
            raise ConfigError(f"teachers[{index}].renderer must be a renderer family name, not {renderer!r}")
        categories = tuple(_category(c) for c in _strings(rule.get("categories"), "categories", index))
        name = str(rule.get("name") or _short_name(model))
        parsed.append(TeacherRule(
            name=name, model=model, renderer=renderer,
            problems=_strings(rule.get("problems"), "problems", index),
            categories=categories, difficulty=_strings(rule.get("difficulty"), "difficulty", index),
        ))
    names = [r.name for r in parsed]
    repeated = sorted({n for n in names if names.count(n) > 1} | ({DEFAULT_NAME} & set(names)))
    if repeated:
        raise ConfigError(f"teachers: names must be unique and not {DEFAULT_NAME!r}: {repeated}; give each rule a name")
    return parsed


def _short_name(model: str) -> str:
    """A readable name for a model: the Hub name's last part, or a saved state's run folder."""
    parts = [p for p in Path(model.rstrip("/")).parts if p not in ("/", "checkpoints", "states", "state")]
    if not parts:
        return model
    last = parts[-1]
    if last.startswith("step") and len(parts) > 1:  # runs/teacher-sft/.../step00159 -> teacher-sft
        return next((p for p in reversed(parts[:-1]) if not p.startswith("step")), last)
    return last


def unused_rules(problems: Sequence[Any], rules: Sequence[TeacherRule]) -> list[str]:
    """Names of the rules that teach none of ``problems`` (a typo in a pattern, or shadowed
    by an earlier rule): worth a warning, not an error."""
    first = {next((r.name for r in rules if r.matches(p.id, p.categories, p.difficulty)), None) for p in problems}
    return [r.name for r in rules if r.name not in first]


def assign_teachers(
    problems: Sequence[Any],
    rules: Sequence[TeacherRule],
    default_model: str | None,
    default_renderer: str | None = None,
) -> dict[str, tuple[str, str, str | None]]:
    """Problem id -> ``(teacher name, model, renderer)`` for each problem (objects with
    ``id``, ``categories`` and ``difficulty``): the first matching rule, else the default.
    A problem with neither is a ``ConfigError`` that names it."""
    chosen: dict[str, tuple[str, str, str | None]] = {}
    orphans = []
    for problem in problems:
        rule = next((r for r in rules if r.matches(problem.id, problem.categories, problem.difficulty)), None)
        if rule is not None:
            chosen[problem.id] = (rule.name, rule.model, rule.renderer)
        elif default_model:
            name = DEFAULT_NAME if rules else _short_name(default_model)
            chosen[problem.id] = (name, default_model, default_renderer)
        else:
            orphans.append(problem.id)
    if orphans:
        shown = ", ".join(orphans[:5]) + (f" and {len(orphans) - 5} more" if len(orphans) > 5 else "")
        raise ConfigError(
            f"no teacher for {len(orphans)} problem(s): {shown}; add a teachers rule that matches them "
            "or a default --teacher"
        )
    return chosen
