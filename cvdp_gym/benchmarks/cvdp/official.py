"""CVDP's official runner for ``parity``: a user's clone of NVlabs/cvdp_benchmark on the answers,
beside this tool's harness runs, one row each.

``run_parity`` grades each answer here (the harness, as ``cvdp-gym check``), writes the answers as
the official runner's golden-mode input (:func:`cvdp_gym.parity.answers.official_datasets`), runs
the clone with Docker (``run_official``, images mapped by ``OfficialImages``), reads its verdicts
(``read_verdicts``) and pairs them (:class:`cvdp_gym.parity.compare.ParityRow`). ``parity`` reaches
it by name (``OFFICIAL_RUNNERS``, :mod:`cvdp_gym.parity.cvdp`). Unlike the other benchmarks'
official flows (``OFFICIAL_FLOWS``: one script per answer, in the sandbox), the official runner
runs a whole dataset in Docker itself, so CVDP lists none of those.

Contract: ``run_official(repo, dataset, work, ...)`` runs ``run_benchmark.py -f DATASET -p
WORK`` in golden mode (no ``-l``: it runs each record's reference solution, which the
parity dataset made the answer) with the given Python, in the repository (it mounts
``src/llm_lib`` from there), and returns its exit status and console output; it never
edits the official code or the dataset's harnesses. ``read_verdicts(work)`` reads the
``raw_result.json`` it leaves (``{id: {"tests": [{"result", "log", "error_msg"}, ...],
"errors": N}}``, one test per compose service; ``errors == 0`` is a pass) and each
service's log, and classifies every failure: a failure of the machine (``machine_failure``:
a compose ``build:`` step that needs the default bridge network, an external network such
as ``licnetwork`` that does not exist, an image that cannot be pulled, no ``docker
compose``) is reported as such, never as a verdict.

Images: the official runner asks Docker for the images the compose files name
(``__OSS_SIM_IMAGE__`` becomes ``nvidia/cvdp-sim:v1.0.0``) and for ``patch_image``. No
registry is reachable here, so ``OfficialImages`` tags each name it would pull to an image
made from our stand-in (the pinned root, ``cvdp-gym toolchain docker-image``) with the
cocotb environment of the name's generation first on ``PATH`` (the official image's venv
is on its ``PATH``), as our Docker backend maps those names; names already present are
left alone, and the tags made are removed afterwards.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cvdp_gym.check import CheckJob, run_jobs
from cvdp_gym.data.problems import CVDP, Problem
from cvdp_gym.errors import ConfigError, HarnessError
from cvdp_gym.harness.compose import image_generation, parse_services
from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.parity.answers import Answer, official_datasets
from cvdp_gym.parity.compare import ParityRow
from cvdp_gym.parity.official import FAILED, MACHINE, MISSING, PASSED, OfficialVerdict
from cvdp_gym.parity.official_runner import OfficialRunner
from cvdp_gym.sandbox.docker import DockerSandbox
from cvdp_gym.sandbox.docker_images import PLACEHOLDERS, image_exists

__all__ = [
    "OFFICIAL_RUNNERS",
    "OfficialImages",
    "check_official_repo",
    "docker_compose_ok",
    "machine_failure",
    "official_python",
    "read_verdicts",
    "run_official",
    "run_parity",
]

#: The image the official runner builds for repository-context problems (``FROM ubuntu``).
PATCH_IMAGE = "patch_image"
#: What a machine failure looks like in a service's log, and what to call it.
_MACHINE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"network bridge not found"), "a compose build: step needs Docker's default bridge network (dockerd --bridge=none)"),
    (re.compile(r"network (\S+) declared as external, but could not be found"), "external network {0} does not exist"),
    (re.compile(r"ERROR: Get \"(https?://\S+?)\": dial tcp"), "a Dockerfile step fetches {0}, and no network is reachable"),
    (re.compile(r"pull access denied|failed to resolve reference|manifest unknown|registry-1\.docker\.io|no such host|"
                r"Error response from daemon: Get \"https://|repository does not exist"), "an image it needs cannot be pulled (no registry reachable)"),
    (re.compile(r"unknown command: docker compose|'compose' is not a docker command|unknown shorthand flag: 'f' in -f"), "no docker compose (v2 plugin) on this machine"),
    (re.compile(r"Cannot connect to the Docker daemon"), "no Docker engine answers"),
)


def official_python(repo: Path, python: str | None) -> str:
    """The interpreter for the official runner: ``python``, else the clone's ``.venv``/``venv``."""
    if python:
        return python
    for name in (".venv", "venv"):
        candidate = repo / name / "bin" / "python"
        if candidate.exists():
            return str(candidate)
    return sys.executable


