"""Run a CVDP problem's harness, unchanged, on candidate files.

This is the local equivalent of the official flow (``docker compose run`` of each service
of the harness's ``docker-compose.yml``): the workspace with the candidate's files at
``/code``, the harness's ``src/`` read-only at ``/src``, the service's other relative
mounts, ``env_file`` variables, its command and working directory, one service after
another. It runs in a bubblewrap sandbox with the local toolchain in place of the image,
and everything is written inside one temporary directory that is removed afterwards.
"""

from __future__ import annotations

import posixpath
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cvdp_gym.data.problems import Problem
from cvdp_gym.harness.compose import HarnessError, Service, parse_services
from cvdp_gym.harness.results import (
    BUILD_ERROR,
    HARNESS_ERROR,
    RESOURCE_LIMIT,
    TIMEOUT,
    TOOLCHAIN_GAP,
    UNSUPPORTED,
    HarnessResult,
    ServiceResult,
    classify_failure,
    cocotb_counts,
    pytest_summary,
)
from cvdp_gym.sandbox.bwrap import BubblewrapSandbox, Limits, Mount, SandboxResult

#: Folders the official runner creates (and mounts under /code) for every problem.
WORKSPACE_DIRS = ("docs", "rtl", "verif", "rundir")
LOG_TAIL_CHARS = 4000
_LOG_READ_BYTES = 64_000


class CandidateError(ValueError):
    """Candidate file paths that would escape the workspace."""


