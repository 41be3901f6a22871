"""A Harbor task runs in one container, as Harbor's single-container providers (Modal, E2B,
Runloop, Tensorlake) run it: every bundled problem is exported, its task image built from its
own ``environment/Dockerfile`` (``FROM`` the stand-in image), and each trial is ONE ``docker
run`` of that image whose command is ``harbor_trial.py``: Harbor's own ``OracleAgent`` (the
reference answer of each, or one of five known-wrong ones put in the solution's place) runs ``solve.sh``, then
Harbor's own ``Verifier`` uploads ``tests/``, runs ``tests/test.sh`` (the harness's compose
services one after another) and reads the reward file. Each reward and verdict is the one
cvdp-gym's grader gives the same answer in process. Harbor's ``Task`` loads every folder.

A harness whose services cannot share one container is labelled in ``task.toml``; none of the
bundled set is, so the label is checked on bundled problems given such a harness.
"""

from __future__ import annotations

import json
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from cvdp_gym.cli import app
from cvdp_gym.data import Problem, bundled_candidates, load_dataset
from cvdp_gym.data.bundle import bundled_records
from cvdp_gym.envs.base import make_grader
from cvdp_gym.harness.compose import parse_services
from cvdp_gym.integrations.harbor import fold_harness, rewards
from tests.cvdp_gym.integrations.test_harbor import harbor_check, harbor_dir, needs_harbor
from tests.support import REPO

TRIAL = Path(__file__).with_name("harbor_trial.py")
#: The problems whose known-wrong answer is also played, and which (every reference is): the
#: three two-service harnesses (the first two answers caught by the folded second service:
#: synthesis's cell count, the lint service's warning), an agentic and a one-service problem.
#: The rest's known-wrong answers would add about 40 s on two cores and nothing new.
WRONG = {
    "cvdp_gym_gray_counter_area_0001": "too_many_cells",
    "cvdp_gym_sat_adder_lint_0001": "lint_warning",
    "cvdp_gym_sync_fifo_0001": "functional_bug",
    "cvdp_gym_agentic_crc8_0001": "functional_bug",
    "cvdp_gym_traffic_light_0001": "functional_bug",
}


def answers(problem: Problem, task: Path, tmp_path: Path) -> list[tuple[str, Path, dict[str, str], str]]:
    """What the problem's trials play: the reference (the task as exported), and its known-wrong
    answer if ``WRONG`` names one (a copy of the task with it as the solution); each with the
    task folder, its files and the verdict it is recorded with."""
    played = [("reference", task, dict(problem.reference or {}), "passed")]
    if problem.id in WRONG:
        wrong = next(c for c in bundled_candidates() if c.problem_id == problem.id and c.name == WRONG[problem.id])
        played.append((wrong.name, with_answer(task, wrong.files, tmp_path / "wrong" / problem.id), wrong.files, wrong.expected_class))
    return played


def export_bundled(out: Path, *args: str) -> list[Path]:
    """Every bundled problem through ``cvdp-gym export harbor``: one task folder each, none labelled."""
    count = len(load_dataset("bundled").problems)
    done = CliRunner().invoke(app, ["export", "harbor", "bundled", str(out), *args])
    assert done.exit_code == 0 and f"wrote {count} Harbor task folders" in done.output, done.output
    assert "left out" not in done.output and "not one container" not in done.output, done.output
    return sorted(out.iterdir())


def read_metadata(task: Path) -> dict[str, Any]:
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11 or newer reads TOML")
    return tomllib.loads((task / "task.toml").read_text())["metadata"]


