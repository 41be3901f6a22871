"""Run a CVDP problem's harness, unchanged, on candidate files.

This is the local equivalent of the official flow (``docker compose run`` of each service
of the harness's ``docker-compose.yml``): the workspace with the candidate's files at
``/code``, the harness's ``src/`` read-only at ``/src``, the service's other relative
mounts, ``env_file`` variables, its command and working directory, one service after
another. It runs in a sandbox (bubblewrap on the pinned simulation root by default, or the
Docker backend) in place of the image, and everything is written inside one temporary
directory that is removed afterwards. Every result records the toolchain that graded it.

A repository-context ("heavy") problem's workspace is its repository's checked-out tree
(``external/``, from the runner's :class:`~cvdp_gym.data.repos.RepoStore`) or the agent's
workspace, as a copy-on-write copy (:mod:`cvdp_gym.sandbox.tree_copy`) with the candidate's
files written over it; as in the official heavy layout, ``/code`` holds only that tree
(no ``docs/rtl/verif/rundir`` folders are added), ``/src`` and ``/rundir`` are mounted
beside it and the working directory is ``/rundir``. A repository that cannot be found is an
``unsupported`` result whose reason says where the runner looked.
"""

from __future__ import annotations

import posixpath
import shutil
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cvdp_gym.data.problems import Problem
from cvdp_gym.data.repos import RepoStore
from cvdp_gym.errors import RepoUnavailable
from cvdp_gym.gate import NEVER, check
from cvdp_gym.harness.compose import HarnessError, Service, parse_services
from cvdp_gym.harness.flows import flow_for
from cvdp_gym.harness.lint import LintResult, compile_only, full_parser_accepts
from cvdp_gym.harness.logs import read_logs, writable_roots
from cvdp_gym.harness.randomness import seed_environment, write_seed_module
from cvdp_gym.harness.results import (
    BUILD_ERROR,
    HARNESS_ERROR,
    INFRA_ERROR,
    REACH_IN,
    RESOURCE_LIMIT,
    TEST_FAILURE,
    TIMEOUT,
    TOOLCHAIN_GAP,
    UNSUPPORTED,
    HarnessResult,
    ServiceResult,
    TestCounts,
    classify_failure,
    os_failure_class,
    pytest_summary,
)
from cvdp_gym.harness.testbench import reach_in_result
from cvdp_gym.harness.watch import RUN_TAG, ResultsWatcher
from cvdp_gym.sandbox.base import Limits, Mount, Sandbox, SandboxResult
from cvdp_gym.sandbox.bwrap import BubblewrapSandbox
from cvdp_gym.sandbox.paths import WORKSPACE_DIRS, UnsafePathError, check_relative_path, write_tree
from cvdp_gym.sandbox.scratch import make_scratch_dir
from cvdp_gym.sandbox.tree_copy import TreeCopy, copy_tree
from cvdp_gym.seeds import draw_seed
from cvdp_gym.toolchain import SimEnv, Toolchain

#: The path helpers live in ``cvdp_gym.sandbox.paths`` and ``LintResult`` in ``lint.py``;
#: re-exported for ``from cvdp_gym.harness.runner import ...``.
__all__ = [
    "LOG_TAIL_CHARS",
    "WORKSPACE_DIRS",
    "CandidateError",
    "HarnessRunner",
    "LintResult",
    "RunOptions",
    "ServiceCall",
    "check_relative_path",
    "installed_distributions",
    "run_harness",
    "write_tree",
]

LOG_TAIL_CHARS = 4000
#: What this module raised for a candidate path outside the workspace; the same class as
#: ``cvdp_gym.sandbox.paths.UnsafePathError`` (kept under its old name).
CandidateError = UnsafePathError


@dataclass
class RunOptions:
    """How to run: limits per service and whether to keep the run folder for inspection."""

    limits: Limits = field(default_factory=Limits)
    keep_dir: Path | None = None  # copy the run folder here before removing it
    gap_check: bool = True  # host toolchain: on an Icarus build error, ask slang for a second opinion


