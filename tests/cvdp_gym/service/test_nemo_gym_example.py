"""examples/nemo_gym: cvdp-gym as a NeMo-Gym resources server, started the way ``ng_run`` starts one.

Its config is read by NeMo-Gym's own ``maybe_get_server_instance_config`` (in the sandbox's
Python 3.14), and its ``app.py`` is run as ``ng_run`` runs an entrypoint: with
``NEMO_GYM_CONFIG_DICT`` (the resolved config, the instance given a host and port) and
``NEMO_GYM_CONFIG_PATH`` in its environment. It must serve ``/verify`` there with the
config's options (binary reward), and stop on SIGTERM.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from tests.cvdp_gym.service.test_nemo_gym_models import models_dir, responses_api, validate
from tests.cvdp_gym.service.test_service import EDGE

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "nemo_gym" / "resources_servers" / "cvdp_gym"


def instance_config(port: int) -> dict:
    config = yaml.safe_load((EXAMPLE / "configs" / "cvdp_gym.yaml").read_text())
    (server,) = config["cvdp"]["resources_servers"].values()
    server.update(host="127.0.0.1", port=port)
    return config


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_example_config_is_a_resources_server_to_nemo_gym(sandbox, tmp_path):
    if not (models_dir() / "nemo_gym" / "config_types.py").exists():
        pytest.skip(f"NeMo-Gym's models are not built at {models_dir()}: run .venv/bin/python scripts/nemo_gym_models.py")
    if sandbox.toolchain.root is None:
        pytest.skip("needs the simulation root's python3 (3.14)")
    verdicts = validate(sandbox, tmp_path, [("config:cvdp", instance_config(9000)["cvdp"])])
    assert verdicts == [("config:cvdp", None)]


def test_the_example_entrypoint_serves_verify_where_nemo_gym_says(toolchain, tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "NEMO_GYM_CONFIG_DICT": yaml.safe_dump(instance_config(port)),
        "NEMO_GYM_CONFIG_PATH": "cvdp",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    process = subprocess.Popen([sys.executable, "app.py"], cwd=EXAMPLE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stdout.read().decode() if process.stdout else ""
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the example server did not start"
            time.sleep(0.2)
        text = "".join(f"```systemverilog\n{t}```\n" for t in EDGE.reference.values())
        params, response = responses_api(text)
        answer = httpx.post(f"{url}/verify", json={
            "responses_create_params": params, "response": response, "verifier_metadata": {"task_id": EDGE.id},
        }, timeout=300).json()
        assert answer["passed"] and answer["reward"] == 1.0  # the config's binary reward
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert process.returncode is not None
