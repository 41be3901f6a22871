"""CVDP problems as Harbor (``harbor`` 0.25.0) task folders, graded by cvdp-gym's grader.

Harbor runs a task folder: an agent works in the container ``environment/`` builds, then
``tests/test.sh`` runs there and writes ``/logs/verifier/reward.json``. SkyRL, rLLM,
verifiers and NeMo-Gym run Harbor tasks, so one export reaches them all::

    from cvdp_gym.integrations.harbor import export_tasks
    export_tasks("bundled", "harbor-tasks")     # harbor-tasks/<problem id>/, one per problem

Each folder (``write_task``)::

    task.toml            [task] name cvdp-gym/<id>; [metadata] the problem's; timeouts, workdir /code
    instruction.md       the problem as cvdp-gym's environments present it, and where to answer
    environment/         Dockerfile (FROM the simulation image, cvdp-gym installed) + workspace/
    tests/test.sh        grades /code with cvdp-gym's grader: python3 -m cvdp_gym.integrations.harbor
                         (the harness's compose services, one after another, in this one container)
    tests/problem.json   the whole problem record (harness included; the agent never sees tests/)
    solution/solve.sh    writes the reference answer into /code (Harbor's oracle agent)

Single-shot and agentic problems alike: the agent writes the target files at their paths
under ``/code`` (agentic problems start with their context files there, and the whole
workspace is graded as ``CVDP-Agentic-v0`` grades it); a comprehension problem's answer goes
to ``/code/response.txt``. ``grade_task`` is what ``test.sh`` runs: it writes ``reward.json``
(``reward``, the reward's parts, ``passed``; numbers only, as Harbor requires) and
``grade.json`` (the full verdict) into the verifier's log folder.

One container: a task has no ``environment/docker-compose.yaml``, so Harbor's single-container
providers (Modal, E2B, Runloop, Tensorlake...) run it. The harness's compose services are
folded into the task's one image (``fold_harness``): each names the simulation image (or its
place-and-route twin, which the same root carries), and ``test.sh`` runs them one after
another in that container. A problem whose services cannot share it (a service on another
image, a Dockerfile step the image does not replay, a service that needs another running
beside it) is still written, labelled ``one_container = false`` with
``one_container_reason`` in ``task.toml``'s ``[metadata]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.metadata
import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from cvdp_gym.data import Dataset, Problem, load_dataset
from cvdp_gym.data.problems import SCORING_HARNESS, RepoRef
from cvdp_gym.envs.base import make_grader
from cvdp_gym.envs.messages import missing_targets
from cvdp_gym.envs.prompts import agent_task, single_shot_messages
from cvdp_gym.errors import ConfigError, UsageError
from cvdp_gym.grading.result import GradeResult
from cvdp_gym.grading.rewards import make_reward_parts, total
from cvdp_gym.harness.compose import HarnessError, parse_services
from cvdp_gym.harness.runner import installed_distributions
from cvdp_gym.sandbox.container import ContainerSandbox
from cvdp_gym.sandbox.docker_images import OFFICIAL_IMAGE
from cvdp_gym.sandbox.paths import write_tree
from cvdp_gym.toolchain import detect

#: The agent's workspace in the task's container (the official CVDP layout's ``/code``).
WORKSPACE = "/code"
#: A comprehension problem's answer file, under the workspace.
RESPONSE_FILE = "response.txt"
#: Where the image's toolchain folder is: its ``root`` is the image's own ``/`` (the
#: simulation image is the root filesystem cvdp-gym's grader expects).
IMAGE_TOOLCHAIN = "/opt/cvdp-gym-toolchain"

TEST_SH = """#!/usr/bin/env bash
# Grade the agent's workspace with cvdp-gym's grader; write Harbor's reward file.
# /logs/verifier/reward.json: reward, its parts and passed (numbers); grade.json: the verdict.
set -uo pipefail
mkdir -p /logs/verifier
cd /  # not the workspace: grading moves it aside while a harness runs
exec "${{CVDP_GYM_PYTHON:-python3}}" -m cvdp_gym.integrations.harbor /tests/problem.json {workspace} /logs/verifier \\
  --reward {reward} --sandbox "${{CVDP_GYM_SANDBOX:-container}}"