def check_relative_path(path: str) -> str:
    """Normalise a workspace-relative path; refuse absolute paths and ``..``."""
    text = path.strip()
    for prefix in ("/code/", "./"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    normal = posixpath.normpath(text)
    if not text or normal.startswith("/") or normal == ".." or normal.startswith("../") or normal == ".":
        raise CandidateError(f"file path {path!r} is not inside the workspace")
    return normal


def write_tree(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        target = root / check_relative_path(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


@dataclass
class RunOptions:
    """How to run: limits per service and whether to keep the run folder for inspection."""

    limits: Limits = field(default_factory=Limits)
    keep_dir: Path | None = None  # copy the run folder here before removing it
    gap_check: bool = True  # on an Icarus build error, ask Verilator's parser for a second opinion


class HarnessRunner:
    """Runs harnesses in a sandbox; one instance can serve many runs (and threads)."""

    def __init__(self, sandbox: BubblewrapSandbox | None = None, options: RunOptions | None = None):
        self.sandbox = sandbox or BubblewrapSandbox()
        self.toolchain = self.sandbox.toolchain
        self.options = options or RunOptions()
        self._installed = {
            generation: env.installed_distributions()
            for generation, env in self.toolchain.envs.items()
            if env.installed
        }

    def run(
        self,
        problem: Problem,
        files: Mapping[str, str],
        *,
        workspace: Path | None = None,
        limits: Limits | None = None,
    ) -> HarnessResult:
        """Judge ``files`` (workspace-relative path → text) against ``problem``'s harness.

        ``workspace``: an existing workspace folder (an agent's) to start from instead of
        the problem's context files; ``files`` are then written over it.
        """
        start = time.monotonic()
        if problem.unsupported:
            return HarnessResult.failure(problem.id, UNSUPPORTED, problem.unsupported)
        try:
            services = parse_services(problem.harness, self._installed)
        except HarnessError as exc:
            return HarnessResult.failure(problem.id, HARNESS_ERROR, str(exc))
        run_dir = Path(tempfile.mkdtemp(prefix="cvdp-gym-run-"))
        try:
            try:
                self._prepare(run_dir, problem, files, workspace)
            except (CandidateError, OSError) as exc:
                return HarnessResult.failure(problem.id, HARNESS_ERROR if isinstance(exc, OSError) else BUILD_ERROR, str(exc))
            results = [
                self._run_service(run_dir, problem, service, limits or self.options.limits)
                for service in services
            ]
        finally:
            if self.options.keep_dir is not None:
                shutil.copytree(run_dir, self.options.keep_dir / problem.id, dirs_exist_ok=True, symlinks=True)
            shutil.rmtree(run_dir, ignore_errors=True)
        failed = [r for r in results if not r.passed]
        first = failed[0] if failed else None
        return HarnessResult(
            problem_id=problem.id,
            passed=not failed,
            failure_class=first.failure_class if first else None,
            reason=(f"{first.name}: {first.reason}" if len(results) > 1 else first.reason) if first else "",
            services=results,
            wall_s=time.monotonic() - start,
        )

    def _prepare(
        self, run_dir: Path, problem: Problem, files: Mapping[str, str], workspace: Path | None
    ) -> None:
        code = run_dir / "code"
        harness = run_dir / "harness"
        for folder in (code, harness, run_dir / "rundir", run_dir / "scratch"):
            folder.mkdir(parents=True)
        if workspace is not None:
            shutil.copytree(workspace, code, dirs_exist_ok=True, symlinks=True)
        else:
            write_tree(code, problem.context)
        for sub in WORKSPACE_DIRS:
            (code / sub).mkdir(exist_ok=True)
        write_tree(harness, problem.harness)
        if not problem.agentic:
            # The official non-agentic flow restores context and harness into one folder
            # and mounts its docs/rtl/verif/src/rundir under /code.
            write_tree(code, problem.harness)
        write_tree(code, files)

    def _run_service(self, run_dir: Path, problem: Problem, service: Service, limits: Limits) -> ServiceResult:
        if service.unsupported or service.generation is None:
            return ServiceResult(service.name, False, UNSUPPORTED, service.unsupported or "no environment", None, notes=service.notes)
        env = self.toolchain.env(service.generation)
        if not env.installed:
            reason = (
                f"simulation environment {service.generation} is not installed; "
                f"run: cvdp-gym toolchain install --generation {service.generation}"
            )
            return ServiceResult(service.name, False, UNSUPPORTED, reason, None, generation=service.generation)
        code = run_dir / "code"
        mounts = [Mount(code, "/code", writable=True), Mount(run_dir / "rundir", "/rundir", writable=True)]
        for volume in service.volumes:
            source = run_dir / "harness" / volume.source
            if not source.exists():
                source.mkdir(parents=True)
            mounts.append(Mount(source, volume.target, writable=not volume.read_only))
        cwd = service.working_dir or ("/rundir" if problem.agentic else "/code/rundir")
        environment = {"HOME": "/code/rundir", **service.environment}
        outcome = self.sandbox.run(
            service.command,
            mounts=mounts,
            scratch=run_dir / "scratch",
            cwd=cwd,
            env=environment,
            sim_env=env,
            limits=limits,
        )
        return self._service_result(run_dir, service, outcome, env_generation=service.generation)

    def _service_result(self, run_dir: Path, service: Service, outcome: SandboxResult, env_generation: str) -> ServiceResult:
        output = outcome.output
        pytest_counts, harness_s = pytest_summary(output)
        tests = cocotb_counts(output)
        logs = _read_logs(run_dir)
        if tests.total == 0:
            tests = cocotb_counts(logs)
        tail = output[-LOG_TAIL_CHARS:]
        result = ServiceResult(
            name=service.name,
            passed=outcome.returncode == 0 and not outcome.timed_out,
            failure_class=None,
            reason="",
            returncode=outcome.returncode,
            tests=tests,
            pytest=pytest_counts,
            harness_s=harness_s,
            wall_s=outcome.wall_s,
            generation=env_generation,
            log_tail=tail,
            notes=list(service.notes),
        )
        if outcome.truncated:
            result.notes.append(f"output truncated: {outcome.output_bytes} bytes, kept head and tail")
        if result.passed:
            return result
        if outcome.timed_out:
            result.failure_class, result.reason = TIMEOUT, f"killed after the {outcome.wall_s:.0f} s wall-time limit"
        elif outcome.out_of_memory:
            result.failure_class, result.reason = RESOURCE_LIMIT, "killed for exceeding the memory limit"
        else:
            result.failure_class, result.reason = classify_failure(output, logs, outcome.returncode)
            if (
                result.failure_class == BUILD_ERROR
                and self.options.gap_check
                and service.environment.get("SIM", "icarus").lower() == "icarus"
                and self._verilator_accepts(run_dir, service)
            ):
                result.failure_class = TOOLCHAIN_GAP
                result.reason = f"Icarus 11 rejected code that Verilator's parser accepts ({result.reason})"
        if result.failure_class in (BUILD_ERROR, TOOLCHAIN_GAP) and logs.strip():
            result.log_tail = (logs[-LOG_TAIL_CHARS // 2 :] + "\n" + output[-LOG_TAIL_CHARS // 2 :]).strip()
        return result

    def _verilator_accepts(self, run_dir: Path, service: Service) -> bool:
        """Second opinion from a full SystemVerilog parser on the sources Icarus rejected."""
        sources = service.environment.get("VERILOG_SOURCES", "").split()
        if not sources:
            return False
        env = self.toolchain.env(service.generation or "cocotb2")
        argv = ["verilator", "--lint-only", "-Wno-fatal", "-Wno-lint", "-Wno-style", "--timing"]
        top = service.environment.get("TOPLEVEL")
        if top:
            argv += ["--top-module", top]
        argv += sorted({f"-I{posixpath.dirname(s)}" for s in sources}) + sources
        outcome = self.sandbox.run(
            argv,
            mounts=[Mount(run_dir / "code", "/code")],
            scratch=run_dir / "scratch",
            cwd="/code",
            env={"HOME": "/tmp"},
            sim_env=env,
            limits=Limits(wall_s=60, output_bytes=20_000),
        )
        return outcome.returncode == 0 and not outcome.timed_out


def _read_logs(run_dir: Path) -> str:
    """The tails of the compiler and simulator logs the harness left in its writable folders."""
    chunks: list[str] = []
    for root in (run_dir / "code" / "rundir", run_dir / "rundir"):
        if not root.exists():
            continue
        for path in sorted(root.rglob("*.log")):
            try:
                with open(path, "rb") as handle:
                    size = path.stat().st_size
                    handle.seek(max(0, size - _LOG_READ_BYTES))
                    chunks.append(f"--- {path.name} ---\n" + handle.read().decode("utf-8", "replace"))
            except OSError:
                continue
    return "\n".join(chunks)


_DEFAULT_RUNNER: HarnessRunner | None = None


def run_harness(
    problem: Problem,
    files: Mapping[str, str] | None = None,
    *,
    workspace: Path | None = None,
    limits: Limits | None = None,
) -> HarnessResult:
    """Judge ``files`` for ``problem`` with a shared default runner.

    ``files=None`` runs the problem's reference solution.
    """
    global _DEFAULT_RUNNER
    if _DEFAULT_RUNNER is None:
        _DEFAULT_RUNNER = HarnessRunner()
    if files is None:
        if problem.reference is None:
            return HarnessResult.failure(problem.id, UNSUPPORTED, "the dataset has no reference solution for this problem")
        files = problem.reference
    return _DEFAULT_RUNNER.run(problem, files, workspace=workspace, limits=limits)
