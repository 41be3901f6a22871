"""The problems this project ships, kept as readable source trees.

Each ``bundled/<id>/`` folder holds ``problem.json``, ``prompt.md`` (and
``system_message.md`` for agentic problems), ``context/``, ``solution/``, ``harness/`` and
``candidates/<name>/`` with ``candidates/expected.json``. They are turned into records of
the official JSONL shapes, so they go through exactly the loader real CVDP data goes
through; ``export_jsonl`` writes them out as a CVDP file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvdp_gym.data.patch import make_patch

BUNDLED_DIR = Path(__file__).parent / "bundled"
#: The dataset spec (and the default) that names these problems.
BUNDLED = "bundled"


def _read_tree(root: Path) -> dict[str, str]:
    if not root.is_dir():
        return {}
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def problem_dirs(root: Path = BUNDLED_DIR) -> list[Path]:
    return sorted(p.parent for p in root.glob("*/problem.json"))


def record_from_dir(folder: Path) -> dict[str, Any]:
    """The official-shape JSONL record for one bundled problem folder."""
    meta = json.loads((folder / "problem.json").read_text(encoding="utf-8"))
    prompt = (folder / "prompt.md").read_text(encoding="utf-8")
    context = _read_tree(folder / "context")
    solution = _read_tree(folder / "solution")
    harness = _read_tree(folder / "harness")
    targets = meta.get("targets") or sorted(solution)
    if meta.get("agentic"):
        system_file = folder / "system_message.md"
        return {
            "id": meta["id"],
            "categories": meta["categories"],
            "system_message": system_file.read_text(encoding="utf-8") if system_file.exists() else "",
            "prompt": prompt,
            "context": context,
            "patch": {t: make_patch(context.get(t, ""), solution.get(t, ""), t) for t in targets},
            "harness": harness,
        }
    return {
        "id": meta["id"],
        "categories": meta["categories"],
        "input": {"prompt": prompt, "context": context},
        "output": {"response": "", "context": {t: solution.get(t, "") for t in targets}},
        "harness": {"files": harness},
    }


def bundled_records(root: Path = BUNDLED_DIR) -> list[tuple[str, dict[str, Any]]]:
    return [(f"bundled:{folder.name}", record_from_dir(folder)) for folder in problem_dirs(root)]


@dataclass(frozen=True)
class Candidate:
    """A known answer to a problem and the verdict it must get."""

    problem_id: str
    name: str
    files: dict[str, str]
    expected_class: str  # "passed" for a reference, else a failure class
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.problem_id,
            "name": self.name,
            "files": self.files,
            "expected": self.expected_class,
            "why": self.why,
        }


def bundled_candidates(root: Path = BUNDLED_DIR) -> list[Candidate]:
    """The known-wrong candidates shipped with the bundled problems."""
    out: list[Candidate] = []
    for folder in problem_dirs(root):
        pid = json.loads((folder / "problem.json").read_text(encoding="utf-8"))["id"]
        expected_file = folder / "candidates" / "expected.json"
        expected = json.loads(expected_file.read_text(encoding="utf-8")) if expected_file.exists() else {}
        for name, spec in sorted(expected.items()):
            files = _read_tree(folder / "candidates" / name)
            out.append(Candidate(pid, name, files, spec["failure_class"], spec.get("why", "")))
    return out


def export_jsonl(path: str | Path, root: Path = BUNDLED_DIR) -> int:
    """Write the bundled problems as a CVDP JSONL file; returns the number written."""
    records = bundled_records(root)
    with open(path, "w", encoding="utf-8") as handle:
        for _, record in records:
            handle.write(json.dumps(record) + "\n")
    return len(records)
