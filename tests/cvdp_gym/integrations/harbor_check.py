"""Load task folders with Harbor's own ``Task`` and read trials' reward files with Harbor's own
``Verifier`` (run by ``test_harbor`` in the sandbox, under the toolchain root's Python 3.14,
with ``harbor`` and what its models need on ``PYTHONPATH``; see ``scripts/harbor_models.py``).

``python3 harbor_check.py IN.json``: IN is ``{"tasks": [folder, ...], "trials": [[folder,
trial dir], ...]}``. Prints one JSON line ``{"tasks": {folder: summary or {"error": ...}},
"trials": [{"rewards": ..., "commands": [...], "uploads": [...]} or {"error": ...}]}``.

A trial's verification is Harbor's ``Verifier.verify`` unchanged, against an environment
whose ``/logs/verifier`` is mounted from the trial's ``verifier/`` folder (as Harbor's Docker
environment mounts it): the test has already run the task's ``tests/test.sh`` with that
layout, so the environment here records what Harbor uploads and runs instead of running it,
and Harbor then reads the reward file that script wrote.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from typing import Any

from harbor.models.task.config import TaskOS
from harbor.models.task.task import Task
from harbor.models.trial.paths import EnvironmentPaths, TrialPaths
from harbor.verifier.verifier import Verifier


class RecordingEnvironment:
    """What ``Verifier.verify`` asks of an environment: Linux, ``/logs/verifier`` mounted from
    the trial's folder, and ``upload_dir``/``exec`` recorded."""

    os = TaskOS.LINUX

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.uploads: list[list[Any]] = []

    def is_path_mounted(self, environment_path: Any, host_path: Path) -> bool:
        return PurePosixPath(str(environment_path)) == EnvironmentPaths.verifier_dir

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        files = sorted(p.relative_to(source_dir).as_posix() for p in Path(source_dir).rglob("*") if p.is_file())
        self.uploads.append([target_dir, files])

    async def exec(self, command: str, **kwargs: Any) -> Any:
        self.commands.append(command)
        return SimpleNamespace(return_code=0, stdout="", stderr="")


def summary(task: Task) -> dict[str, Any]:
    config = task.config
    test = task.paths.discovered_test_path_for(config.environment.os)
    return {
        "name": task.name,
        "instruction": task.instruction,
        "metadata": config.metadata,
        "agent_timeout_sec": config.agent.timeout_sec,
        "verifier_timeout_sec": config.verifier.timeout_sec,
        "workdir": config.environment.workdir,
        "dockerfile": task.paths.environment_dir.joinpath("Dockerfile").is_file(),
        "test": test.relative_to(task.paths.task_dir).as_posix() if test else None,
        "solution": task.paths.solution_dir.joinpath("solve.sh").is_file(),
        "valid": Task.is_valid_dir(task.paths.task_dir),
    }


def verify(folder: str, trial_dir: str) -> dict[str, Any]:
    environment = RecordingEnvironment()
    verifier = Verifier(task=Task(folder), trial_paths=TrialPaths(Path(trial_dir)), environment=environment)
    result = asyncio.run(verifier.verify())
    return {"rewards": result.rewards, "commands": environment.commands, "uploads": environment.uploads}


def main(path: str) -> None:
    spec = json.loads(Path(path).read_text())
    tasks: dict[str, Any] = {}
    for folder in spec["tasks"]:
        try:
            tasks[folder] = summary(Task(folder))
        except Exception as exc:  # Harbor's objection, reported to the test
            tasks[folder] = {"error": f"{type(exc).__name__}: {exc}"}
    trials = []
    for folder, trial_dir in spec["trials"]:
        try:
            trials.append(verify(folder, trial_dir))
        except Exception as exc:
            trials.append({"error": f"{type(exc).__name__}: {exc}"})
    print(json.dumps({"tasks": tasks, "trials": trials}))


if __name__ == "__main__":
    main(sys.argv[1])
