"""One Harbor trial inside a task's own container: ``python3 harbor_trial.py TASK TRIAL`` is
the whole command of the one ``docker run`` that ``test_harbor_one_container`` starts per trial.

Harbor's single-container providers (Modal, E2B, Runloop, Tensorlake) start one container from
the task's image and exec into it: the agent (here Harbor's own ``OracleAgent``: it uploads
``solution/`` and runs ``solve.sh``), then Harbor's own ``Verifier`` (it uploads ``tests/``,
runs ``tests/test.sh`` and reads the reward file). Here Harbor runs in that container itself,
so ``ThisContainer`` serves its uploads, downloads and commands in place; the task folder
(Harbor's side: the provider's host) is mounted read-only at TASK and the trial folder at TRIAL.
Runs under the image's ``python3`` (3.14), with Harbor on ``PYTHONPATH``
(``scripts/harbor_models.py``).

Prints one JSON line: ``agent_view`` (what the agent found before it ran: ``/tests``,
``/solution``, the problem record), the oracle's exit code, Harbor's rewards, or ``error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harbor.agents.oracle import OracleAgent
from harbor.environments.base import ExecResult
from harbor.models.agent.context import AgentContext
from harbor.models.task.config import TaskOS
from harbor.models.task.task import Task
from harbor.models.trial.paths import EnvironmentPaths, TrialPaths
from harbor.verifier.verifier import Verifier


class ThisContainer:
    """What ``OracleAgent.run`` and ``Verifier.verify`` ask of an environment, served by the
    container this runs in: uploads and downloads are copies, a command is ``bash -c`` here."""

    os = TaskOS.LINUX

    def __init__(self) -> None:
        self._scoped: list[dict[str, str]] = []

    @contextlib.contextmanager
    def scoped_exec_env(self, env: dict[str, str]) -> Iterator[None]:
        self._scoped.append(dict(env))
        try:
            yield
        finally:
            self._scoped.pop()

    def is_path_mounted(self, environment_path: Any, host_path: Path) -> bool:
        return False  # Harbor then downloads what it reads: a copy here

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        shutil.copytree(source_dir, target_dir, dirs_exist_ok=True)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        shutil.copy(source_path, target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        shutil.copytree(source_dir, target_dir, dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source_path, target_path)

    async def exec(self, command: str, env: dict[str, str] | None = None, timeout_sec: float | None = None,
                   cwd: str | None = None, **kwargs: Any) -> ExecResult:
        merged = {**os.environ, **(env or {})}
        for scoped in self._scoped:
            merged.update(scoped)
        done = subprocess.run(["bash", "-c", command], env=merged, cwd=cwd, capture_output=True, text=True, timeout=timeout_sec)
        return ExecResult(stdout=done.stdout, stderr=done.stderr, return_code=done.returncode)


def agent_view(task: Task) -> dict[str, bool]:
    """Whether the verifier's files are in the container before the agent runs (they must not be)."""
    code = Path(task.config.environment.workdir or "/")
    return {
        "tests": Path("/tests").exists(),
        "solution": Path("/solution").exists(),
        "problem_json": any(p.name == "problem.json" for p in code.rglob("*")),
        "harness": any(p.name == "docker-compose.yml" for p in code.rglob("*")),
    }


async def trial(task_dir: Path, trial_dir: Path) -> dict[str, Any]:
    task, paths = Task(task_dir), TrialPaths(trial_dir)
    paths.mkdir()
    for folder in (EnvironmentPaths.agent_dir, EnvironmentPaths.verifier_dir):  # as Harbor's trial makes them
        Path(folder).mkdir(parents=True, exist_ok=True)
    environment = ThisContainer()
    seen = agent_view(task)
    agent = OracleAgent(logs_dir=paths.agent_dir, task_dir=task_dir, trial_paths=paths)
    await agent.run(task.instruction, environment, AgentContext())
    exit_code = paths.agent_dir / "exit-code.txt"
    result = await Verifier(task=task, trial_paths=paths, environment=environment).verify()
    return {"agent_view": seen, "oracle_exit": int(exit_code.read_text()) if exit_code.exists() else 0, "rewards": result.rewards}


def main(task_dir: str, trial_dir: str) -> None:
    try:
        print(json.dumps(asyncio.run(trial(Path(task_dir), Path(trial_dir)))))
    except Exception as exc:  # Harbor's objection, reported to the test
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))


if __name__ == "__main__":
    main(*sys.argv[1:])
