"""The service in place of NeMo-Gym's own CVDP resources server, on its rows.

NeMo-Gym's ``resources_servers/cvdp`` sends ``verifier_metadata`` with ``task_id``,
``categories``, ``target_files`` and the harness files themselves, and an agent's files as
``rtl_files`` beside the metadata. Its example rows and the rollouts it graded (shipped in
the ``nemo-gym`` wheel; ``scripts/nemo_gym_models.py`` keeps them in the cache) are sent to
the real service as its agent would send them: each verdict must agree with the reward
NeMo-Gym's server gave, and the answers must pass NeMo-Gym's own ``BaseVerifyResponse``.
A bundled problem sent in the same shape, with a task id the server does not hold, is
graded from the harness it carries: the reference passes and a known-wrong design fails.
"""

from __future__ import annotations

import json

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from cvdp_gym.data import bundled_candidates, load_dataset
from tests.cvdp_gym.service.test_nemo_gym_models import models_dir, responses_api, validate
from tests.cvdp_gym.service.test_service import serve

pytestmark = pytest.mark.sandbox

DATA = load_dataset("bundled")


def rows(name: str) -> list[dict]:
    path = models_dir() / "resources_servers" / "cvdp" / "data" / name
    if not path.exists():
        pytest.skip(f"NeMo-Gym's CVDP example rows are not at {path}: run .venv/bin/python scripts/nemo_gym_models.py")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_nemo_gyms_cvdp_rollouts_get_the_verdicts_its_server_gave(runner, sandbox, tmp_path):
    examples = {row["verifier_metadata"]["task_id"]: row for row in rows("example.jsonl")}
    rollouts = rows("example_rollouts.jsonl")
    assert {r["task_id"] for r in rollouts} == set(examples)
    server = serve(runner, tmp_path / "cache", workers=2, queue=8)
    try:
        answers = []
        for rollout in rollouts:
            example = examples[rollout["task_id"]]
            request = {
                "responses_create_params": example["responses_create_params"], "response": rollout["response"],
                "verifier_metadata": example["verifier_metadata"],
            }
            answer = httpx.post(f"{server.url}/verify", json=request, timeout=600)
            assert answer.status_code == 200, answer.text
            answers.append(answer.json())
    finally:
        server.stop()
    for rollout, answer in zip(rollouts, answers, strict=True):
        assert answer["task_id"] == rollout["task_id"] and answer["category"] == rollout["category"]
        # NeMo-Gym's reward is the pass bit; ours agrees on every rollout (the shaped reward
        # of a failure may still be above 0).
        assert float(answer["passed"]) == rollout["reward"], (rollout["task_id"], answer["verdict"], answer["reason"])
        assert answer["mask_sample"] is False, answer["reason"]
        assert sorted(answer["extracted_rtl"]) == sorted(rollout["extracted_rtl"])
    verdicts = validate(sandbox, tmp_path, [("BaseVerifyResponse", a) for a in answers])
    assert [(name, problem) for name, problem in verdicts if problem] == []


@pytest.mark.parametrize("problem_id", ["cvdp_gym_edge_detector_0001", "cvdp_gym_agentic_crc8_0001"])
def test_a_task_the_server_does_not_hold_is_graded_from_the_harness_it_carries(runner, tmp_path, problem_id):
    problem = DATA[problem_id]
    wrong = next(c.files for c in bundled_candidates() if c.problem_id == problem_id and c.name == "functional_bug")
    meta = {
        "task_id": f"elsewhere_{problem_id}", "categories": list(problem.categories), "difficulty": problem.difficulty,
        "target_files": list(problem.targets), "harness_files": problem.harness, "context_files": problem.context,
    }
    params, response = responses_api("Done: the design is in rtl/.")
    server = serve(runner, tmp_path / "cache", workers=2, queue=8)
    try:
        post = lambda files: httpx.post(f"{server.url}/verify", json={  # noqa: E731
            "responses_create_params": params, "response": response, "verifier_metadata": meta, "rtl_files": files,
        }, timeout=600).json()
        right, bad = post(problem.reference), post(wrong)
        unknown = httpx.post(f"{server.url}/verify", json={
            "responses_create_params": params, "response": response, "verifier_metadata": {"task_id": "no_such_task"},
        }, timeout=60)
    finally:
        server.stop()
    assert right["passed"] and right["task_id"] == meta["task_id"] and right["extracted_rtl"] == problem.reference
    assert not bad["passed"] and bad["verdict"] == "test_failure" and bad["failure_kind"] is None
    assert unknown.status_code == 404 and "no_such_task" in unknown.text
