"""Harbor (harbor 0.25.0) task export: real bundled problems, single-shot and agentic, written
by ``cvdp-gym export harbor``, loaded by Harbor's own ``Task`` and verified by Harbor's own
``Verifier`` reading the reward file the task's own ``tests/test.sh`` wrote; each answer's
reward is the one the grader gives in process, and a known-wrong answer gets its recorded failure.

``harbor`` needs Python >= 3.12, so its code runs in the sandbox under the simulation root's
``python3`` (3.14), with the folder ``scripts/harbor_models.py`` builds on ``PYTHONPATH``
(``harbor_check.py``; the folder also holds cvdp-gym's own dependencies for Python 3.14).
``test.sh`` runs two ways, each answer once: in the task's own image (its Dockerfile built
``FROM`` the stand-in image, run as Harbor's Docker environment runs it: unprivileged, no
network, ``/logs/verifier`` mounted from the trial's folder, the oracle's ``solve.sh`` or the
agent's files, then ``tests/`` copied in and run; grading with the ``container`` sandbox),
and here with Harbor's paths made by bubblewrap over this machine's root (grading with
bubblewrap), so that it needs no Docker engine.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cvdp_gym.cli import app
from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.envs.base import make_grader
from cvdp_gym.integrations.harbor import problem_from_json, problem_json, rewards
from cvdp_gym.sandbox.bwrap import Limits, Mount
from cvdp_gym.user_dirs import cache_dir
from tests.support import REPO

CHECK = Path(__file__).with_name("harbor_check.py")
SINGLE, AGENTIC = "cvdp_gym_traffic_light_0001", "cvdp_gym_agentic_crc8_0001"  # cheap harnesses
WRONG = "functional_bug"  # a known-wrong answer of each: graded test_failure
#: Where each answer's test.sh runs: the task's image (Docker) or Harbor's paths here (bubblewrap).
IN_IMAGE = [(SINGLE, "reference"), (AGENTIC, WRONG)]
HERE = [(SINGLE, WRONG), (AGENTIC, "reference")]


def harbor_dir() -> Path:
    """Where ``scripts/harbor_models.py`` builds the folder (its ``default_target``)."""
    if os.environ.get("CVDP_GYM_HARBOR_MODELS"):
        return Path(os.environ["CVDP_GYM_HARBOR_MODELS"])
    return cache_dir() / "harbor-cp314"


def needs_harbor() -> None:
    if not (harbor_dir() / "harbor" / "models" / "task" / "task.py").exists():
        pytest.skip(f"Harbor is not built at {harbor_dir()}: run .venv/bin/python scripts/harbor_models.py")


def answer(problem_id: str, name: str) -> tuple[dict[str, str], str]:
    """The reference or the known-wrong answer: its files and the verdict it must get."""
    if name == "reference":
        return dict(load_dataset("bundled")[problem_id].reference or {}), "passed"
    wrong = next(c for c in bundled_candidates() if c.problem_id == problem_id and c.name == name)
    return wrong.files, wrong.expected_class


def export(out: Path, *args: str) -> Path:
    done = CliRunner().invoke(app, ["export", "harbor", "bundled", str(out), "--id", SINGLE, "--id", AGENTIC, *args])
    assert done.exit_code == 0 and "wrote 2 Harbor task folders" in done.output, done.output
    assert sorted(p.name for p in out.iterdir()) == sorted([AGENTIC, SINGLE])
    return out


@pytest.fixture(scope="module")
def in_process(toolchain, tmp_path_factory) -> dict[tuple[str, str], dict[str, Any]]:
    """Each answer graded here, in process (an agentic one in a workspace of its context
    files with the answer written over them): its verdict and Harbor rewards."""
    grader = make_grader(cache=False)
    dataset = load_dataset("bundled")
    graded = {}
    for problem_id, name in IN_IMAGE + HERE:
        problem = dataset[problem_id]
        files, verdict = answer(problem_id, name)
        workspace = None
        if problem.agentic:
            workspace = tmp_path_factory.mktemp("workspace")
            for path, text in {**problem.context, **files}.items():
                (workspace / path).parent.mkdir(parents=True, exist_ok=True)
                (workspace / path).write_text(text)
        result = grader.grade_files(problem, files, workspace=workspace)
        assert result.verdict == verdict, result.reason  # the known-wrong answer's recorded failure
        graded[(problem_id, name)] = {"rewards": rewards(result), "verdict": verdict}
    return graded


def workspace_with(task: Path, files: dict[str, str], code: Path) -> Path:
    shutil.copytree(task / "environment" / "workspace", code)
    for path, text in files.items():
        (code / path).parent.mkdir(parents=True, exist_ok=True)
        (code / path).write_text(text)
    return code


def run_test_sh_here(task: Path, files: dict[str, str], trial: Path) -> None:
    """The task's ``tests/test.sh`` with Harbor's paths (``/tests``, ``/logs/verifier`` the
    trial's ``verifier/``, the workspace ``/code``) bound over this machine's root."""
    code = workspace_with(task, files, trial / "code")
    verifier = trial / "verifier"
    verifier.mkdir(parents=True)
    # The temp folder bound with its device nodes working (bubblewrap's --bind makes it nodev), as
    # a container's is: the sandbox inside makes the device nodes of its runs there.
    layout = ["--bind", "/", "/", "--dev-bind", "/tmp", "/tmp", "--dev-bind", "/dev", "/dev", "--bind", "/proc", "/proc",
              "--ro-bind", str(task / "tests"), "/tests", "--bind", str(verifier), "/logs/verifier", "--bind", str(code), "/code"]
    # Bubblewrap here: the container sandbox would link its mounts into this machine's root.
    env = {**os.environ, "CVDP_GYM_PYTHON": sys.executable, "CVDP_GYM_SANDBOX": "bubblewrap"}
    done = subprocess.run(["bwrap", *layout, "bash", "/tests/test.sh"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def _tar(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(folder, arcname=".")
    return buffer.getvalue()


def run_in_image(client: Any, task: Path, files: dict[str, str] | None, trial: Path) -> None:
    """Build the task's Dockerfile and play one trial as Harbor's Docker environment does:
    the oracle's ``solve.sh`` (``files`` None) or the agent's files, then ``tests/test.sh``.
    cvdp-gym itself comes from this checkout and the built folder (the exported Dockerfile's
    install line is ``true``: no registry is reachable here)."""
    tag = f"cvdp-gym-harbor-test/{task.name}:latest"
    client.images.build(path=str(task / "environment"), tag=tag, network_mode="none", rm=True)
    verifier = trial / "verifier"
    verifier.mkdir(parents=True)
    verifier.chmod(0o777)
    volumes = {
        str(REPO / "cvdp_gym"): {"bind": "/opt/cvdp-gym/src/cvdp_gym", "mode": "ro"},
        str(harbor_dir()): {"bind": "/opt/cvdp-gym/deps", "mode": "ro"},
        str(verifier): {"bind": "/logs/verifier", "mode": "rw"},
    }
    container = client.containers.run(
        tag, ["sleep", "infinity"], detach=True, network_mode="none", volumes=volumes,
        environment={"PYTHONPATH": "/opt/cvdp-gym/src:/opt/cvdp-gym/deps"},
    )
    try:
        def run(command: str) -> None:
            code, output = container.exec_run(["bash", "-c", command])
            assert code == 0, output.decode(errors="replace")

        if files is None:  # Harbor's oracle agent: /solution, then solve.sh
            run("mkdir -p /solution")
            container.put_archive("/solution", _tar(task / "solution"))
            run("bash /solution/solve.sh")
        else:
            container.put_archive("/code", _tar(workspace_with(task, files, trial / "code")))
        run("mkdir -p /tests")
        container.put_archive("/tests", _tar(task / "tests"))
        run("bash /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1")
        run("test -d /code && ! test -e /code.cvdp-gym-aside && ! test -e /src && ! test -e /rundir")
    finally:
        container.remove(force=True)
        client.images.remove(tag, force=True)


def harbor_check(sandbox: Any, tmp_path: Path, tasks: Path, trials: Path, spec: dict[str, Any]) -> dict[str, Any]:
    """``harbor_check.py`` under the sandbox's ``python3`` with Harbor at ``/harbor``, the task
    folders at ``/tasks`` and the trials at ``/trials``: the JSON it prints."""
    inbox = Path(tempfile.mkdtemp(prefix="in-", dir=tmp_path))
    (inbox / CHECK.name).write_text(CHECK.read_text())
    (inbox / "spec.json").write_text(json.dumps(spec))
    result = sandbox.run(
        ["python3", f"/in/{CHECK.name}", "/in/spec.json"],
        mounts=[Mount(harbor_dir(), "/harbor"), Mount(inbox, "/in"), Mount(tasks, "/tasks"), Mount(trials, "/trials", writable=True)],
        scratch=Path(tempfile.mkdtemp(prefix="scratch-", dir=tmp_path)),
        env={"PYTHONPATH": "/harbor", "PATH": "/usr/bin:/bin", "HOME": "/tmp"}, limits=Limits(wall_s=120),
    )
    assert result.returncode == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])


def check_in_harbor(sandbox: Any, tmp_path: Path, tasks: Path, trials: Path, runs: list[tuple[str, str]], in_process: dict) -> None:
    """Harbor loads both folders and verifies each trial: it uploads ``tests/``, runs
    ``/tests/test.sh`` and reads the rewards the grader gave in process."""
    if sandbox.toolchain.root is None:
        pytest.skip("needs the simulation root's python3 (3.14); the host fallback has none new enough")
    checked = harbor_check(sandbox, tmp_path, tasks, trials, {
        "tasks": [f"/tasks/{p}" for p in (SINGLE, AGENTIC)],
        "trials": [[f"/tasks/{p}", f"/trials/{p}-{n}"] for p, n in runs],
    })
    for problem_id in (SINGLE, AGENTIC):
        task = checked["tasks"][f"/tasks/{problem_id}"]
        assert "error" not in task, task
        assert task["valid"] and task["dockerfile"] and task["solution"] and task["test"] == "tests/test.sh"
        assert task["name"] == f"cvdp-gym/{problem_id}" and task["workdir"] == "/code"
        assert task["metadata"]["id"] == problem_id and task["metadata"]["agentic"] == (problem_id == AGENTIC)
        assert "Where your answer goes" in task["instruction"]
    for (problem_id, name), trial in zip(runs, checked["trials"], strict=True):
        assert "error" not in trial, trial
        assert trial["uploads"] == [["/tests", ["problem.json", "test.sh"]]]
        assert any("/tests/test.sh" in command for command in trial["commands"]), trial["commands"]
        assert trial["rewards"] == in_process[(problem_id, name)]["rewards"]


def check_trials(trials: Path, runs: list[tuple[str, str]], in_process: dict) -> None:
    """What test.sh wrote: the in-process rewards, and the verdict in grade.json."""
    for problem_id, name in runs:
        verifier = trials / f"{problem_id}-{name}" / "verifier"
        graded = json.loads((verifier / "grade.json").read_text())
        assert graded["verdict"] == in_process[(problem_id, name)]["verdict"], graded["reason"]
        assert json.loads((verifier / "reward.json").read_text()) == graded["rewards"] == in_process[(problem_id, name)]["rewards"]


def test_problem_json_round_trips_every_bundled_problem():
    for problem in load_dataset("bundled"):
        assert problem_from_json(json.loads(json.dumps(problem_json(problem)))) == problem


def test_no_answer_is_a_format_failure_and_a_failed_grader_writes_no_reward(tmp_path, monkeypatch):
    from cvdp_gym.grading.result import infra_result
    from cvdp_gym.integrations import harbor

    [task], left_out = harbor.export_tasks("bundled", tmp_path / "tasks", ids=[SINGLE])
    assert left_out == {}
    problem_file, empty = task / "tests" / "problem.json", tmp_path / "empty"
    empty.mkdir()
    scores = harbor.grade_task(problem_file, empty, tmp_path / "logs", sandbox="bubblewrap")
    assert scores == {"reward": 0.0, "format": 0.0, "syntax": 0.0, "tests": 0.0, "passed": 0.0}
    assert json.loads((tmp_path / "logs" / "grade.json").read_text())["verdict"] == "format_error"
    # The machinery failing is not the answer's reward: grade.json only, and test.sh exits 1.
    failed = lambda problem, workspace, grader: (infra_result(problem, {}, "sandbox would not start"), {})  # noqa: E731
    monkeypatch.setattr(harbor, "grade_workspace", failed)
    logs = tmp_path / "failed"
    assert harbor.main([str(problem_file), str(empty), str(logs), "--sandbox", "bubblewrap"]) == 1
    assert not (logs / "reward.json").exists() and json.loads((logs / "grade.json").read_text())["infra_failure"]


@pytest.mark.sandbox
def test_exported_tasks_grade_here_and_load_in_harbor(toolchain, sandbox, in_process, tmp_path):
    needs_harbor()
    tasks, trials = export(tmp_path / "tasks"), tmp_path / "trials"
    for problem_id, name in HERE:
        run_test_sh_here(tasks / problem_id, answer(problem_id, name)[0], trials / f"{problem_id}-{name}")
    check_trials(trials, HERE, in_process)
    assert in_process[(SINGLE, WRONG)]["rewards"] == {"reward": 0.4, "format": 0.1, "syntax": 0.3, "tests": 0.0, "passed": 0.0}
    check_in_harbor(sandbox, tmp_path, tasks, trials, HERE, in_process)


@pytest.mark.docker
@pytest.mark.sandbox
def test_exported_tasks_grade_in_their_own_image_and_load_in_harbor(docker_client, standin_tag, sandbox, in_process, tmp_path):
    needs_harbor()
    tasks, trials = export(tmp_path / "tasks", "--base-image", standin_tag, "--install", "true"), tmp_path / "trials"
    for problem_id, name in IN_IMAGE:
        files = None if name == "reference" else answer(problem_id, name)[0]
        run_in_image(docker_client, tasks / problem_id, files, trials / f"{problem_id}-{name}")
    check_trials(trials, IN_IMAGE, in_process)
    assert in_process[(SINGLE, "reference")]["rewards"] == {"reward": 1.4, "format": 0.1, "syntax": 0.3, "tests": 1.0, "passed": 1.0}
    check_in_harbor(sandbox, tmp_path, tasks, trials, IN_IMAGE, in_process)


def test_the_quality_reward_is_refused_at_export(tmp_path):
    """The quality tools live beside the simulation root, not in a task's image: exporting a task
    whose test script would write the quality reward is a one-line error, not a silent 0."""
    from cvdp_gym.errors import ConfigError
    from cvdp_gym.integrations.harbor import write_task

    problem = load_dataset("bundled").problems[0]
    with pytest.raises(ConfigError, match="reward 'quality' measures designs with the quality tools"):
        write_task(problem, tmp_path / "task", reward="quality")
    assert not (tmp_path / "task").exists()
