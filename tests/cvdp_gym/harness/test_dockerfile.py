"""Dockerfiles of harness services: steps the stand-in already satisfies, and the rest, with reasons."""

from __future__ import annotations

import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.harness.compose import parse_services
from cvdp_gym.harness.dockerfile import read_dockerfile

#: The distributions of the cocotb2 environment, as ``SimEnv.package_versions`` gives them.
ENV = {"pip": "26.0", "pytest": "8.3.2", "cocotb": "2.0.1", "cocotb-bus": "0.3.0"}
#: CVDP's synthesis Dockerfile (v1.1.0 names the placeholder; v1.0.x hdl/containers' impl image).
SYNTH = """FROM __OSS_PNR_IMAGE__

ADD https://bootstrap.pypa.io/get-pip.py get-pip.py
RUN python3 ./get-pip.py
RUN python3 -m pip install pytest"""


@pytest.mark.parametrize("base", ["__OSS_PNR_IMAGE__", "ghcr.io/hdl/impl/pnr AS BASE"])
def test_the_synthesis_dockerfile_is_satisfied_without_fetching_anything(base):
    plan = read_dockerfile(SYNTH.replace("__OSS_PNR_IMAGE__", base), ENV)
    assert plan.unsupported is None, plan.unsupported
    assert plan.base == base.split()[0]
    assert any("not fetched" in note and "get-pip.py" in note for note in plan.notes)
    assert any("RUN python3 ./get-pip.py skipped" in note for note in plan.notes)
    assert any("pip install pytest: already installed" in note for note in plan.notes)


@pytest.mark.parametrize(
    "steps",
    [
        "RUN pip install pytest cocotb-bus==0.3.0",
        "RUN pip3 install --no-cache-dir -q 'cocotb_bus==0.3.0' && echo done",
        "RUN python3.12 -m pip install --upgrade pip pytest",
        "RUN mkdir -p /code/rundir; chmod 777 /code/rundir",
        "ENV FOO=bar BAZ=1\nWORKDIR /code/rundir\nARG X=1\nLABEL a=b\nUSER 1000\nCMD [\"bash\"]",
        "ADD https://bootstrap.pypa.io/pip/3.8/get-pip.py /tmp/get-pip.py\nRUN python /tmp/get-pip.py --no-warn-script-location",
    ],
)
def test_steps_that_change_nothing_here_are_satisfied(steps):
    plan = read_dockerfile(f"FROM __OSS_SIM_IMAGE__\n{steps}\n", ENV)
    assert plan.unsupported is None, plan.unsupported


def test_env_and_workdir_reach_the_service():
    plan = read_dockerfile("FROM __OSS_SIM_IMAGE__\nENV FOO=bar BAZ=\"a b\"\nENV OLD style\nWORKDIR /code/rundir\n", ENV)
    assert plan.environment == {"FOO": "bar", "BAZ": "a b", "OLD": "style"}
    assert plan.working_dir == "/code/rundir"


@pytest.mark.parametrize(
    "steps, reason",
    [
        ("RUN apt-get update && apt-get install -y ghdl", "Dockerfile step not reproducible locally: RUN apt-get update"),
        ("RUN pip install numpy", "needs Python package(s) numpy (Dockerfile: RUN pip install numpy)"),
        ("RUN pip install pytest==7.4.0", "needs Python package(s) pytest==7.4.0"),
        ("RUN pip install 'pytest>=8'", "pytest>=8 (not a plain name or name==version)"),
        ("RUN pip install -r requirements.txt", "pip install -r is not reproducible locally"),
        ("RUN pip install git+https://github.com/x/y", "not a plain name"),
        ("ADD https://example.com/tool.tar.gz /opt/", "downloads https://example.com/tool.tar.gz, which is never fetched"),
        ("COPY scripts/ /opt/scripts/", "COPY of build files into the image is not reproduced locally"),
        ("RUN python3 ./get-pip.py", "Dockerfile step not reproducible locally: RUN python3 ./get-pip.py"),
        ("FROM ubuntu:24.04 AS second", "multi-stage Dockerfile not reproducible locally"),
        ("ENTRYPOINT [\"/bin/sh\"]", "Dockerfile step not reproducible locally: ENTRYPOINT"),
    ],
    ids=["apt", "missing", "other-version", "range", "requirements-file", "url", "other-url", "copy",
         "bootstrap-without-add", "multi-stage", "entrypoint"],
)
def test_anything_else_is_unsupported_with_the_step_as_reason(steps, reason):
    plan = read_dockerfile(f"FROM __OSS_SIM_IMAGE__\n{steps}\n", ENV)
    assert plan.unsupported is not None and reason in plan.unsupported, plan.unsupported


def test_a_bare_set_of_names_cannot_satisfy_a_pinned_version():
    assert read_dockerfile("FROM x\nRUN pip install pytest\n", {"pytest"}).unsupported is None
    plan = read_dockerfile("FROM x\nRUN pip install pytest==8.3.2\n", {"pytest"})
    assert plan.unsupported is not None and "pytest==8.3.2" in plan.unsupported


def test_the_bundled_synthesis_service_runs_in_the_root_with_its_dockerfile_notes():
    problem = load_dataset("bundled")["cvdp_gym_gray_counter_area_0001"]
    sanity, synth = parse_services(problem.harness, {"cocotb2": ENV})
    assert sanity.unsupported is None and synth.unsupported is None
    assert synth.image == "__OSS_PNR_IMAGE__" and synth.generation == "cocotb2"
    assert synth.working_dir == "/code/rundir" and synth.command == ["pytest", "/src/synth.py", "-s", "-v"]
    assert len([n for n in synth.notes if n.startswith("Dockerfile")]) == 3
    # Without pytest in the environment the same service is unsupported, and says why.
    bare = parse_services(problem.harness, {"cocotb2": {"pip": "26.0"}})[1]
    assert bare.unsupported is not None and bare.unsupported.startswith("needs Python package(s) pytest (")


def test_hdl_containers_impl_image_maps_to_the_root():
    harness = {
        "docker-compose.yml": "services:\n  synth:\n    build:\n      dockerfile: src/Dockerfile.synth\n    command: pytest /src/synth.py\n",
        "src/Dockerfile.synth": SYNTH.replace("__OSS_PNR_IMAGE__", "ghcr.io/hdl/impl/pnr AS BASE"),
    }
    service = parse_services(harness, {"cocotb2": ENV})[0]
    assert service.unsupported is None and service.generation == "cocotb2"
    assert service.image == "ghcr.io/hdl/impl/pnr"
