"""Results files written as work finishes: reading them back after an interruption."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_objects(path: str | Path) -> list[dict[str, Any]]:
    """The JSON objects in a JSONL file, in order; a torn or non-object line is skipped.

    An interrupted run may leave its last line half written; resuming must not fail on it.
    A missing file reads as empty.
    """
    path = Path(path)
    if not path.exists():
        return []
    rows: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows
