"""The service's NeMo-Gym traffic, validated by NeMo-Gym's own pydantic models.

``nemo-gym`` needs Python >= 3.13, so its models run in the sandbox, under the simulation
root's ``python3`` (3.14), with the folder ``scripts/nemo_gym_models.py`` builds (run by
``scripts/test.sh``) mounted read-only on ``PYTHONPATH``. The payloads are real: requests
shaped as NeMo-Gym sends them (an OpenAI Responses API response) and the answers the live
service gave them, for a single-shot answer (the response's text), an agentic one
(``rtl_files``), a legacy and a session ``/seed_session``, ``/close_session``,
``/reverify_mode`` and an ``/aggregate_metrics`` round trip.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx

from cvdp_gym.sandbox.bwrap import Limits, Mount
from cvdp_gym.user_dirs import cache_dir
from tests.cvdp_gym.service.test_service import EDGE, answers, serve

pytestmark = pytest.mark.sandbox

CHECK = Path(__file__).with_name("nemo_gym_check.py")


def models_dir() -> Path:
    """Where ``scripts/nemo_gym_models.py`` builds the folder (its ``default_target``)."""
    if os.environ.get("CVDP_GYM_NEMO_GYM_MODELS"):
        return Path(os.environ["CVDP_GYM_NEMO_GYM_MODELS"])
    return cache_dir() / "nemo-gym-cp314"


def responses_api(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``responses_create_params`` and the ``response`` of one policy turn, as NeMo-Gym's
    model server returns them (OpenAI Responses API objects, every required field)."""
    params = {"input": [{"role": "user", "content": EDGE.prompt[:200]}], "model": "policy", "temperature": 1.0}
    response = {
        "id": "resp_1", "object": "response", "created_at": 1764000000.0, "model": "policy",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    }
    return params, response


def run_with_nemo_gym(sandbox: Any, tmp_path: Path, script: Path, inputs: dict[str, str], *args: str) -> Any:
    """Run ``script`` under the sandbox's ``python3`` with NeMo-Gym's folder at ``/nemo-gym``
    (on ``PYTHONPATH``), ``inputs`` (name: text) beside it in ``/in`` and a writable
    ``/out``: the JSON of its last output line."""
    inbox, out = (Path(tempfile.mkdtemp(prefix=f"{name}-", dir=tmp_path)) for name in ("in", "out"))
    (inbox / script.name).write_text(script.read_text())
    for name, text in inputs.items():
        (inbox / name).write_text(text)
    result = sandbox.run(
        ["python3", f"/in/{script.name}", *args],
        mounts=[Mount(models_dir(), "/nemo-gym"), Mount(inbox, "/in"), Mount(out, "/out", writable=True)],
        scratch=Path(tempfile.mkdtemp(prefix="scratch-", dir=tmp_path)),
        env={"PYTHONPATH": "/nemo-gym", "PATH": "/usr/bin:/bin"}, limits=Limits(wall_s=120),
    )
    assert result.returncode == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])


def validate(sandbox: Any, tmp_path: Path, payloads: list[tuple[str, Any]]) -> list[tuple[str, str | None]]:
    """NeMo-Gym's verdict on each ``(model name, payload)``: None, or what it objected to."""
    rows = run_with_nemo_gym(sandbox, tmp_path, CHECK, {"payloads.json": json.dumps(payloads)}, "/in/payloads.json")
    return [tuple(row) for row in rows]