def check_official_repo(repo: Path) -> None:
    """A clear error unless ``repo`` looks like a clone of NVlabs/cvdp_benchmark."""
    if not (repo / "run_benchmark.py").is_file() or not (repo / "src" / "repository.py").is_file():
        raise ConfigError(f"{repo} is not a clone of NVlabs/cvdp_benchmark (no run_benchmark.py and src/repository.py)")


def docker_compose_ok() -> str | None:
    """None when ``docker compose`` (the v2 plugin the official runner calls) works, else why not."""
    try:
        done = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker compose: {exc}"
    if done.returncode != 0:
        return ("the official runner calls `docker compose` (the Compose v2 plugin), which is missing: "
                "install Debian's docker-compose package (trixie or later) or Docker's docker-compose-plugin "
                f"({(done.stderr or done.stdout).strip()[:200]})")
    return None


def run_official(repo: Path, dataset: Path, work: Path, *, python: str, threads: int = 1, timeout_s: float | None = None) -> tuple[int, str]:
    """Run the official runner in golden mode on ``dataset``; (exit status, console output)."""
    command = [python, "run_benchmark.py", "-f", str(dataset.resolve()), "-p", str(work.resolve()), "-t", str(max(1, threads))]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return -9, out + f"\n(killed after {timeout_s} s)"
    return done.returncode, done.stdout + done.stderr


def machine_failure(text: str) -> str | None:
    """The machine failure a log shows, in words, or None."""
    for pattern, what in _MACHINE_PATTERNS:
        found = pattern.search(text)
        if found:
            return what.format(*found.groups())
    return None


def read_verdicts(work: Path, ids: Iterable[str], console_output: str = "") -> dict[str, OfficialVerdict]:
    """Each id's verdict from ``work/raw_result.json`` (MISSING when the runner gave none)."""
    path = work / "raw_result.json"
    raw: dict[str, Any] = {}
    if path.exists():
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raw = {}
    out: dict[str, OfficialVerdict] = {}
    for pid in ids:
        entry = raw.get(pid)
        if not isinstance(entry, dict):
            why = machine_failure(console_output) or "the official runner recorded no result for it"
            out[pid] = OfficialVerdict(pid, MACHINE if machine_failure(console_output) else MISSING, why)
            continue
        out[pid] = _verdict(pid, entry)
    return out


def _verdict(pid: str, entry: dict[str, Any]) -> OfficialVerdict:
    tests = [t for t in entry.get("tests") or [] if isinstance(t, dict)]
    logs = [str(t["log"]) for t in tests if t.get("log")]
    seconds = sum(float(t.get("execution") or 0.0) for t in tests)
    texts = []
    for log in logs:
        try:
            texts.append(Path(log).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            texts.append("")
    errors = [str(t["error_msg"]) for t in tests if t.get("error_msg")]
    failing = [text for t, text in zip([t for t in tests if t.get("log")], texts, strict=False) if t.get("result")]
    tail = ("\n".join(errors) + "\n" + "\n".join(failing or texts))[-4000:].strip()
    if entry.get("errors") == 0 and tests:
        return OfficialVerdict(pid, PASSED, "", logs, tail, seconds)
    why = machine_failure("\n".join(errors + failing))
    if why is not None:
        return OfficialVerdict(pid, MACHINE, why, logs, tail, seconds)
    if not failing and errors:
        return OfficialVerdict(pid, MACHINE, f"the official runner failed before the harness ran: {errors[0][:200]}", logs, tail, seconds)
    return OfficialVerdict(pid, FAILED, f"{sum(1 for t in tests if t.get('result'))} of {len(tests)} service(s) failed", logs, tail, seconds)


class OfficialImages:
    """Tags the images the official runner would pull to stand-ins; ``close()`` removes them."""

    def __init__(self, sandbox: DockerSandbox) -> None:
        self.sandbox = sandbox
        self.client = sandbox.client
        self.created: list[str] = []
        self.unmapped: dict[str, str] = {}  # image -> why no stand-in

    def _derived(self, generation: str) -> str:
        """Our stand-in with ``generation``'s environment first on PATH (built once, no network)."""
        base = self.sandbox.ensure_standin()
        tag = f"cvdp-gym/official-sim-{generation}:{base.rsplit(':', 1)[-1]}"
        if not image_exists(self.client, tag):
            dockerfile = f"FROM {base}\nENV PATH=/opt/cvdp/{generation}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
            self.client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, network_mode="none")
        return tag

    def prepare(self, problems: Iterable[Problem], *, agentic: bool) -> list[str]:
        """Tag every image the problems' services name (and ``patch_image`` for agentic runs); the names tagged."""
        wanted: dict[str, str] = {}
        for problem in problems:
            try:
                services = parse_services(problem.harness)
            except HarnessError:
                continue
            for service in services:
                name = PLACEHOLDERS.get(service.image.strip(), service.image.strip())
                if not name:
                    continue
                if ":" not in name.rsplit("/", 1)[-1] and "@" not in name:
                    name += ":latest"
                generation = image_generation(name)
                if generation is None:
                    self.unmapped[name] = service.unsupported or "not a simulator image this tool stands in for"
                else:
                    wanted[name] = generation
        if agentic:
            wanted.setdefault(f"{PATCH_IMAGE}:latest", "cocotb2")
        for name, generation in sorted(wanted.items()):
            if image_exists(self.client, name):
                continue
            repository, _, tag = name.rpartition(":")
            self.client.images.get(self._derived(generation)).tag(repository, tag)
            self.created.append(name)
        return list(self.created)

    def close(self) -> None:
        for name in self.created:
            try:
                self.client.images.remove(name, noprune=True)
            except Exception:  # already gone: nothing to undo
                continue
        self.created = []


