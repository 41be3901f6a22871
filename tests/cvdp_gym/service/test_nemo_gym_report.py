"""NeMo-Gym's own CVDP report on rollouts the service graded: each pass a pass, each fail a fail.

NeMo-Gym's report (``resources_servers/cvdp/scripts/cvdp_report.py``, shipped in the
``nemo-gym`` wheel and kept by ``scripts/nemo_gym_models.py``) scores a rollout by its
``container_exit_code`` or, when the rollout lists ``container_services``, by every
service's ``exit_code``. Real ``/verify`` answers (a pass with two services, a failure in one
of two, a functional failure, a build error and a format error, where no harness ran) are
reported one by one by that script, under the sandbox's Python 3.14 (``nemo_gym_report.py``),
and checked by NeMo-Gym's own ``BaseMultiRewardVerifyResponse``.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from cvdp_gym.data import bundled_candidates, load_dataset
from tests.cvdp_gym.service.test_nemo_gym_models import (
    models_dir,
    responses_api,
    run_with_nemo_gym,
    validate,
)
from tests.cvdp_gym.service.test_service import serve

pytestmark = pytest.mark.sandbox

DATA = load_dataset("bundled")
REPORTER = Path(__file__).with_name("nemo_gym_report.py")
CVDP_ROOT = "resources_servers/cvdp"
LINT = "cvdp_gym_sat_adder_lint_0001"  # two services: lint and sanity
#: ``(problem, answer, reward kind, services' exit codes)``: an answer is a bundled candidate's
#: name, ``reference``, or ``prose`` (a text with no code); no services: no harness ran.
ROLLOUTS = [
    (LINT, "reference", "shaped", [0, 0]),
    (LINT, "lint_warning", "partial", [1, 0]),
    ("cvdp_gym_edge_detector_0001", "functional_bug", "partial", [1]),
    ("cvdp_gym_gray_converter_0001", "syntax_error", "shaped", []),
    ("cvdp_gym_event_counter_0001", "prose", "binary", []),
    ("cvdp_gym_edge_detector_0001", "reference", "binary", [0]),
]


def verify_request(problem_id: str, answer: str, reward: str) -> dict:
    """A ``/verify`` request as NeMo-Gym sends it: code answers as an agent's ``rtl_files``."""
    candidates = {c.name: c.files for c in bundled_candidates() if c.problem_id == problem_id}
    files = DATA[problem_id].reference if answer == "reference" else candidates.get(answer)
    params, response = responses_api("I would use a counter." if files is None else "Done: the design is in rtl/.")
    meta = {"problem_id": problem_id, "reward": reward, **({"rtl_files": files} if files is not None else {})}
    return {"responses_create_params": params, "response": response, "verifier_metadata": meta}


def test_nemo_gyms_cvdp_report_counts_our_passes_and_fails(runner, sandbox, tmp_path):
    if not (models_dir() / CVDP_ROOT / "scripts" / "cvdp_report.py").exists():
        pytest.skip(f"NeMo-Gym's CVDP report is not kept at {models_dir() / CVDP_ROOT}: scripts/nemo_gym_models.py's "
                    "KEEP must hold resources_servers/cvdp/scripts/ and resources_servers/cvdp/cvdp_lib/ (then rebuild it)")
    if sandbox.toolchain.root is None:
        pytest.skip("needs the simulation root's python3 (3.14); the host fallback has none new enough")
    server = serve(runner, tmp_path / "serve-cache", workers=2, queue=8)
    try:
        verified = [httpx.post(f"{server.url}/verify", json=verify_request(*case[:3]), timeout=120) for case in ROLLOUTS]
    finally:
        server.stop()
    assert [r.status_code for r in verified] == [200] * len(ROLLOUTS), [r.text for r in verified]
    answers = [r.json() for r in verified]
    assert [a["passed"] for a in answers] == [not any(codes) and bool(codes) for *_, codes in ROLLOUTS]
    for answer, (_, _, _, codes) in zip(answers, ROLLOUTS, strict=True):
        assert answer["container_exit_code"] == (0 if answer["passed"] else 1), answer["verdict"]
        assert [s["exit_code"] for s in answer["container_services"]] == codes, answer["verdict"]
        assert sum(answer["reward_components"].values()) == answer["reward"], answer["reward_components"]
    assert [a["verdict"] for a in answers[3:5]] == ["build_error", "format_error"]

    rollouts = "".join(json.dumps(answer) + "\n" for answer in answers)
    reported = run_with_nemo_gym(sandbox, tmp_path, REPORTER, {"rollouts.jsonl": rollouts},
                                 f"/nemo-gym/{CVDP_ROOT}", "/in/rollouts.jsonl", "/out")
    expected = [(a["task_id"], int(a["passed"]), int(not a["passed"]), "PASS" if a["passed"] else "FAIL") for a in answers]
    assert [(r["task_id"], r["passed_problems"], r["failed_problems"], r["status"]) for r in reported] == expected
    # Scored service by service where services ran (a failed one is a failed test).
    assert [r["test_results"] for r in reported] == [[int(c != 0) for c in codes] or [1] for *_, codes in ROLLOUTS]

    verdicts = validate(sandbox, tmp_path, [("BaseMultiRewardVerifyResponse", answer) for answer in answers])
    assert [problem for _, problem in verdicts] == [None] * len(answers)
