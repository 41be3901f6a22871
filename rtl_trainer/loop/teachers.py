"""Several teachers in one run: each problem scored by the teacher its rule names
(``rtl_trainer.teacher_rules``), each model loaded once.

Each teacher is scored under its own chat template, with its own tokenizer alignment to the
student's (``TeacherAligner``); the loop logs the KL to each as ``teacher_kl/NAME``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rtl_trainer.backends import is_saved_state
from rtl_trainer.backends.base import SamplingClient, ServiceClient
from rtl_trainer.losses import TeacherAligner
from rtl_trainer.rendering import get_renderer
from rtl_trainer.teacher_rules import TeacherRule, assign_teachers


@dataclass
class Teacher:
    """A loaded teacher: its sampling client (scoring), renderer and alignment to the student."""

    name: str
    model: str
    client: SamplingClient
    renderer: Any
    aligner: TeacherAligner


class TeacherRouter:
    """The teacher of each problem, loaded once per model."""

    def __init__(self, teachers: dict[str, Teacher], by_problem: dict[str, str]) -> None:
        self.teachers = teachers
        self._by_problem = by_problem

    @property
    def several(self) -> bool:
        return len(self.teachers) > 1

    def for_problem(self, problem_id: str) -> Teacher:
        return self.teachers[self._by_problem[problem_id]]

    def assignment(self) -> dict[str, str]:
        """Problem id -> teacher name (what the run logs at its start)."""
        return dict(self._by_problem)


def load_teachers(
    service: ServiceClient,
    problems: Sequence[Any],
    *,
    rules: Sequence[TeacherRule],
    default_model: str | None,
    default_renderer: str | None,
    student_tokenizer: Any,
) -> TeacherRouter:
    """Open a sampling client per teacher that teaches some problem (each model once)."""
    chosen = assign_teachers(problems, rules, default_model, default_renderer)
    teachers: dict[str, Teacher] = {}
    for name, model, renderer in dict.fromkeys(chosen.values()):
        if is_saved_state(model):
            client = service.create_sampling_client(model_path=model)
        else:
            client = service.create_sampling_client(base_model=model)
        tokenizer = client.get_tokenizer()
        teachers[name] = Teacher(
            name, model, client, get_renderer(renderer or model, tokenizer), TeacherAligner(student_tokenizer, tokenizer)
        )
    return TeacherRouter(teachers, {pid: name for pid, (name, _, _) in chosen.items()})
