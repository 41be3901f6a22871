"""``cvdp-gym debug``: one problem's grading workspace, laid out in a folder a person can edit.

The folder is the harness runner's own run folder (``HarnessRunner.prepare``: ``code/`` with
the context and the answer's files, ``harness/``, ``rundir/``, ``scratch/``), kept instead of
removed, with ``debug.json`` (the problem, the answer's file paths, the harness seed, what
``eval`` recorded), ``commands.sh`` and ``README.md``. The command lines are the sandbox's
own (``command_line`` of the backend, from the runner's ``service_call`` and the syntax
stage's ``compile_call``), so what is printed is what grading starts. ``rerun`` grades the
folder as it now is through ``Grader.grade_files`` (every stage), ``shell`` opens ``bash -i``
in the same sandbox call the first harness service gets.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cvdp_gym.data.problems import Problem
from cvdp_gym.errors import DebugError, HarnessError
from cvdp_gym.eval.run import RESULTS, read_rows
from cvdp_gym.grading.grader import Grader
from cvdp_gym.grading.result import GradeResult
from cvdp_gym.harness.lint import compile_call
from cvdp_gym.harness.runner import HarnessRunner, ServiceCall
from cvdp_gym.parsers import extract_files
from cvdp_gym.sandbox.tree_copy import COPY
from cvdp_gym.sandbox.tree_texts import TreeTexts
from cvdp_gym.seeds import draw_seed

__all__ = ["MANIFEST", "Answer", "DebugFolder", "answer_from_file", "answer_from_run", "materialise", "open_folder"]

MANIFEST = "debug.json"
#: Container sandboxes whose shell is their command line client, and the variables that
#: tell the client where its engine is.
CONTAINER_CLIENTS = {"docker": ("DOCKER_",), "podman": ("CONTAINER_", "XDG_")}
COMMANDS = "commands.sh"
README = "README.md"


@dataclass
class Answer:
    """The files an answer gives (workspace path → text), where they came from, and the
    verdict and seed ``eval`` recorded for it (if it came from a run folder)."""

    files: dict[str, str]
    source: str
    seed: int | None = None
    recorded: dict[str, Any] = field(default_factory=dict)


def _extract(problem: Problem, text: str, where: str) -> dict[str, str]:
    """The target files of a model's answer, by the parser grading uses."""
    extraction = extract_files(text, list(problem.targets))
    if not extraction.found_all:
        missing = ", ".join(extraction.missing) or "the target file"
        raise DebugError(f"{where}: no code found for {missing} (eval grades it format_error)")
    return extraction.files


