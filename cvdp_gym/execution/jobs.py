"""Jobs as plain functions of picklable arguments, so any executor can run them.

A job names its runner by a ``RunnerSpec`` (sandbox, toolchain kind, limits and the
toolchain fingerprint the caller expects), not by a runner object: a worker process or a
Ray node builds the runner once from the spec with its own toolchain, and refuses to grade
when that toolchain is missing or is not the one the caller's cache keys were made with.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cvdp_gym.data.problems import Problem
from cvdp_gym.data.repos import RepoStore
from cvdp_gym.errors import NodeToolchainError
from cvdp_gym.harness.results import HarnessResult
from cvdp_gym.harness.runner import HarnessRunner, RunOptions
from cvdp_gym.sandbox import Limits, SandboxUnavailable, make_sandbox
from cvdp_gym.toolchain import INSTALL_ROOT, detect, toolchain_dir


@dataclass(frozen=True)
class RunnerSpec:
    """Everything a worker needs to build the same runner as the caller."""

    sandbox: str = "bubblewrap"
    toolchain: str = "root"
    limits: Limits = field(default_factory=Limits)
    fingerprint: str = ""  # the caller's; a worker with another toolchain refuses
    repos: str = ""  # the caller's repos folder ("": the worker's $CVDP_HEAVY_REPOS_PATH)

    @classmethod
    def of(cls, runner: HarnessRunner) -> RunnerSpec:
        name = getattr(runner.sandbox, "name", "bubblewrap")
        folder = runner.repos.folder
        return cls(name, runner.toolchain.kind, runner.options.limits, runner.toolchain.fingerprint(), str(folder or ""))


_RUNNERS: dict[RunnerSpec, HarnessRunner] = {}
_RUNNERS_LOCK = threading.Lock()


def _where() -> str:
    return f"{socket.gethostname()} (pid {os.getpid()})"


def runner_for(spec: RunnerSpec) -> HarnessRunner:
    """This process's runner for ``spec``, built once; a clear error when this machine
    cannot grade with the toolchain the caller expects."""
    with _RUNNERS_LOCK:
        runner = _RUNNERS.get(spec)
        if runner is not None:
            return runner
        toolchain = detect(spec.toolchain)
        if not toolchain.ready:
            fix = INSTALL_ROOT + (" --toolchain host" if spec.toolchain == "host" else "")
            raise NodeToolchainError(
                f"{_where()} has no {spec.toolchain} simulation toolchain at {toolchain_dir()}: "
                f"run `{fix}` on that machine, or set CVDP_GYM_TOOLCHAIN to a shared copy"
            )
        found = toolchain.fingerprint()
        if spec.fingerprint and found != spec.fingerprint:
            raise NodeToolchainError(
                f"{_where()} has toolchain {found}, but the caller grades with {spec.fingerprint}: "
                f"rebuild it with `{INSTALL_ROOT}` (same project version on every node)"
            )
        try:
            sandbox = make_sandbox(spec.sandbox, toolchain=spec.toolchain)
        except (SandboxUnavailable, ValueError) as exc:
            raise NodeToolchainError(f"{_where()} cannot start the {spec.sandbox} sandbox: {exc}") from exc
        runner = HarnessRunner(sandbox, RunOptions(limits=spec.limits), repos=RepoStore(spec.repos or None))
        _RUNNERS[spec] = runner
        return runner


def harness_job(spec: RunnerSpec, problem: Problem, files: Mapping[str, str], seed: int | None = None) -> HarnessResult:
    """Run ``problem``'s harness on ``files`` with ``seed`` (what ``cvdp-gym check`` sends)."""
    return runner_for(spec).run(problem, files, seed=seed)


def probe_job(spec: RunnerSpec) -> dict[str, str]:
    """Where a job would run and with which toolchain (raises ``NodeToolchainError``)."""
    runner = runner_for(spec)
    return {"where": _where(), "fingerprint": runner.toolchain.fingerprint()}


def noop_job(value: Any = None) -> Any:
    """Returns its argument: measures an executor's own per-job overhead."""
    return value
