"""A text space that holds any Unicode string up to a length (Gymnasium's ``Text`` is charset-bound)."""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium import spaces

#: Characters ``sample()`` draws from: printable ASCII plus a few that RTL answers and
#: prompts really contain (arrows, Greek letters, box drawing, CJK).
SAMPLE_CHARSET = string.printable + "→←≤≥≠±×÷αβγδλμπσΩ─│┌┐└┘你好"


class UnicodeText(spaces.Text):
    """Any ``str`` of ``min_length`` to ``max_length`` characters."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | np.random.Generator | None = None):
        super().__init__(max_length=max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"