def answer_from_file(problem: Problem, path: Path) -> Answer:
    """A response text as a model would answer (parsed as grading parses it), or a folder of
    files (workspace-relative paths)."""
    if path.is_dir():
        files = dict(TreeTexts(path))
        if not files:
            raise DebugError(f"--answer {path}: the folder holds no text file")
        return Answer(files, f"folder {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DebugError(f"--answer {path}: cannot read it ({exc.__class__.__name__}: {exc})") from None
    return Answer(_extract(problem, text, f"--answer {path}"), f"response file {path}")


def answer_from_run(problem: Problem, run_dir: Path, sample: int | None = None) -> Answer:
    """The answer ``eval`` recorded for ``problem`` in ``run_dir`` (``sample``: which one;
    default the first), with its verdict and harness seed."""
    results = run_dir / RESULTS
    if not results.is_file():
        raise DebugError(f"--run {run_dir}: no {RESULTS} there (not an eval run folder)")
    rows = sorted((r for r in read_rows(results) if r["id"] == problem.id), key=lambda r: r["sample"])
    if sample is not None:
        rows = [r for r in rows if r["sample"] == sample]
    if not rows:
        which = f"sample {sample} of {problem.id}" if sample is not None else problem.id
        raise DebugError(f"--run {run_dir}: {RESULTS} has no answer to {which}")
    row = rows[0]
    where = f"--run {run_dir} ({problem.id} sample {row['sample']})"
    if isinstance(row.get("transcript"), str):
        files = _episode_files(run_dir / row["transcript"], where)
    elif isinstance(row.get("response"), str):
        files = _extract(problem, row["response"], where)
    else:
        raise DebugError(f"{where}: the record has neither a response text nor a transcript; use --answer")
    recorded = {k: row.get(k) for k in ("verdict", "reason", "tests_passed", "tests_total", "sample")}
    seed = row.get("seed") if isinstance(row.get("seed"), int) else None
    return Answer(files, f"sample {row['sample']} of {run_dir}", seed, recorded)


def _episode_files(path: Path, where: str) -> dict[str, str]:
    """The files an episode's grade took (``answer_files`` of its transcript)."""
    try:
        transcript = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DebugError(f"{where}: cannot read its transcript {path} ({exc.__class__.__name__})") from None
    files = transcript.get("answer_files") if isinstance(transcript, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise DebugError(f"{where}: its transcript {path} records no graded files (written before they were kept); use --answer")
    if not files:
        raise DebugError(f"{where}: the episode ended with no file graded ({transcript.get('verdict')}); nothing to lay out")
    return dict(files)


@dataclass
class DebugFolder:
    """A materialised workspace: the problem, the folder and what ``debug.json`` says."""

    problem: Problem
    root: Path
    manifest: dict[str, Any]

    @property
    def seed(self) -> int:
        return int(self.manifest["seed"])

    def files(self) -> dict[str, str]:
        """The answer's files as they now are in ``code/`` (edits included)."""
        out: dict[str, str] = {}
        for rel in self.manifest["files"]:
            path = self.root / "code" / rel
            try:
                out[rel] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise DebugError(f"{path}: cannot read the answer's file ({exc.__class__.__name__})") from None
        return out

    def graded_problem(self) -> Problem:
        """The problem with the harness as it now is in ``harness/`` (edits included)."""
        return replace(self.problem, harness=dict(TreeTexts(self.root / "harness")))


def materialise(problem: Problem, answer: Answer, out: Path, runner: HarnessRunner, *, force: bool = False) -> DebugFolder:
    """Lay out ``problem``'s run folder with ``answer``'s files in ``out`` (refusing a
    non-empty folder unless ``force``), and write its manifest, commands and README."""
    if out.exists() and not out.is_dir():
        raise DebugError(f"--out {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise DebugError(f"--out {out}: the folder is not empty; --force replaces it, --rerun or --shell alone use it as it is")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    runner.prepare(out, problem, answer.files, None, tree_strategy=COPY if problem.repo is not None else None)
    manifest = {
        "problem": problem.id,
        "files": sorted(answer.files),
        "answer": answer.source,
        "seed": answer.seed if answer.seed is not None else draw_seed(),
        "sandbox": runner.versions.get("sandbox"),
        "toolchain": runner.toolchain.kind,
        "recorded": answer.recorded,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    folder = DebugFolder(problem, out, manifest)
    write_commands(folder, runner)
    return folder


def open_folder(problem: Problem, out: Path) -> DebugFolder:
    """An existing debug folder of ``problem`` (``debug.json`` checked)."""
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise DebugError(f"{out}: not a debug folder (no readable {MANIFEST}); run cvdp-gym debug {problem.id} first") from None
    if not isinstance(manifest, dict) or manifest.get("problem") != problem.id:
        raise DebugError(f"{out}: a debug folder of another problem ({manifest.get('problem') if isinstance(manifest, dict) else '?'})")
    return DebugFolder(problem, out, manifest)


def service_calls(folder: DebugFolder, runner: HarnessRunner) -> list[tuple[str, ServiceCall | str]]:
    """Each harness service's sandbox call in this folder, or why it cannot run here."""
    problem = folder.graded_problem()
    try:
        services = runner.services(problem)
    except HarnessError as exc:
        raise DebugError(f"{problem.id}: the harness cannot be read: {exc}") from None
    out: list[tuple[str, ServiceCall | str]] = []
    for service in services:
        call = runner.service_call(folder.root, problem, service, runner.options.limits, folder.seed)
        out.append((service.name, call if isinstance(call, ServiceCall) else call.reason))
    return out


def command_lines(folder: DebugFolder, runner: HarnessRunner) -> list[tuple[str, list[str] | str]]:
    """The sandbox command lines grading starts in this folder, in order: the syntax stage's
    compile, then each harness service (or why one cannot run here)."""
    sandbox = runner.sandbox
    build = getattr(sandbox, "command_line", None)
    if build is None:
        raise DebugError(f"the {getattr(sandbox, 'name', 'given')} sandbox cannot print its command lines")
    lines: list[tuple[str, list[str] | str]] = []
    problem = folder.graded_problem()
    lint = runner.lint_service(runner.services(problem)) if problem.harness else None
    if lint is not None:
        argv, kwargs, simulator = compile_call(runner.toolchain, folder.root, lint)
        lines.append((f"syntax ({simulator}, compile only)", build(argv, **kwargs)))
    for name, call in service_calls(folder, runner):
        lines.append((f"harness service {name}", call if isinstance(call, str) else build(call.argv, **call.sandbox_kwargs())))
    return lines


def write_commands(folder: DebugFolder, runner: HarnessRunner) -> list[tuple[str, list[str] | str]]:
    """Write ``commands.sh`` and ``README.md``; returns the command lines."""
    lines = command_lines(folder, runner)
    script = ["#!/bin/sh", f"# The sandbox commands grading runs for {folder.problem.id} in this folder.", "set -x"]
    for label, line in lines:
        script += ["", f"# {label}", shlex.join(line) if isinstance(line, list) else f"# cannot run here: {line}"]
    (folder.root / COMMANDS).write_text("\n".join(script) + "\n", encoding="utf-8")
    os.chmod(folder.root / COMMANDS, 0o755)
    pid = folder.problem.id
    readme = f"""# Debugging {pid}

- `code/`: the workspace the harness sees at `/code` (the answer's files: {", ".join(folder.manifest["files"]) or "none"});
  edit the RTL here.
- `harness/`: the problem's harness (`/src` and the other mounts); edits count on `--rerun`.
- `rundir/`, `scratch/`: `/rundir` and the sandbox's `/tmp`.
- `{COMMANDS}`: the sandbox command lines grading runs (syntax check, then each harness service).

Grade the folder as it is now: `cvdp-gym debug {pid} --out {folder.root} --rerun`
Open a shell in the same sandbox: `cvdp-gym debug {pid} --out {folder.root} --shell`
"""
    (folder.root / README).write_text(readme, encoding="utf-8")
    return lines


def rerun(folder: DebugFolder, grader: Grader) -> GradeResult:
    """Grade the folder as it now is (the answer's files, the context and the harness, edits
    included) through every grading stage, with the folder's harness seed."""
    problem = folder.graded_problem()
    files = folder.files()
    with tempfile.TemporaryDirectory(prefix="cvdp-gym-debug-") as tmp:
        # A snapshot of code/ without what earlier runs left in its rundir/ (a stale build).
        workspace = Path(tmp) / "code"
        code = folder.root / "code"
        shutil.copytree(code, workspace, symlinks=True, ignore=lambda d, names: names if Path(d) == code / "rundir" else [])
        return grader.grade_files(problem, files, workspace=workspace, seed=folder.seed)


def shell_command(folder: DebugFolder, runner: HarnessRunner, service: str | None = None) -> list[str]:
    """``bash -i`` in the sandbox call of ``service`` (default: the first that can run here),
    with its mounts, working directory, variables, limits and toolchain."""
    calls = service_calls(folder, runner)
    runnable = [(name, call) for name, call in calls if isinstance(call, ServiceCall)]
    if service is not None:
        runnable = [(name, call) for name, call in runnable if name == service]
    if not runnable:
        names = ", ".join(name for name, _ in calls) or "none"
        which = f"harness service {service!r}" if service else "harness service"
        raise DebugError(f"{folder.problem.id}: no {which} that can run here (services: {names})")
    call = runnable[0][1]
    engine = runner.sandbox.name
    if engine in CONTAINER_CLIENTS and shutil.which(engine) is None:
        raise DebugError(f"--shell with --sandbox {engine} needs the {engine} command line client on PATH")
    kwargs = call.sandbox_kwargs()
    kwargs["env"] = {**call.env, "TERM": os.environ.get("TERM", "dumb")}
    return runner.sandbox.command_line(["bash", "-i"], interactive=True, **kwargs)


def shell(folder: DebugFolder, runner: HarnessRunner, service: str | None = None) -> int:
    """Run the interactive shell on this terminal; returns its exit status."""
    line = shell_command(folder, runner, service)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    if runner.sandbox.name in CONTAINER_CLIENTS:
        prefixes = CONTAINER_CLIENTS[runner.sandbox.name]
        env.update({k: v for k, v in os.environ.items() if k.startswith(prefixes) or k == "HOME"})
    return subprocess.call(line, env=env)