def run_parity(
    answers: list[Answer],
    *,
    runner: HarnessRunner,
    official_repo: Path,
    work: Path,
    python: str | None = None,
    threads: int = 1,
    jobs: int = 1,
    seed: int | None = None,
    timeout_s: float | None = None,
    on_step: Callable[[str], None] = lambda _: None,
    on_ours: Callable[[str], None] = lambda _: None,
) -> list[ParityRow]:
    """Grade ``answers`` here and with the official runner; one row per answer.

    ``work``: where the official runner's datasets, work folders and logs go; ``threads``:
    the official runner's ``-t``; ``jobs``: our harness runs in parallel; ``seed``: our
    harness seed (default: fresh, recorded per row).
    """
    check_official_repo(official_repo)
    images = OfficialImages(DockerSandbox(runner.toolchain))  # no engine: SandboxUnavailable, before any work
    compose_problem = docker_compose_ok()
    problem_jobs = [CheckJob(a.problem, f"{a.index}", a.files, "?") for a in answers]
    on_step("grading here")
    ours = {o.name: o.result for o in run_jobs(problem_jobs, runner, jobs_parallel=jobs, seed=seed, on_done=lambda o: on_ours(o.problem_id))}
    datasets = official_datasets(answers, work / "datasets")
    official: dict[str, OfficialVerdict] = {}
    try:
        for dataset in datasets.files:
            ids = [i for i, a in datasets.ids.items() if ("agentic" in dataset.name) == a.problem.agentic]
            if compose_problem is not None:
                official.update({i: OfficialVerdict(i, MACHINE, compose_problem) for i in ids})
                continue
            images.prepare([datasets.ids[i].problem for i in ids], agentic="agentic" in dataset.name)
            on_step(f"official runner on {dataset.name} ({len(ids)} answers)")
            out_dir = work / dataset.stem
            code, output = run_official(
                official_repo, dataset, out_dir, python=official_python(official_repo, python), threads=threads, timeout_s=timeout_s
            )
            (work / f"{dataset.stem}.console.log").write_text(output, encoding="utf-8")
            official.update(read_verdicts(out_dir, ids, output if code != 0 else ""))
    finally:
        images.close()
    rows: list[ParityRow] = []
    by_answer = {a.index: i for i, a in datasets.ids.items()}
    for answer in answers:
        verdict = official.get(by_answer.get(answer.index, ""))
        if verdict is None:
            reason = next((why for a, why in datasets.left_out if a.index == answer.index), "not run by the official runner")
            verdict = OfficialVerdict("", "missing", reason)
        rows.append(ParityRow(answer, ours[str(answer.index)], verdict))
    return rows


#: None: the official runner is not a per-answer script in the sandbox (``run_parity`` runs it).
#: CVDP's parity run, by benchmark name (:mod:`cvdp_gym.plugins`).
OFFICIAL_RUNNERS: dict[str, OfficialRunner] = {CVDP: run_parity}