"""

SOLVE_SH = """#!/usr/bin/env bash
# The reference answer (Harbor's oracle agent runs this in the task's container).
set -euo pipefail
mkdir -p {workspace}
cp -a /solution/answer/. {workspace}/
"""


def version() -> str:
    """This cvdp-gym's version (the package's metadata; ``0+unknown`` where it has none)."""
    try:
        return importlib.metadata.version("cvdp-gym")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def default_install() -> str:
    """What the Dockerfile runs to install cvdp-gym unless told otherwise: this version from PyPI."""
    return f"python3 -m pip install --no-cache-dir --break-system-packages 'cvdp-gym=={version()}'"


def problem_json(problem: Problem) -> dict[str, Any]:
    """A problem as plain JSON (every field, any benchmark), the inverse of ``problem_from_json``."""
    return dataclasses.asdict(problem)


def problem_from_json(data: dict[str, Any]) -> Problem:
    fields = dict(data)
    fields["categories"] = tuple(fields["categories"])
    fields["targets"] = tuple(fields["targets"])
    if fields.get("repo") is not None:
        fields["repo"] = RepoRef(**fields["repo"])
    return Problem(**fields)


def exportable(problem: Problem) -> str | None:
    """Why ``problem`` cannot be a task folder, or None."""
    if problem.unsupported:
        return f"unsupported here: {problem.unsupported}"
    if problem.repo is not None:
        return "repository-context problem: its repository is not carried in the task folder"
    return None


#: Compose keys by which a service needs another container running beside it (a server it
#: talks to); the task's one container runs the services one after another.
BESIDE_ANOTHER = ("depends_on", "links")


@dataclasses.dataclass(frozen=True)
class Folding:
    """How a problem's harness fits the task's one container: its compose services (which
    ``tests/test.sh`` runs one after another there), the images they name (each stood for by
    the simulation image the task's image is built ``FROM``), and why they cannot, or None."""

    services: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    reason: str | None = None


@functools.cache
def simulation_packages() -> Mapping[str, Mapping[str, str]]:
    """The cocotb environments' packages of the simulation root here, the root a task's
    image is built ``FROM``: what a harness Dockerfile's ``pip install`` must find there."""
    return installed_distributions(detect())


def fold_harness(problem: Problem, packages: Mapping[str, Mapping[str, str]] | None = None) -> Folding:
    """The harness's services folded into the task's one container, or why they cannot be
    (``packages``: the image's Python packages, default ``simulation_packages()``). A benchmark
    flow or a text answer has no services: it folds as it is."""
    if problem.flow is not None or problem.scoring != SCORING_HARNESS:
        return Folding()
    try:
        services = parse_services(problem.harness, simulation_packages() if packages is None else packages)
    except HarnessError as exc:
        return Folding(reason=f"its docker-compose.yml cannot be read: {exc}")
    folded = Folding(tuple(s.name for s in services), tuple(dict.fromkeys(s.image for s in services)))
    for service in services:
        if service.unsupported:
            return dataclasses.replace(folded, reason=f"service {service.name!r} needs more than the simulation image: {service.unsupported}")
    compose = next(text for path, text in problem.harness.items() if PurePosixPath(path).name == "docker-compose.yml")
    for name, spec in yaml.safe_load(compose)["services"].items():
        beside = [key for key in BESIDE_ANOTHER if key in spec]
        if beside:
            return dataclasses.replace(folded, reason=f"service {name!r} needs another container running beside it ({', '.join(beside)})")
    return folded


def instruction(problem: Problem) -> str:
    """The task as one text: the problem as the environments present it, then where to answer."""
    if problem.agentic:
        text = agent_task(problem)
        where = (
            f"The workspace is `{WORKSPACE}` (your working directory). When you finish, the files "
            f"there are graded: {', '.join(f'`{t}`' for t in problem.targets)} by the problem's test harness "
            "(a patch in your last message is not read: apply it to the files)."
        )
        return f"{text}\n\n## Where your answer goes\n\n{where}\n"
    text = "\n\n".join(m["content"].strip() for m in single_shot_messages(problem) if m["content"].strip())
    if problem.scoring != SCORING_HARNESS:
        where = f"Write your whole answer, in the format asked above, to `{WORKSPACE}/{RESPONSE_FILE}`; it is graded as it is."
    else:
        paths = ", ".join(f"`{WORKSPACE}/{t}`" for t in problem.targets)
        where = (
            f"Write each file complete, as plain source code (no Markdown fences, no JSON), at its "
            f"path under `{WORKSPACE}`: {paths}. When you finish, these files are graded by the "
            "problem's test harness."
        )
    return f"{text}\n\n## Where your answer goes\n\n{where}\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))  # a TOML basic string is a JSON string


def task_toml(problem: Problem, *, agent_timeout_s: float, verifier_timeout_s: float, reward: str) -> str:
    meta = {k: v for k, v in problem.metadata().items() if v is not None and not isinstance(v, dict)}
    meta.update(cvdp_gym_version=version(), reward=reward)
    folding = fold_harness(problem)
    meta.update(one_container=folding.reason is None, harness_services=folding.services, harness_images=folding.images)
    if folding.reason:
        meta["one_container_reason"] = folding.reason
    sections = {
        "task": {
            "name": f"cvdp-gym/{problem.id}",
            "description": f"{problem.benchmark} {problem.category} problem {problem.id} ({'agentic' if problem.agentic else 'single-shot'})",
            "keywords": [k for k in ("verilog", "rtl", problem.benchmark, problem.category) if k],
        },
        "metadata": meta,
        "verifier": {"timeout_sec": float(verifier_timeout_s)},
        "agent": {"timeout_sec": float(agent_timeout_s)},
        "environment": {"build_timeout_sec": 1800.0, "cpus": 2, "memory_mb": 4096, "workdir": WORKSPACE},
    }
    lines = ['schema_version = "1.4"']
    for name, values in sections.items():
        lines.append(f"\n[{name}]")
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in values.items())
    return "\n".join(lines) + "\n"


