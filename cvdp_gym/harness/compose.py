"""Read a CVDP harness: its ``docker-compose.yml`` services, ``.env`` files and Dockerfiles.

Each service becomes a ``Service`` with the command, environment, mounts and working
directory the official Docker flow would use, plus the local environment that replaces
its image (or the reason none can).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import yaml

from cvdp_gym.errors import HarnessError
from cvdp_gym.harness.dockerfile import read_dockerfile

#: Image placeholders and names that the local toolchain stands in for, with the cocotb
#: generation the image carried. ``hdlc/impl`` (hdl/containers' place-and-route image, which
#: v1.0.x synthesis Dockerfiles start from) had Yosys and Python without cocotb; v1.1.0 names
#: ``__OSS_PNR_IMAGE__`` instead, the official image with Yosys 0.40, which the root carries.
SIM_IMAGES = {
    "__OSS_SIM_IMAGE__": "cocotb2",
    "__OSS_PNR_IMAGE__": "cocotb2",
    "nvidia/cvdp-sim": "cocotb2",
    "hdlc/sim": "cocotb1",
    "hdlc/impl": "cocotb2",
}
#: The hdl/containers simulator image under its registry paths; all are ``hdlc/sim``.
_IMAGE_ALIASES = {
    "ghcr.io/hdl/sim/osvb": "hdlc/sim:osvb",
    "ghcr.io/hdl/sim": "hdlc/sim",
    "gcr.io/hdl-containers/sim/osvb": "hdlc/sim:osvb",
    "gcr.io/hdl-containers/sim": "hdlc/sim",
    "docker.io/hdlc/sim": "hdlc/sim",
    "docker.io/nvidia/cvdp-sim": "nvidia/cvdp-sim",
    "ghcr.io/hdl/impl/pnr": "hdlc/impl:pnr",
    "gcr.io/hdl-containers/impl/pnr": "hdlc/impl:pnr",
    "docker.io/hdlc/impl": "hdlc/impl",
}
COMMERCIAL_IMAGES = ("__VERIF_EDA_IMAGE__",)
_COCOTB1_MARKERS = (
    re.compile(r"^\s*from\s+cocotb\.runner\s+import", re.M),
    re.compile(r"^\s*import\s+cocotb\.runner\b", re.M),
    re.compile(r"\bcocotb\.fork\("),
    re.compile(r"from\s+cocotb\.result\s+import\s+Test(Failure|Success)"),
    re.compile(r"\bBinaryValue\b"),
    re.compile(r"from\s+cocotb\.binary\s+import"),
)
_COCOTB2_MARKERS = (re.compile(r"\bcocotb_tools\b"),)


@dataclass
class Volume:
    source: str  # relative to the harness folder
    target: str
    read_only: bool


@dataclass
class Service:
    """One compose service, ready to run locally."""

    name: str
    image: str
    command: list[str]
    environment: dict[str, str] = field(default_factory=dict)
    volumes: list[Volume] = field(default_factory=list)
    working_dir: str | None = None
    generation: str | None = None  # local environment to use; None when unsupported
    unsupported: str | None = None
    notes: list[str] = field(default_factory=list)


def parse_env_file(text: str) -> dict[str, str]:
    """``KEY = VALUE`` lines (CVDP puts spaces around ``=``); ``#`` comments; quotes stripped."""
    env: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :]
        key, sep, value = line.partition("=")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0].strip()
        if key:
            env[key] = value
    return env


def detect_generation(harness: dict[str, str]) -> str | None:
    """The cocotb generation the harness's Python files were written for, if they say."""
    sources = [text for path, text in harness.items() if path.endswith(".py")]
    if any(m.search(t) for t in sources for m in _COCOTB2_MARKERS):
        return "cocotb2"
    if any(m.search(t) for t in sources for m in _COCOTB1_MARKERS):
        return "cocotb1"
    return None


def canonical_image(image: str) -> str:
    """One name per simulator image: registry aliases mapped to ``hdlc/sim[:tag]``."""
    name = image.strip()
    for alias, canonical in _IMAGE_ALIASES.items():
        if name == alias or name.startswith(alias + ":") or name.startswith(alias + "@"):
            base, _, tag = canonical.partition(":")
            return base + (name[len(alias) :] or (f":{tag}" if tag else ""))
    return name


def image_generation(image: str) -> str | None:
    """The cocotb generation of a simulator image the local toolchain stands in for."""
    name = canonical_image(image)
    for prefix, generation in SIM_IMAGES.items():
        if name == prefix or name.startswith((prefix + ":", prefix + "@")):
            return generation
    return None


