"""Agentic NeMo-Gym sessions: a workspace per rollout, driven by tool routes, graded by ``/verify``.

A NeMo-Gym agent (verifiers' ``NeMoGymTaskset`` among them) seeds a session with its
dataset row (``POST /seed_session``), calls the row's tools as routes of this server
(``POST /execute_bash {"command"}``) carrying the session's cookie, and then asks
``/verify`` for the reward. For an agentic problem of this server's dataset the seed opens
what ``CVDP-Agentic-v0``'s ``reset`` opens: a :class:`Workspace` holding the problem's
context files, where each ``execute_bash`` runs one command in the sandbox (the same
limits, the same text the model reads); ``/verify`` with that cookie applies the diff of
the final answer (the response's last message) and grades the workspace's target files,
as the environment's last step does, and ends the session.

Sessions live in memory: at most ``max_sessions`` (the least recently used is closed to
make room), each closed after ``idle_s`` without a call, by ``/close_session``, by its
verify, or when the server stops. The cookie is a random id, so one rollout cannot reach
another's workspace.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cvdp_gym.data.problems import Problem
from cvdp_gym.envs.agentic import WORKSPACE_MB, apply_final_diff
from cvdp_gym.envs.tools import EXECUTE_BASH_TOOL
from cvdp_gym.grading import Grader
from cvdp_gym.sandbox import BubblewrapSandbox
from cvdp_gym.sandbox.paths import WORKSPACE_DIRS
from cvdp_gym.sandbox.workspace import CommandResult, Workspace, WorkspaceLimits

#: The cookie naming a rollout's session (NeMo-Gym's agents and verifiers' taskset keep cookies).
SESSION_COOKIE = "cvdp_gym_session"
#: Sessions open at once; opening one more closes the least recently used.
MAX_SESSIONS = 256
#: Seconds a session lives without a call.
IDLE_S = 3600.0


def responses_tools() -> list[dict[str, Any]]:
    """The tools of an agentic row, in the Responses API's function shape (what
    ``responses_create_params.tools`` holds): ``CVDP-Agentic-v0``'s ``execute_bash``, each
    a ``POST /<name>`` route of this server."""
    function = EXECUTE_BASH_TOOL["function"]
    return [{"type": "function", "name": function["name"], "description": function["description"],
             "parameters": function["parameters"], "strict": False}]


@dataclass
class AgentSession:
    """One rollout's workspace over one problem; its commands run one at a time."""

    problem: Problem
    workspace: Workspace
    used: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, command: str) -> CommandResult:
        with self.lock:
            self.used = time.monotonic()
            return self.workspace.run(command)

    def final_files(self, final_answer: str) -> tuple[dict[str, str], Path]:
        """What the environment's last step grades: the diff in the final answer applied, the
        problem's target files the workspace then holds, and the workspace folder (symlinks
        and special files removed)."""
        with self.lock:
            apply_final_diff(self.workspace, list(self.problem.targets), final_answer)
            return self.workspace.read_texts(self.problem.targets), self.workspace.snapshot_dir


class AgentSessions:
    """The open sessions, by cookie id."""

    def __init__(self, grader: Grader, *, max_sessions: int = MAX_SESSIONS, idle_s: float = IDLE_S) -> None:
        self.grader = grader
        self.max_sessions = max_sessions
        self.idle_s = idle_s
        self.limits = WorkspaceLimits(max_workspace_mb=WORKSPACE_MB)
        self._open: OrderedDict[str, AgentSession] = OrderedDict()
        self._lock = threading.Lock()
        self._sandbox: BubblewrapSandbox | None = None

    @staticmethod
    def takes(problem: Problem) -> bool:
        """Whether a seed of ``problem`` opens a workspace: an agentic problem of context files."""
        return problem.agentic and problem.repo is None and not problem.unsupported

    def open(self, problem: Problem) -> str:
        """A new session's id: a workspace holding the problem's context files."""
        workspace = Workspace(problem.context, sandbox=self._commands_sandbox(), limits=self.limits, dirs=WORKSPACE_DIRS)
        session_id = secrets.token_urlsafe(24)
        with self._lock:
            self._open[session_id] = AgentSession(problem, workspace)
            stale = self._expired_locked()
        for old in stale:
            with old.lock:  # after the command it may be running
                old.workspace.close()
        return session_id

    def get(self, session_id: str | None) -> AgentSession | None:
        with self._lock:
            session = self._open.get(session_id or "")
            if session is not None:
                self._open.move_to_end(session_id or "")
                session.used = time.monotonic()
            return session

    def close(self, session_id: str | None) -> bool:
        with self._lock:
            session = self._open.pop(session_id or "", None)
        if session is not None:
            with session.lock:
                session.workspace.close()
        return session is not None

    def close_all(self) -> None:
        with self._lock:
            sessions, self._open = list(self._open.values()), OrderedDict()
        for session in sessions:
            session.workspace.close()

    def __len__(self) -> int:
        return len(self._open)

    def _expired_locked(self) -> list[AgentSession]:
        """Sessions idle too long, and the least recently used beyond ``max_sessions``; removed."""
        now = time.monotonic()
        gone = [self._open.pop(sid) for sid, s in list(self._open.items()) if now - s.used > self.idle_s]
        overflow = max(0, len(self._open) - self.max_sessions)
        return gone + [self._open.pop(sid) for sid in list(self._open)[:overflow]]

    def _commands_sandbox(self) -> BubblewrapSandbox:
        """The grader's sandbox when it is bubblewrap, else one on its toolchain (an
        agent's commands always run in bubblewrap, as in ``CVDP-Agentic-v0``)."""
        if self._sandbox is None:
            runner = getattr(self.grader, "runner", None)
            sandbox = getattr(runner, "sandbox", None)
            self._sandbox = sandbox if isinstance(sandbox, BubblewrapSandbox) else BubblewrapSandbox(getattr(runner, "toolchain", None))
        return self._sandbox