def test_every_bundled_task_is_one_image_with_its_verifier_apart(tmp_path):
    """One Dockerfile and no compose file (Harbor's sign of a multi-container task); the
    harness's services all named in task.toml; nothing of the verifier in the agent's image."""
    dataset = load_dataset("bundled")
    for task in export_bundled(tmp_path / "tasks"):
        problem = dataset[task.name]
        environment = sorted(p.relative_to(task / "environment").as_posix() for p in (task / "environment").rglob("*") if p.is_file())
        assert not [p for p in environment if "compose" in p], environment
        assert "Dockerfile" in environment and all(p == "Dockerfile" or p.startswith("workspace/") for p in environment)
        dockerfile = (task / "environment" / "Dockerfile").read_text().splitlines()
        assert len([line for line in dockerfile if line.startswith("FROM ")]) == 1
        # The agent's image holds the context files only: no harness file, no problem record.
        assert {p.removeprefix("workspace/") for p in environment} - {"Dockerfile", ".keep"} == set(problem.context)
        assert not set(problem.harness) & set(problem.context)
        assert sorted(p.name for p in (task / "tests").iterdir()) == ["problem.json", "test.sh"]
        meta = read_metadata(task)
        assert meta["one_container"] is True and "one_container_reason" not in meta
        assert meta["harness_services"] == [s.name for s in parse_services(problem.harness)]
        assert set(meta["harness_images"]) <= {"__OSS_SIM_IMAGE__", "__OSS_PNR_IMAGE__"}


def labelled_dataset(path: Path) -> tuple[Path, dict[str, str]]:
    """A JSONL of the traffic light problem as bundled and twice given a second compose service
    that cannot share its one container: on another image, and needing a container beside it.
    Returns it and the reason each labelled problem must carry."""
    [record] = [json.loads(json.dumps(r)) for _, r in bundled_records() if r["id"] == "cvdp_gym_traffic_light_0001"]
    extra = {
        "other_image": ({"server": {"image": "redis:7", "command": "redis-server"}},
                        "service 'server' needs more than the simulation image: image 'redis:7' is not mapped to the local toolchain"),
        "beside": ({"client": {"image": "__OSS_SIM_IMAGE__", "command": "pytest -s", "depends_on": ["direct"]}},
                   "service 'client' needs another container running beside it (depends_on)"),
    }
    records, reasons = [record], {}
    for suffix, (services, reason) in extra.items():
        labelled = json.loads(json.dumps(record))
        labelled["id"] = f"{record['id']}_{suffix}"
        files = labelled["harness"]["files"]
        compose_path = next(p for p in files if p.endswith("docker-compose.yml"))
        compose = yaml.safe_load(files[compose_path])
        compose["services"].update(services)
        files[compose_path] = yaml.safe_dump(compose)
        records.append(labelled)
        reasons[labelled["id"]] = reason
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path, reasons


def test_a_harness_that_cannot_share_one_container_is_labelled_with_why(tmp_path):
    """A service on another image, or one that needs a second container beside it, cannot
    fold into the task's one image: ``export harbor`` still writes the task, labelled in
    task.toml with the reason, and says so."""
    dataset, reasons = labelled_dataset(tmp_path / "labelled.jsonl")
    done = CliRunner().invoke(app, ["export", "harbor", str(dataset), str(tmp_path / "tasks")])
    assert done.exit_code == 0 and "wrote 3 Harbor task folders" in done.output, done.output
    for problem_id, reason in reasons.items():
        assert f"not one container {problem_id}: {reason}" in " ".join(done.output.split()), done.output
        meta = read_metadata(tmp_path / "tasks" / problem_id)
        assert meta["one_container"] is False and meta["one_container_reason"] == reason
    as_bundled = read_metadata(tmp_path / "tasks" / "cvdp_gym_traffic_light_0001")
    assert as_bundled["one_container"] is True and "one_container_reason" not in as_bundled


def in_process(problem: Problem, files: dict[str, str], workspace: Path) -> tuple[str, dict[str, float]]:
    """The verdict and Harbor rewards cvdp-gym's grader gives ``files`` here (an agentic answer
    in a workspace of the context files with it written over them, as solve.sh leaves /code)."""
    grader = make_grader(cache=False)
    try:
        if problem.agentic:
            for path, text in {**problem.context, **files}.items():
                (workspace / path).parent.mkdir(parents=True, exist_ok=True)
                (workspace / path).write_text(text)
        result = grader.grade_files(problem, files, workspace=workspace if problem.agentic else None)
    finally:
        grader.close()
    return result.verdict, rewards(result)


def with_answer(task: Path, files: dict[str, str], out: Path) -> Path:
    """A copy of ``task`` whose solution is ``files``: Harbor's oracle then plays that answer."""
    shutil.copytree(task, out)
    shutil.rmtree(out / "solution" / "answer")
    for path, text in files.items():
        (out / "solution" / "answer" / path).parent.mkdir(parents=True, exist_ok=True)
        (out / "solution" / "answer" / path).write_text(text)
    return out