def _as_argv(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise HarnessError(f"{what} cannot be split into arguments: {exc}") from exc
    if isinstance(value, list):
        return [str(v) for v in value]
    raise HarnessError(f"{what} must be a string or a list")


def _environment(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): "" if v is None else str(v) for k, v in value.items()}
    if isinstance(value, list):
        out = {}
        for item in value:
            key, _, val = str(item).partition("=")
            out[key.strip()] = val
        return out
    raise HarnessError("'environment' must be a mapping or a list")


def _volumes(value: Any, service: Service) -> list[Volume]:
    out: list[Volume] = []
    for item in value or []:
        if isinstance(item, dict):
            source, target = str(item.get("source", "")), str(item.get("target", ""))
            read_only = bool(item.get("read_only", False))
        else:
            parts = str(item).split(":")
            if len(parts) < 2:
                service.notes.append(f"volume {item!r} has no target; ignored")
                continue
            source, target = parts[0], parts[1]
            read_only = len(parts) > 2 and "ro" in parts[2].split(",")
        if "/code" in target or "/code" in source:
            # The official runner drops these too: /code is always the candidate's workspace.
            service.notes.append(f"volume {item!r} touches /code; dropped as the official runner does")
            continue
        if not (source.startswith("./") or source.startswith("../") or source == "."):
            service.notes.append(f"volume {item!r} is not relative to the harness; not mounted")
            continue
        normal = PurePosixPath(source)
        if ".." in normal.parts:
            service.notes.append(f"volume {item!r} leaves the harness folder; not mounted")
            continue
        out.append(Volume(str(normal), target.rstrip("/") or "/", read_only))
    return out


def parse_services(
    harness: dict[str, str], installed: Mapping[str, Mapping[str, str] | Collection[str]] | None = None
) -> list[Service]:
    """Services of the harness's ``docker-compose.yml``, in file order.

    ``installed`` maps each cocotb generation to the Python distributions its environment
    has, name -> version (to judge a Dockerfile's ``RUN pip install`` steps; ``dockerfile.py``).
    """
    compose_path = next((p for p in harness if PurePosixPath(p).name == "docker-compose.yml"), None)
    if compose_path is None:
        raise HarnessError("harness has no docker-compose.yml")
    try:
        data = yaml.safe_load(harness[compose_path])
    except yaml.YAMLError as exc:
        raise HarnessError(f"docker-compose.yml is not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("services"), dict) or not data["services"]:
        raise HarnessError("docker-compose.yml defines no services")
    base_dir = PurePosixPath(compose_path).parent
    preferred = detect_generation(harness)
    installed = installed or {}
    services: list[Service] = []
    for name, spec in data["services"].items():
        if not isinstance(spec, dict):
            raise HarnessError(f"service {name!r} is not a mapping")
        service = Service(name=str(name), image="", command=[])
        image = spec.get("image")
        build = spec.get("build")
        if build is not None:
            context = build if isinstance(build, str) else str(build.get("context", "."))
            dockerfile = "Dockerfile" if isinstance(build, str) else str(build.get("dockerfile", "Dockerfile"))
            path = posixpath.normpath(posixpath.join(str(base_dir), context, dockerfile))
            text = harness.get(path)
            if text is None:
                raise HarnessError(f"service {name!r} builds from {path}, which the harness lacks")
            plan = read_dockerfile(text, installed.get(preferred or "cocotb2", {}))
            service.environment.update(plan.environment)
            service.working_dir = plan.working_dir or service.working_dir
            service.notes += plan.notes
            service.unsupported = plan.unsupported
            image = plan.base or image
        service.image = str(image or "")
        for marker in COMMERCIAL_IMAGES:
            if marker in service.image:
                service.unsupported = f"needs a commercial EDA image ({marker})"
        if service.unsupported is None:
            mapped = image_generation(service.image)
            if mapped is None:
                service.unsupported = f"image {service.image or '(none)'!r} is not mapped to the local toolchain"
            else:
                service.generation = preferred or mapped
        entrypoint = _as_argv(spec.get("entrypoint"), f"service {name!r} entrypoint")
        command = _as_argv(spec.get("command"), f"service {name!r} command")
        service.command = entrypoint + command
        if not service.command and service.unsupported is None:
            service.unsupported = f"service {name!r} has no command"
        env_files = spec.get("env_file") or []
        if isinstance(env_files, str):
            env_files = [env_files]
        for env_file in env_files:
            file_path = env_file if isinstance(env_file, str) else str(env_file.get("path", ""))
            key = posixpath.normpath(posixpath.join(str(base_dir), file_path))
            text = harness.get(key)
            if text is None:
                raise HarnessError(f"service {name!r} reads env_file {file_path}, which the harness lacks")
            service.environment.update(parse_env_file(text))
        service.environment.update(_environment(spec.get("environment")))
        service.volumes = _volumes(spec.get("volumes"), service)
        if spec.get("working_dir"):
            service.working_dir = str(spec["working_dir"])
        services.append(service)
    return services
