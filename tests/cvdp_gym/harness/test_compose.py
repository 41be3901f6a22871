"""Reading docker-compose services, .env files and Dockerfiles the way the official runner does."""

from __future__ import annotations

import pytest

from cvdp_gym.harness.compose import HarnessError, detect_generation, parse_env_file, parse_services

COMPOSE = """services:

  direct:
    image: __OSS_SIM_IMAGE__
    volumes:
      - ./src/:/src/:ro # Infrastructure location
      - ./rundir:/code/rundir
    env_file    : ./src/.env
    environment:
      - EXTRA=1
    command     : pytest -s --log-cli-level=INFO -o cache_dir=/rundir/harness/.cache /src/test_runner.py -v
  lint:
    build: .
    env_file: ./src/.env
    working_dir: /code/rundir/lint
    command: ["python3", "/src/lint.py"]
"""


def test_env_file_with_spaces_comments_and_quotes():
    env = parse_env_file(
        "SIM             = icarus\n# comment\nVERILOG_SOURCES = /code/rtl/a.sv /code/rtl/b.sv\n"
        "WAVE = True # trailing\nQUOTED = \"a b\"\nexport PYTHONPATH=/src\nbroken line\n"
    )
    assert env == {
        "SIM": "icarus",
        "VERILOG_SOURCES": "/code/rtl/a.sv /code/rtl/b.sv",
        "WAVE": "True",
        "QUOTED": "a b",
        "PYTHONPATH": "/src",
    }


def test_services_in_order_with_command_env_volumes_and_dockerfile():
    harness = {
        "docker-compose.yml": COMPOSE,
        "Dockerfile": "FROM __OSS_SIM_IMAGE__\nENV FOO=bar\n",
        "src/.env": "SIM = icarus\nTOPLEVEL = inv\n",
        "src/test_runner.py": "from cocotb_tools.runner import get_runner\n",
    }
    direct, lint = parse_services(harness)
    assert direct.name == "direct" and direct.generation == "cocotb2" and direct.unsupported is None
    assert direct.command[:3] == ["pytest", "-s", "--log-cli-level=INFO"]
    assert direct.environment == {"SIM": "icarus", "TOPLEVEL": "inv", "EXTRA": "1"}
    assert [(v.source, v.target, v.read_only) for v in direct.volumes] == [("src", "/src", True)]
    assert any("/code" in note for note in direct.notes)  # dropped, as upstream does
    assert lint.command == ["python3", "/src/lint.py"] and lint.working_dir == "/code/rundir/lint"
    assert lint.environment["FOO"] == "bar" and lint.generation == "cocotb2"


def test_cocotb_generation_detection():
    assert detect_generation({"src/test_runner.py": "from cocotb.runner import get_runner"}) == "cocotb1"
    assert detect_generation({"src/t.py": "cocotb.fork(clock.start())"}) == "cocotb1"
    assert detect_generation({"src/test_runner.py": "from cocotb_tools.runner import get_runner"}) == "cocotb2"
    assert detect_generation({"src/t.py": "import cocotb"}) is None
    old = {"docker-compose.yml": "services:\n  s:\n    image: hdlc/sim:osvb\n    command: pytest /src/t.py\n"}
    assert parse_services(old)[0].generation == "cocotb1"


@pytest.mark.parametrize(
    "image, generation",
    [
        ("__OSS_SIM_IMAGE__", "cocotb2"),
        ("__OSS_PNR_IMAGE__", "cocotb2"),
        ("nvidia/cvdp-sim", "cocotb2"),
        ("nvidia/cvdp-sim:v1.0.0", "cocotb2"),
        ("docker.io/nvidia/cvdp-sim:v1.0.0", "cocotb2"),
        ("hdlc/sim:osvb", "cocotb1"),
        ("ghcr.io/hdl/sim/osvb", "cocotb1"),
        ("ghcr.io/hdl/sim/osvb:latest", "cocotb1"),
        ("gcr.io/hdl-containers/sim/osvb", "cocotb1"),
    ],
)
def test_every_name_of_the_simulator_images_is_mapped(image, generation):
    compose = {"docker-compose.yml": f"services:\n  s:\n    image: {image}\n    command: pytest /src/t.py\n"}
    service = parse_services(compose)[0]
    assert service.unsupported is None and service.generation == generation


def test_unreproducible_images_are_unsupported_with_a_reason():
    commercial = {"docker-compose.yml": "services:\n  x:\n    image: __VERIF_EDA_IMAGE__\n    command: run\n"}
    assert "commercial" in parse_services(commercial)[0].unsupported
    unknown = {"docker-compose.yml": "services:\n  x:\n    image: ubuntu:22.04\n    command: run\n"}
    assert "ubuntu:22.04" in parse_services(unknown)[0].unsupported
    pip = {
        "docker-compose.yml": "services:\n  x:\n    build: .\n    command: pytest\n",
        "Dockerfile": "FROM __OSS_SIM_IMAGE__\nRUN pip3 install cocotb-bus numpy==1.26\n",
    }
    service = parse_services(pip, {"cocotb2": {"cocotb": "2.0.1", "cocotb-bus": "0.3.0"}})[0]
    assert service.unsupported.startswith("needs Python package(s) numpy==1.26 (")
    satisfied = parse_services(pip, {"cocotb2": {"cocotb-bus": "0.3.0", "numpy": "1.26"}})[0]
    assert satisfied.unsupported is None
    apt = {**pip, "Dockerfile": "FROM __OSS_SIM_IMAGE__\nRUN apt-get install -y ghdl\n"}
    assert "apt-get install -y ghdl" in parse_services(apt)[0].unsupported


@pytest.mark.parametrize(
    "compose, message",
    [
        (None, "no docker-compose.yml"),
        ("services: [", "not valid YAML"),
        ("services: {}", "no services"),
        ("services:\n  x:\n    image: __OSS_SIM_IMAGE__\n    env_file: ./src/.env\n    command: pytest\n", "env_file"),
        ("services:\n  x:\n    build: .\n    command: pytest\n", "Dockerfile"),
    ],
)
def test_malformed_harness_is_a_harness_error(compose, message):
    harness = {} if compose is None else {"docker-compose.yml": compose}
    with pytest.raises(HarnessError, match=message):
        parse_services(harness)