def dockerfile(problem: Problem, *, base_image: str, install: str) -> str:
    return (
        f"# {problem.id}: the simulation image (Icarus, Verilator, Yosys, cocotb) with cvdp-gym, whose\n"
        "# grader tests/test.sh runs. Base: the official nvidia/cvdp-sim image, or cvdp-gym's stand-in\n"
        "# (`cvdp-gym toolchain docker-image`); either is the root filesystem the grader runs on.\n"
        "# One container: the harness's compose services run one after another in it (task.toml's\n"
        "# [metadata] harness_services); the harness itself comes in with tests/ at verification.\n"
        f"FROM {base_image}\n"
        f"RUN {install}\n"
        f"RUN mkdir -p {IMAGE_TOOLCHAIN} && ln -sfn / {IMAGE_TOOLCHAIN}/root\n"
        f"ENV CVDP_GYM_TOOLCHAIN={IMAGE_TOOLCHAIN}\n"
        f"COPY workspace/ {WORKSPACE}/\n"
        f"WORKDIR {WORKSPACE}\n"
    )


def write_task(
    problem: Problem,
    folder: str | Path,
    *,
    base_image: str = OFFICIAL_IMAGE,
    install: str | None = None,
    reward: str = "shaped",
    agent_timeout_s: float | None = None,
    verifier_timeout_s: float = 900.0,
) -> Path:
    """Write one problem's Harbor task folder (see the module docstring); returns it.

    ``base_image``: what the Dockerfile builds ``FROM``; ``install``: its ``RUN`` line that
    installs cvdp-gym (default ``default_install()``); ``reward``: the reward ``test.sh`` writes
    (``shaped``, ``partial``, ``binary``); timeouts: Harbor's, for the agent (default 900 s,
    3600 s for an agentic problem) and for ``test.sh``."""
    reason = exportable(problem)
    if reason:
        raise ConfigError(f"{problem.id}: {reason}")
    make_reward_parts(reward)  # an unknown reward is an error now, not in the container
    if reward == "quality":
        raise ConfigError("reward 'quality' measures designs with the quality tools beside the simulation root, which a Harbor task's image lacks; use shaped, partial or binary")
    folder = Path(folder)
    timeout = agent_timeout_s if agent_timeout_s is not None else (3600.0 if problem.agentic else 900.0)
    (folder / "environment" / "workspace").mkdir(parents=True, exist_ok=True)
    (folder / "tests").mkdir(exist_ok=True)
    (folder / "task.toml").write_text(
        task_toml(problem, agent_timeout_s=timeout, verifier_timeout_s=verifier_timeout_s, reward=reward)
    )
    (folder / "instruction.md").write_text(instruction(problem))
    (folder / "environment" / "Dockerfile").write_text(
        dockerfile(problem, base_image=base_image, install=install or default_install())
    )
    write_tree(folder / "environment" / "workspace", problem.context)
    (folder / "environment" / "workspace" / ".keep").touch()  # COPY needs the folder even when empty
    test = folder / "tests" / "test.sh"
    test.write_text(TEST_SH.format(workspace=WORKSPACE, reward=shlex.quote(reward)))
    test.chmod(0o755)
    (folder / "tests" / "problem.json").write_text(json.dumps(problem_json(problem)))
    answer = dict(problem.reference or {})
    if problem.reference_answer and problem.scoring != SCORING_HARNESS:
        answer[RESPONSE_FILE] = problem.reference_answer
    if answer:
        write_tree(folder / "solution" / "answer", answer)
        solve = folder / "solution" / "solve.sh"
        solve.write_text(SOLVE_SH.format(workspace=WORKSPACE))
        solve.chmod(0o755)
    return folder


def export_tasks(
    dataset: str | Path | Dataset = "bundled",
    out: str | Path = "harbor-tasks",
    *,
    ids: Iterable[str] | None = None,
    **options: Any,
) -> tuple[list[Path], dict[str, str]]:
    """Write a task folder per problem of ``dataset`` under ``out`` (``options``: ``write_task``'s).

    Returns the folders written and, by problem id, why the others were left out.
    """
    loaded = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, ids=list(ids) if ids else None)
    out = Path(out)
    written: list[Path] = []
    left_out = {s.id: s.reason for s in loaded.skipped}
    for problem in loaded.problems:
        reason = exportable(problem)
        if reason:
            left_out[problem.id] = reason
            continue
        written.append(write_task(problem, out / problem.id, **options))
    return written, left_out