def one_docker_run(client: Any, tag: str, task: Path, trial: Path) -> dict[str, Any]:
    """The whole trial in one container of the task's image: ``harbor_trial.py``'s JSON line.
    cvdp-gym comes from this checkout and Harbor's folder (the Dockerfile's install line is
    ``true``: no registry is reachable here); the task folder is Harbor's side, read-only."""
    trial.mkdir(parents=True)
    volumes = {
        str(REPO / "cvdp_gym"): {"bind": "/opt/cvdp-gym/src/cvdp_gym", "mode": "ro"},
        str(harbor_dir()): {"bind": "/opt/cvdp-gym/deps", "mode": "ro"},
        str(TRIAL): {"bind": "/harbor/harbor_trial.py", "mode": "ro"},
        str(task): {"bind": "/harbor/task", "mode": "ro"},
        str(trial): {"bind": "/harbor/trial", "mode": "rw"},
    }
    output = client.containers.run(
        tag, ["python3", "/harbor/harbor_trial.py", "/harbor/task", "/harbor/trial"], remove=True, network_mode="none",
        volumes=volumes, environment={"PYTHONPATH": "/opt/cvdp-gym/src:/opt/cvdp-gym/deps"},
    )
    return json.loads(output.decode().strip().splitlines()[-1])


def play_answers(client: Any, problem: Problem, task: Path, tmp_path: Path) -> list[str]:
    """Build the task's image, then one ``docker run`` per answer (``answers``): each gets the
    in-process verdict and rewards, and every harness service ran."""
    tag = f"cvdp-gym-harbor-one-container/{problem.id}:latest"
    client.images.build(path=str(task / "environment"), tag=tag, network_mode="none", rm=True)
    played_names = []
    try:
        for name, folder, files, expected in answers(problem, task, tmp_path):
            verdict, scores = in_process(problem, files, tmp_path / "workspaces" / f"{problem.id}-{name}")
            assert verdict == expected, (problem.id, name, verdict)
            trial = tmp_path / "trials" / f"{problem.id}-{name}"
            played = one_docker_run(client, tag, folder, trial)
            assert "error" not in played, played
            assert played["agent_view"] == {"tests": False, "solution": False, "problem_json": False, "harness": False}
            assert played["oracle_exit"] == 0 and played["rewards"] == scores, (problem.id, name, played)
            graded = json.loads((trial / "verifier" / "grade.json").read_text())
            assert graded["verdict"] == verdict, (problem.id, name, graded["reason"])
            # Every service of the harness ran, in that one container.
            assert [s["name"] for s in graded["services"]] == list(fold_harness(problem).services)
            played_names.append(name)
    finally:
        client.images.remove(tag, force=True)
    return played_names


@pytest.mark.docker
@pytest.mark.sandbox
def test_every_bundled_task_runs_in_one_docker_run_with_the_graders_verdicts(docker_client, standin_tag, sandbox, tmp_path):
    """Every bundled problem's reference and five known-wrong answers (``WRONG``), two problems
    at a time (the grading in process here overlaps the other's container)."""
    needs_harbor()
    started = time.monotonic()
    dataset = load_dataset("bundled")
    tasks = export_bundled(tmp_path / "tasks", "--base-image", standin_tag, "--install", "true")
    with ThreadPoolExecutor(max_workers=2) as pool:
        played = list(pool.map(lambda task: play_answers(docker_client, dataset[task.name], task, tmp_path), tasks))
    assert played == [["reference", *([WRONG[task.name]] if task.name in WRONG else [])] for task in tasks]
    checked = harbor_check(sandbox, tmp_path, tmp_path / "tasks", tmp_path / "trials", {
        "tasks": [f"/tasks/{task.name}" for task in tasks], "trials": [],
    })
    for task in tasks:
        summary = checked["tasks"][f"/tasks/{task.name}"]
        assert "error" not in summary, summary
        assert summary["valid"] and summary["dockerfile"] and summary["solution"] and summary["test"] == "tests/test.sh"
        assert summary["metadata"]["one_container"] is True
    print(f"{sum(map(len, played))} one-container trials in {time.monotonic() - started:.0f} s")
