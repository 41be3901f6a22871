"""Run a CVDP problem's harness, unchanged, on candidate files.

This is the local equivalent of the official flow (``docker compose run`` of each service
of the harness's ``docker-compose.yml``): the workspace with the candidate's files at
``/code``, the harness's ``src/`` read-only at ``/src``, the service's other relative
mounts, ``env_file`` variables, its command and working directory, one service after
another. It runs in a sandbox (bubblewrap on the pinned simulation root by default, or the
Docker backend) in place of the image, and everything is written inside one temporary
directory that is removed afterwards. Every result records the toolchain that graded it.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cvdp_gym.data.problems import Problem
from cvdp_gym.harness.compose import HarnessError, Service, parse_services
from cvdp_gym.harness.results import (
    BUILD_ERROR,
    HARNESS_ERROR,
    RESOURCE_LIMIT,
    TEST_FAILURE,
    TIMEOUT,
    TOOLCHAIN_GAP,
    UNSUPPORTED,
    HarnessResult,
    ServiceResult,
    classify_failure,
    compile_errors,
    pytest_summary,
    sorry_lines,
)
from cvdp_gym.harness.svparse import parse_sources
from cvdp_gym.harness.watch import RUN_TAG, ResultsWatcher
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
    gap_check: bool = True  # host toolchain: on an Icarus build error, ask slang for a second opinion


@dataclass
class LintResult:
    """A compile-only verdict: ``ok``, or the compiler's errors (``gap``: Icarus-only rejection)."""

    ok: bool
    gap: bool
    errors: list[str]
    simulator: str
    seconds: float