def _workspace_files(problem: Problem, workspace: Path) -> dict[str, str]:
    files = {}
    for target in problem.targets:
        path = workspace / target
        if path.is_file():
            files[target] = path.read_text(encoding="utf-8", errors="replace")
    return files


def grade_workspace(problem: Problem, workspace: str | Path, *, grader: Any) -> tuple[GradeResult, dict[str, Any]]:
    """The verdict on what the agent left in ``workspace``, and how its files were found."""
    workspace = Path(workspace)
    if problem.scoring != SCORING_HARNESS:
        response = workspace / RESPONSE_FILE
        text = response.read_text(encoding="utf-8", errors="replace") if response.is_file() else ""
        return grader.grade_response(problem, text), {"method": "response_file", "missing": [] if text else [RESPONSE_FILE]}
    files = _workspace_files(problem, workspace)
    missing = [t for t in problem.targets if t not in files]
    if problem.targets and not files:
        result = missing_targets(problem.id, missing)
    elif problem.agentic:
        result = grader.grade_files(problem, files, workspace=workspace)
    else:
        result = grader.grade_files(problem, files)
    return result, {"method": "workspace", "missing": missing, "graded_files": sorted(files)}


def rewards(result: GradeResult, reward: str = "shaped") -> dict[str, float]:
    """Harbor's reward dict: ``reward`` (the total), each part, and ``passed`` (0 or 1)."""
    parts = make_reward_parts(reward)(result)
    return {"reward": total(parts), **parts, "passed": float(result.passed)}


def grade_task(
    problem_file: str | Path,
    workspace: str | Path,
    logs: str | Path,
    *,
    reward: str = "shaped",
    sandbox: str = "container",
    toolchain: str | None = None,
    timeout_s: float = 600.0,
) -> dict[str, float] | None:
    """Grade ``workspace`` against the problem in ``problem_file``; write ``reward.json`` and
    ``grade.json`` into ``logs`` (Harbor's ``/logs/verifier``); return the rewards.

    When the machinery failed rather than the answer (``infra_failure``: the sandbox would
    not start...), only ``grade.json`` is written and None returned: Harbor then records a
    verifier error (which it may retry), not a reward the answer did not earn.

    ``sandbox``: ``container`` (the default: commands run directly in this container, see
    :mod:`cvdp_gym.sandbox.container`), or ``bubblewrap``/``docker`` where this
    machine can run them."""
    problem = problem_from_json(json.loads(Path(problem_file).read_text(encoding="utf-8")))
    if sandbox == ContainerSandbox.name:
        grader = make_grader(ContainerSandbox(detect(toolchain)), timeout_s=timeout_s, cache=False)
    else:
        grader = make_grader(sandbox, toolchain=toolchain, timeout_s=timeout_s, cache=False)
    try:
        result, found = grade_workspace(problem, workspace, grader=grader)
    finally:
        grader.close()
    scores = rewards(result, reward)
    logs = Path(logs)
    logs.mkdir(parents=True, exist_ok=True)
    verdict = result.to_dict()
    verdict.pop("files", None)
    verdict.update(found=found, rewards=scores, verdict=result.verdict, excluded=result.excluded)
    (logs / "grade.json").write_text(json.dumps(verdict, indent=1, default=str))
    if result.infra_failure:
        return None
    (logs / "reward.json").write_text(json.dumps(scores))
    return scores


def main(argv: Sequence[str] | None = None) -> int:
    """``python3 -m cvdp_gym.integrations.harbor PROBLEM.json WORKSPACE LOGS`` (what test.sh runs)."""
    parser = argparse.ArgumentParser(prog="python3 -m cvdp_gym.integrations.harbor", description=main.__doc__)
    parser.add_argument("problem", type=Path)
    parser.add_argument("workspace", type=Path)
    parser.add_argument("logs", type=Path)
    parser.add_argument("--reward", default="shaped")
    parser.add_argument("--sandbox", default="container", help="container (default), bubblewrap or docker")
    parser.add_argument("--toolchain", default=None)
    args = parser.parse_args(argv)
    if not args.problem.is_file():
        raise UsageError(f"no problem file at {args.problem}")
    scores = grade_task(args.problem, args.workspace, args.logs, reward=args.reward, sandbox=args.sandbox, toolchain=args.toolchain)
    if scores is None:
        print(f"not graded (the grading machinery failed): see {args.logs / 'grade.json'}")
        return 1
    print(json.dumps(scores))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