@dataclass
class ServiceCall:
    """One service's sandbox call: ``sandbox.run(argv, **sandbox_kwargs())``."""

    service: Service
    argv: list[str]
    mounts: list[Mount]
    scratch: Path
    cwd: str
    env: dict[str, str]
    sim_env: SimEnv
    limits: Limits
    image: str | None
    tag: str  # RUN_TAG: marks this run's cocotb results files

    def sandbox_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``Sandbox.run`` (and of a backend's ``command_line``)."""
        return {
            "mounts": self.mounts, "scratch": self.scratch, "cwd": self.cwd, "env": self.env,
            "sim_env": self.sim_env, "limits": self.limits, "image": self.image,
        }


class HarnessRunner:
    """Runs harnesses in a sandbox; one instance can serve many runs (and threads).

    ``repos``: where repository-context problems find their repositories (default: a
    :class:`~cvdp_gym.data.repos.RepoStore` of ``$CVDP_HEAVY_REPOS_PATH``).
    """

    def __init__(self, sandbox: Sandbox | None = None, options: RunOptions | None = None, *, repos: RepoStore | None = None):
        self.sandbox: Sandbox = sandbox or BubblewrapSandbox()
        self.repos = repos if repos is not None else RepoStore()
        self.toolchain = self.sandbox.toolchain
        self.options = options or RunOptions()
        self.versions = {"sandbox": getattr(self.sandbox, "name", type(self.sandbox).__name__), **self.toolchain.versions()}
        self._installed = installed_distributions(self.toolchain)

    def run(
        self,
        problem: Problem,
        files: Mapping[str, str],
        *,
        workspace: Path | None = None,
        limits: Limits | None = None,
        seed: int | None = None,
    ) -> HarnessResult:
        """Judge ``files`` (workspace-relative path → text) against ``problem``'s harness.

        ``workspace``: an existing workspace folder (an agent's) to start from instead of
        the problem's context files; ``files`` are then written over it. ``seed``: the
        seed of the harness's Python randomness and cocotb's (a fresh one when None); the
        result records it, and the same seed reproduces the run.
        """
        seed = draw_seed() if seed is None else seed
        result = self._run(problem, files, workspace, limits, seed)
        result.toolchain = {**self.versions, **result.toolchain}
        if result.services and (problem.flow is None or _seeded(problem.flow)):  # most flows draw nothing at random
            result.seed = seed
        return result

    def _run(
        self, problem: Problem, files: Mapping[str, str], workspace: Path | None, limits: Limits | None, seed: int
    ) -> HarnessResult:
        start = time.monotonic()
        missing = self.unavailable(problem)
        if missing:
            return HarnessResult.failure(problem.id, UNSUPPORTED, missing)
        if problem.flow is not None:
            return self._run_flow(problem, files, limits, seed)
        # The answer gate (cvdp_gym.gate): every RTL file of the answer (an agent's whole
        # workspace) and all it includes, read as the tools read it, against the design allowlist.
        try:
            baseline = self.repos.problem_tree(problem) if problem.repo is not None and workspace is not None else None
        except RepoUnavailable as exc:
            return HarnessResult.failure(problem.id, UNSUPPORTED, str(exc))
        found = check(files, supplied=problem.context, rules=NEVER, workspace=workspace, baseline=baseline)
        if found.findings:
            service = ServiceResult(
                "static check", False, REACH_IN, found.reason, None, tests=TestCounts(1, 0, 1),
                notes=[str(f) for f in found.findings],
            )
            return HarnessResult(problem.id, False, REACH_IN, found.reason, services=[service])
        try:
            services = self.services(problem)
        except HarnessError as exc:
            return HarnessResult.failure(problem.id, HARNESS_ERROR, str(exc))
        run_dir = make_scratch_dir("run")
        tree: TreeCopy | None = None
        try:
            try:
                tree = self.prepare(run_dir, problem, files, workspace)
            except RepoUnavailable as exc:
                return HarnessResult.failure(problem.id, UNSUPPORTED, str(exc))
            except (UnsafePathError, OSError) as exc:
                return HarnessResult.failure(problem.id, os_failure_class(exc) if isinstance(exc, OSError) else BUILD_ERROR, str(exc))
            results = [
                self._run_service(run_dir, problem, service, limits or self.options.limits, seed)
                for service in services
            ]
        finally:
            if self.options.keep_dir is not None:
                shutil.copytree(run_dir, self.options.keep_dir / problem.id, dirs_exist_ok=True, symlinks=True)
            _remove_run_dir(run_dir, tree)
        failed = [r for r in results if not r.passed]
        # A candidate that does not compile is a build error, whichever service saw it first
        # (a lint service before the simulation reports it as its own assertion).
        first = next((r for r in failed if r.failure_class in (BUILD_ERROR, TOOLCHAIN_GAP)), failed[0] if failed else None)
        return HarnessResult(
            problem_id=problem.id,
            passed=not failed,
            failure_class=first.failure_class if first else None,
            reason=(f"{first.name}: {first.reason}" if len(results) > 1 else first.reason) if first else "",
            services=results,
            wall_s=time.monotonic() - start,
        )

    def unavailable(self, problem: Problem) -> str | None:
        """Why ``problem`` cannot be run here at all (unsupported, the simulator it needs is
        missing, or its repository is not found), or None. Cheap: it checks out nothing."""
        return problem.unsupported or self.toolchain.simulator_missing(problem.toolchain) or self.repos.missing(problem)

    def _run_flow(self, problem: Problem, files: Mapping[str, str], limits: Limits | None, seed: int) -> HarnessResult:
        """A benchmark problem: its own flow (``harness.flows``) in this runner's sandbox, given the
        run's seed (a flow that draws at random, the verification tasks' mutants, draws from it)."""
        flow = flow_for(problem.flow or "")
        if flow is None:
            return HarnessResult.failure(problem.id, HARNESS_ERROR, f"no test-bench flow called {problem.flow!r}")
        keep = self.options.keep_dir / problem.id if self.options.keep_dir is not None else None
        try:
            result = flow.run(self.sandbox, problem, files, limits=limits or self.options.limits, keep_dir=keep, seed=seed)
        except (UnsafePathError, OSError) as exc:
            return HarnessResult.failure(problem.id, os_failure_class(exc) if isinstance(exc, OSError) else BUILD_ERROR, str(exc))
        supplied = flow.supplied(problem) if hasattr(flow, "supplied") else {}
        result = _gated(result, files, getattr(flow, "answer_kind", "design"), supplied)
        result.toolchain = {**result.toolchain, "simulator": self.toolchain.simulator_version(problem.toolchain)}
        return result

    def services(self, problem: Problem) -> list[Service]:
        """The harness's services, in the order they run (``HarnessError`` if unreadable)."""
        return parse_services(problem.harness, self._installed)

    def prepare(
        self, run_dir: Path, problem: Problem, files: Mapping[str, str], workspace: Path | None,
        *, tree_strategy: str | None = None,
    ) -> TreeCopy | None:
        """Lay out the run folder (``code/``, ``harness/``, ``rundir/``, ``scratch/``); returns
        the copy of a repository problem's tree (to close). ``tree_strategy``: how that tree is
        copied (``tree_copy.STRATEGIES``; a folder that outlives the run wants a plain copy)."""
        code = run_dir / "code"
        harness = run_dir / "harness"
        for folder in (harness, run_dir / "rundir", run_dir / "scratch"):
            folder.mkdir(parents=True)
        write_seed_module(run_dir / "scratch" / "tmp")  # seeds the harness's Python (randomness.py)
        if problem.repo is not None:
            # The official heavy layout: /code is the repository's tree (or the agent's
            # copy of it) and nothing else; /src and /rundir are mounted beside it.
            base = workspace if workspace is not None else self.repos.problem_tree(problem)
            # A container engine binds /code itself: a mount must be in its namespace too.
            visible_to = getattr(self.sandbox, "engine_process", None)
            tree = copy_tree(base, code, strategy=tree_strategy, visible_to=visible_to)
            try:
                write_tree(harness, problem.harness)
                write_tree(code, files)
            except BaseException:
                tree.close()
                raise
            return tree
        code.mkdir()
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
        return None

    def service_call(
        self, run_dir: Path, problem: Problem, service: Service, limits: Limits, seed: int
    ) -> ServiceCall | ServiceResult:
        """The sandbox call that runs ``service`` in the laid-out ``run_dir`` (its mounts,
        working directory, variables and limits), or the result of a service that cannot
        run here. ``run`` makes its calls with this, and ``cvdp-gym debug`` prints them."""
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
        _make_working_dir(cwd, mounts)
        tag = uuid.uuid4().hex
        # The official image carries cocotb 2 only: cocotb 1.x harnesses use the stand-in.
        image = service.image if service.generation == "cocotb2" else None
        environment = {
            "HOME": "/code/rundir", **self._build_cache_env(image), **service.environment, RUN_TAG: tag,
            **seed_environment(seed, service.generation, service.environment),
        }
        return ServiceCall(
            service, list(service.command), mounts, run_dir / "scratch", cwd, environment, env, limits, image, tag
        )

    def _run_service(self, run_dir: Path, problem: Problem, service: Service, limits: Limits, seed: int) -> ServiceResult:
        call = self.service_call(run_dir, problem, service, limits, seed)
        if isinstance(call, ServiceResult):
            return call
        watched = {m.target: m.source for m in call.mounts if m.writable}
        for attempt in range(2):
            started = time.time()
            with ResultsWatcher(writable_roots(run_dir), tag=call.tag, mounts=watched) as watcher:
                outcome = self.sandbox.run(call.argv, **call.sandbox_kwargs())
            # The watcher fell behind (a results file gone before it read it, the next
            # simulation's clean build deleted it while a loaded machine held the watcher back;
            # lost events; a file written before its folder was watched): the counts would miss
            # tests, or a write would go unseen. Run the service once more.
            if not watcher.behind or outcome.timed_out or attempt:
                break
        result = self._service_result(run_dir, service, outcome, service.generation or "", watcher, started)
        if watcher.lost and result.passed:
            # Read twice and still short: the machine, not the answer (the gate lets a design
            # delete no file), so no verdict rather than a pass on counts that miss tests.
            result.passed = False
            result.failure_class = INFRA_ERROR
            result.reason = f"{watcher.lost} results file(s) gone before they could be read, twice: no verdict"
        elif watcher.lost:
            result.notes.append(f"{watcher.lost} results file(s) gone before they could be read: test counts are short")
        # A pass needs the watcher to vouch for every results file (fail closed): one it could
        # not read, too many, lost events or an unwatched folder: never a pass.
        problems = watcher.problems
        if problems and result.passed:
            result.passed = False
            result.failure_class = TEST_FAILURE
            result.reason = "the results files cannot be vouched for: " + "; ".join(problems)
        elif problems:
            result.notes.extend(problems)
        return result

    def _build_cache_env(self, image: str | None) -> dict[str, str]:
        """The root's read-only Verilator runtime cache, wherever the command runs on that root.

        A backend that picks an image per service says whether that image holds the cache
        (``serves_runtime_cache``): the official ``nvidia/cvdp-sim`` has none (and no ccache).
        """
        serves = getattr(self.sandbox, "serves_runtime_cache", None)
        if serves is not None and not serves(image):
            return {}
        return self.toolchain.build_cache_env()

    def _service_result(
        self,
        run_dir: Path,
        service: Service,
        outcome: SandboxResult,
        env_generation: str,
        watcher: ResultsWatcher,
        started: float,
    ) -> ServiceResult:
        output = outcome.output
        pytest_counts, harness_s = pytest_summary(output)
        logs = read_logs(run_dir, since=started)
        # Test counts from cocotb's results files, never from console text a design can print.
        tests = watcher.counts()
        tail = output[-LOG_TAIL_CHARS:]
        result = ServiceResult(
            name=service.name,
            # Cut short is never a pass, whatever pytest printed first: killed at the wall-time
            # limit, or a process of the run killed for memory (a harness can ignore that).
            passed=outcome.returncode == 0 and not outcome.timed_out and not outcome.out_of_memory,
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
                and full_parser_accepts(run_dir, service)
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
        if problem.flow is not None:
            return LintResult(True, False, ["left to the benchmark's own flow"], "none", 0.0)
        try:
            services = self.services(problem)
        except HarnessError as exc:
            return LintResult(True, False, [f"harness not readable: {exc}"], "none", 0.0)
        service = self.lint_service(services)
        if service is None:
            return LintResult(True, False, ["no lintable service; left to the harness"], "none", 0.0)
        run_dir = make_scratch_dir("lint")
        tree: TreeCopy | None = None
        try:
            try:
                tree = self.prepare(run_dir, problem, files, workspace)
            except RepoUnavailable as exc:
                return LintResult(True, False, [f"not linted: {exc}"], "none", 0.0)
            except UnsafePathError as exc:
                simulator = service.environment.get("SIM", "icarus").lower()
                return LintResult(False, False, [str(exc)], simulator, time.monotonic() - start)
            except OSError as exc:  # the machine's, not the answer's: the harness run classifies it
                return LintResult(True, False, [f"not linted: {exc}"], "none", 0.0)
            return compile_only(self.sandbox, self.toolchain, run_dir, service, started=start)
        finally:
            _remove_run_dir(run_dir, tree)


    def lint_service(self, services: list[Service]) -> Service | None:
        """The service whose sources the syntax stage compiles (None: no lint, the harness decides)."""
        service = next((s for s in services if s.generation and "VERILOG_SOURCES" in s.environment), None)
        if service is None or not self.toolchain.env(service.generation or "cocotb2").installed:
            return None
        return service


def _remove_run_dir(run_dir: Path, tree: TreeCopy | None) -> None:
    """Unmount a repository tree's copy (if it is a mount), then remove the run folder."""
    if tree is not None:
        tree.close()
    shutil.rmtree(run_dir, ignore_errors=True)


def installed_distributions(toolchain: Toolchain) -> dict[str, dict[str, str]]:
    """Each installed cocotb environment's Python distributions and versions, as
    ``parse_services`` takes them to judge a Dockerfile's ``RUN pip install`` steps."""
    return {generation: env.package_versions() for generation, env in toolchain.envs.items() if env.installed}


def _make_working_dir(cwd: str, mounts: list[Mount]) -> None:
    """Create a missing working directory inside a writable mount, as Docker does for
    ``working_dir`` (CVDP's lint services run in ``/src/rundir/``, which no harness ships)."""
    target = posixpath.normpath(cwd)
    for mount in sorted(mounts, key=lambda m: len(m.target), reverse=True):
        if target == mount.target or target.startswith(mount.target.rstrip("/") + "/"):
            if mount.writable and target != mount.target:
                folder = Path(mount.source)
                for part in check_relative_path(posixpath.relpath(target, mount.target)).split("/"):
                    folder = folder / part
                    if folder.is_symlink():
                        return  # made in the sandbox: never followed here
                    if not folder.exists():
                        folder.mkdir()
            return


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


def _gated(result: HarnessResult, files: Mapping[str, str], kind: str | None, supplied: Mapping[str, str]) -> HarnessResult:
    """A flow's result after the answer gate, which no flow can leave out: a flow's own call of
    the gate (with the ``FULL`` rules of its run) already made a flagged answer ``reach_in``; a
    flow that did not (a third party's) has its verdict made ``reach_in`` here, its official
    reading kept. ``kind``: the flow's kind of answer (None: a verification task's, whose flow
    reads it by its own rules; only its directives are read here); ``supplied``: the files the
    flow compiles beside the answer in every view (``Flow.supplied``), whose definitions count."""
    if result.failure_class == REACH_IN:
        return result
    found = check(files, supplied=supplied, rules=NEVER, kind=kind or "design", directives_only=kind is None)
    if not found.findings:
        return result
    return reach_in_result(result, found)


def _seeded(flow_name: str) -> bool:
    """Whether the flow called ``flow_name`` draws at random from the run's seed."""
    return bool(getattr(flow_for(flow_name), "seeded", False))