def test_our_nemo_gym_traffic_passes_nemo_gyms_own_models(runner, sandbox, tmp_path):
    if not (models_dir() / "nemo_gym" / "base_resources_server.py").exists():
        pytest.skip(f"NeMo-Gym's models are not built at {models_dir()}: run .venv/bin/python scripts/nemo_gym_models.py")
    if sandbox.toolchain.root is None:
        pytest.skip("needs the simulation root's python3 (3.14); the host fallback has none new enough")
    server = serve(runner, tmp_path / "serve-cache", workers=2, queue=4)
    try:
        post = lambda route, body: httpx.post(f"{server.url}{route}", json=body, timeout=120)  # noqa: E731
        text = "Here it is:\n" + "".join(f"```systemverilog\n{t}```\n" for t in EDGE.reference.values())
        params, response = responses_api(text)
        single = {"responses_create_params": params, "response": response, "verifier_metadata": {"problem_id": EDGE.id}}
        # An agent's turn: the files it wrote are graded (here a functionally wrong answer).
        agentic_params, agentic_response = responses_api("Done: the module is in rtl/.")
        agentic = {"responses_create_params": agentic_params, "response": agentic_response,
                   "verifier_metadata": {"problem_id": EDGE.id, "rtl_files": answers(EDGE.id)[2][1]}}
        seed = post("/seed_session", {})
        # An environment server's session: seeded and closed under the caller's id.
        episode = {"rollout_id": "r-1", "attempt": 0}
        session_seed = {"resources_session_id": "s-1", "episode_id": episode, "task_id": {"taskset": "cvdp", "task_id": EDGE.id},
                        "task_data": {"problem_id": EDGE.id}}
        session_close = {"resources_session_id": "s-1", "episode_id": episode}
        seeded, closed = post("/seed_session", session_seed), post("/close_session", session_close)
        reverify = httpx.get(f"{server.url}/reverify_mode", timeout=30)
        verified = [post("/verify", single), post("/verify", agentic)]
        assert [r.status_code for r in (seed, seeded, closed, reverify, *verified)] == [200] * 6, [r.text for r in (seed, *verified)]
        assert seeded.json() == closed.json() == {"resources_session_id": "s-1"} and reverify.json() == "stateless"
        passed, failed = (r.json() for r in verified)
        assert passed["passed"] and passed["reward"] > failed["reward"] and failed["verdict"] == "test_failure"
        # A wrong answer is a measured reward, not a failure of the machinery.
        assert failed["failure_kind"] is None and failed["mask_sample"] is False
        # NeMo-Gym's CVDP report reads these: the exit 0 of a pass, a failed service's own code.
        assert (passed["container_exit_code"], failed["container_exit_code"]) == (0, 1)
        assert [(s["service"], s["exit_code"]) for s in passed["container_services"]] == [("direct", 0)]
        assert [(s["service"], s["exit_code"]) for s in failed["container_services"]] == [("direct", 1)]
        assert "FAIL" in failed["container_services"][0]["stderr"]
        assert failed["container_stderr"].startswith("[direct] ") and "FAIL" in failed["container_stderr"]
        for answer in (passed, failed):  # the reward is the sum of its components
            assert sum(answer["reward_components"].values()) == answer["reward"], answer["reward_components"]
        aggregate_request = {"verify_responses": [passed, failed]}
        aggregate = post("/aggregate_metrics", aggregate_request)
        assert aggregate.status_code == 200, aggregate.text
    finally:
        server.stop()

    payloads = [
        ("BaseSeedSessionRequest", {}), ("BaseSeedSessionResponse", seed.json()),
        ("ResourcesSeedSessionRequest", session_seed), ("ResourcesSeedSessionResponse", seeded.json()),
        ("ResourcesCloseSessionRequest", session_close), ("ResourcesCloseSessionResponse", closed.json()),
        ("ReverifyMode", reverify.json()),
        ("BaseVerifyRequest", single), ("BaseVerifyResponse", passed), ("BaseMultiRewardVerifyResponse", passed),
        ("BaseVerifyRequest", agentic), ("BaseVerifyResponse", failed), ("BaseMultiRewardVerifyResponse", failed),
        ("AggregateMetricsRequest", aggregate_request), ("AggregateMetrics", aggregate.json()),
    ]
    verdicts = validate(sandbox, tmp_path, payloads)
    assert [name for name, _ in verdicts] == [name for name, _ in payloads]
    assert [(name, problem) for name, problem in verdicts if problem] == []


def test_failure_kind_names_only_failures_of_the_machinery():
    from cvdp_gym.grading.result import GradeResult
    from cvdp_gym.service.nemo import failure_kind

    def graded(failure_class: str | None) -> GradeResult:
        return GradeResult(problem_id="p", stages=[], failure_class=failure_class, reason="r")

    assert failure_kind(graded(None)) is None
    assert failure_kind(graded("test_failure")) is None and failure_kind(graded("build_error")) is None
    assert failure_kind(graded("infra_error")) == "verifier_error"
    assert failure_kind(graded("harness_error")) == "cvdp_gym:harness_error"  # the dataset's defect, masked
    assert failure_kind(graded("toolchain_gap")) == "cvdp_gym:toolchain_gap"
    assert failure_kind(graded("unsupported")) == "cvdp_gym:unsupported"