class HarnessRunner:
    """Runs harnesses in a sandbox; one instance can serve many runs (and threads)."""

    def __init__(self, sandbox: BubblewrapSandbox | None = None, options: RunOptions | None = None):
        self.sandbox = sandbox or BubblewrapSandbox()
        self.toolchain = self.sandbox.toolchain
        self.options = options or RunOptions()
        self.versions = {"sandbox": getattr(self.sandbox, "name", type(self.sandbox).__name__), **self.toolchain.versions()}
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
        result = self._run(problem, files, workspace, limits)
        result.toolchain = dict(self.versions)
        return result

    def _run(
        self, problem: Problem, files: Mapping[str, str], workspace: Path | None, limits: Limits | None
    ) -> HarnessResult:
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
            fix = "cvdp-gym toolchain install" + (
                f" --toolchain host --generation {service.generation}" if self.toolchain.kind == "host" else ""
            )
            reason = f"simulation environment {service.generation} ({self.toolchain.kind}) is not installed; run: {fix}"
            return ServiceResult(service.name, False, UNSUPPORTED, reason, None, generation=service.generation)
        code = run_dir / "code"
        mounts = [Mount(code, "/code", writable=True), Mount(run_dir / "rundir", "/rundir", writable=True)]
        for volume in service.volumes:
            source = run_dir / "harness" / volume.source
            if not source.exists():
                source.mkdir(parents=True)
            mounts.append(Mount(source, volume.target, writable=not volume.read_only))
        cwd = service.working_dir or ("/rundir" if problem.agentic else "/code/rundir")
        tag = uuid.uuid4().hex
        # The official image carries cocotb 2 only: cocotb 1.x harnesses use the stand-in.
        image = service.image if service.generation == "cocotb2" else None
        environment = {
            "HOME": "/code/rundir", **self._build_cache_env(image), **service.environment, RUN_TAG: tag
        }
        watched = {m.target: m.source for m in mounts if m.writable}
        with ResultsWatcher(_writable_roots(run_dir), tag=tag, mounts=watched) as watcher:
            outcome = self.sandbox.run(
                service.command,
                mounts=mounts,
                scratch=run_dir / "scratch",
                cwd=cwd,
                env=environment,
                sim_env=env,
                limits=limits,
                image=image,
            )
        return self._service_result(run_dir, service, outcome, service.generation, watcher)

    def _build_cache_env(self, image: str | None) -> dict[str, str]:
        """The root's read-only Verilator runtime cache, wherever the command runs on that root.

        Not in the official ``nvidia/cvdp-sim`` image (Docker backend), which has no such cache.
        """
        resolve = getattr(self.sandbox, "image_for", None)
        if resolve is not None and resolve(image) != getattr(self.sandbox, "standin_tag", None):
            return {}
        return self.toolchain.build_cache_env()

    def _service_result(
        self, run_dir: Path, service: Service, outcome: SandboxResult, env_generation: str, watcher: ResultsWatcher
    ) -> ServiceResult:
        output = outcome.output
        pytest_counts, harness_s = pytest_summary(output)
        logs = _read_logs(run_dir)
        # Test counts from cocotb's results files, never from console text a design can print.
        tests = watcher.counts()
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
            failures=watcher.failures(),
        )
        if outcome.truncated:
            result.notes.append(f"output truncated: {outcome.output_bytes} bytes, kept head and tail")
        if watcher.tampered:
            # Only cocotb writes its results file, once per simulation: another write came
            # from the design (a $fwrite to it), and pytest's verdict rests on that file.
            names = ", ".join(sorted(Path(p).name for p in watcher.tampered))
            result.passed = False
            result.failure_class = TEST_FAILURE
            result.reason = f"the design wrote to cocotb's results file ({names}); its tests count as failed"
            return result
        if result.passed:
            return result
        if outcome.timed_out:
            result.failure_class, result.reason = TIMEOUT, f"killed after the {outcome.wall_s:.0f} s wall-time limit"
        elif outcome.out_of_memory:
            result.failure_class, result.reason = RESOURCE_LIMIT, "killed for exceeding the memory limit"
        else:
            result.failure_class, result.reason = classify_failure(
                output, logs, outcome.returncode, tests, gaps=self.toolchain.reports_gaps
            )
            if (
                result.failure_class == BUILD_ERROR
                and self.toolchain.reports_gaps
                and self.options.gap_check
                and service.environment.get("SIM", "icarus").lower() == "icarus"
                and self._full_parser_accepts(run_dir, service)
            ):
                result.failure_class = TOOLCHAIN_GAP
                result.reason = f"Icarus 11 rejected code that a full SystemVerilog parser (slang) accepts ({result.reason})"
        if result.failure_class in (BUILD_ERROR, TOOLCHAIN_GAP) and logs.strip():
            result.log_tail = (logs[-LOG_TAIL_CHARS // 2 :] + "\n" + output[-LOG_TAIL_CHARS // 2 :]).strip()
        return result

    def lint(self, problem: Problem, files: Mapping[str, str], *, workspace: Path | None = None) -> LintResult:
        """Compile-only check of the candidate with the simulator the harness uses.

        Icarus: ``iverilog -g2012 -t null`` (parse and elaborate, no code generation);
        Verilator: ``--lint-only``. When Icarus rejects code that slang (a full SystemVerilog parser) accepts,
        ``gap`` is set: the official image's newer Icarus may accept it.
        """
        start = time.monotonic()
        try:
            services = parse_services(problem.harness, self._installed)
        except HarnessError as exc:
            return LintResult(True, False, [f"harness not readable: {exc}"], "none", 0.0)
        service = next((s for s in services if s.generation and "VERILOG_SOURCES" in s.environment), None)
        if service is None or not self.toolchain.env(service.generation or "cocotb2").installed:
            return LintResult(True, False, ["no lintable service; left to the harness"], "none", 0.0)
        sources = service.environment["VERILOG_SOURCES"].split()
        top = service.environment.get("TOPLEVEL", "")
        simulator = service.environment.get("SIM", "icarus").lower()
        run_dir = Path(tempfile.mkdtemp(prefix="cvdp-gym-lint-"))
        try:
            try:
                self._prepare(run_dir, problem, files, workspace)
            except (CandidateError, OSError) as exc:
                return LintResult(False, False, [str(exc)], simulator, time.monotonic() - start)
            present = [s for s in sources if (run_dir / "code" / check_relative_path(s)).exists()]
            if simulator == "verilator":
                argv = ["verilator", "--lint-only", "-Wno-fatal", "-Wno-lint", "-Wno-style", "--timing"]
                argv += ["--top-module", top] if top else []
            else:
                simulator = "icarus"
                argv = ["iverilog", "-g2012", "-t", "null"] + (["-s", top] if top else [])
            argv += sorted({f"-I{posixpath.dirname(s)}" for s in present}) + present
            env = self.toolchain.env(service.generation or "cocotb2")
            outcome = self.sandbox.run(
                argv,
                mounts=[Mount(run_dir / "code", "/code")],
                scratch=run_dir / "scratch",
                cwd="/code",
                env={"HOME": "/tmp"},
                sim_env=env,
                limits=Limits(wall_s=60, output_bytes=20_000),
            )
            ok = outcome.returncode == 0 and not outcome.timed_out
            errors = compile_errors(outcome.output) or ([outcome.output.strip()[-500:]] if not ok else [])
            gap = False
            if not ok and simulator == "icarus" and self.toolchain.reports_gaps:
                gap = bool(sorry_lines(outcome.output)) or self._full_parser_accepts(run_dir, service)
            return LintResult(ok, gap, errors, simulator, time.monotonic() - start)
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)

    def _full_parser_accepts(self, run_dir: Path, service: Service) -> bool:
        """Second opinion from slang, a full SystemVerilog front end, on what Icarus rejected."""
        sources = {}
        for path in service.environment.get("VERILOG_SOURCES", "").split():
            try:
                local = run_dir / "code" / check_relative_path(path)
            except CandidateError:
                return False
            if not local.is_file():
                return False
            sources[path] = local.read_text(encoding="utf-8", errors="replace")
        if not sources:
            return False
        parsed = parse_sources(sources)
        top = service.environment.get("TOPLEVEL")
        return parsed.ok and (not top or top in parsed.modules)


def _writable_roots(run_dir: Path) -> list[Path]:
    """The folders a harness run can write: its run directory, seen at /code/rundir and /rundir."""
    return [run_dir / "code" / "rundir", run_dir / "rundir"]


def _read_logs(run_dir: Path) -> str:
    """The tails of the compiler and simulator logs the harness left in its writable folders."""
    chunks: list[str] = []
    for root in _writable_roots(run_dir):
        if not root.exists():
            continue
        for path in sorted(root.rglob("*.log")):
            if path.is_symlink() or not path.is_file():
                continue  # a link made inside the sandbox must not make us read host files
            try:
                with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
                    size = os.fstat(handle.fileno()).st_size
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
