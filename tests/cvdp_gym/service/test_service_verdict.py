"""``/v1/grade`` takes a verdict per request: ``testbench+reference`` fails a wrong design its
test bench passes, while a request that names none gets the server's (here ``testbench``);
``/verify`` rewards a reach into the test bench as a build error.

A real uvicorn server on 127.0.0.1 over the made-up RTLLM v2.0 copy, the real toolchain."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx

from cvdp_gym.data import load_dataset
from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.grading import Grader
from cvdp_gym.service.app import ServiceConfig, create_app
from tests.support import RTLLM_COPY, WRONG_ADDER, ServedApp

pytestmark = pytest.mark.sandbox



def test_a_request_names_its_verdict(runner, tmp_path):
    data = load_dataset("rtllm-v2", benchmark_dir=RTLLM_COPY)
    adder = data["rtllm-v2.adder_4bit"]
    server = ServedApp(create_app(ServiceConfig(Grader(runner, cache=GradeCache(tmp_path / "grades.sqlite")), data, workers=1)))
    try:
        body = {"problem_id": adder.id, "files": {adder.targets[0]: WRONG_ADDER}}
        plain = httpx.post(f"{server.url}/v1/grade", json=body, timeout=120).json()
        backed = httpx.post(f"{server.url}/v1/grade", json={**body, "verdict": "testbench+reference"}, timeout=120).json()
        bad = httpx.post(f"{server.url}/v1/grade", json={**body, "verdict": "reference"}, timeout=30)
        # NeMo-Gym's /verify, an answer that forces the test bench's error count (RTLLM's own reading passes it)
        forcing = WRONG_ADDER.replace("endmodule", "  initial force adder_4bit_tb.error = 0;\nendmodule")
        verify = {
            "responses_create_params": {"input": [{"role": "user", "content": "add"}]},
            "response": {"id": "resp_1", "output": [{"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": f"```verilog\n{forcing}```\n"}]}]},
            "verifier_metadata": {"problem_id": adder.id},
        }
        reached = httpx.post(f"{server.url}/verify", json=verify, timeout=120).json()
    finally:
        server.stop()
    assert (plain["passed"], plain["verdict_kind"], plain["reference_check"]) == (True, "testbench", {})
    assert (backed["passed"], backed["verdict"], backed["verdict_kind"]) == (False, "not_equivalent", "testbench+reference")
    assert backed["reference_check"]["verdict"] == "different" and backed["reward"] == pytest.approx(0.4)
    assert backed["official"]["auto_run"] and not backed["cached"]  # the benchmark's reading; its own cache entry
    assert bad.status_code == 422
    assert (reached["passed"], reached["verdict"], reached["reward"]) == (False, "reach_in", pytest.approx(0.1))
    assert reached["reward_components"] == {"format": 0.1, "syntax": 0.0, "tests": 0.0}
