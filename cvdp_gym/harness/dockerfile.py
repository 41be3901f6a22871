"""What a harness service's Dockerfile asks for, and whether the local environment has it already.

Contract: ``read_dockerfile(text, installed)`` reads a Dockerfile step by step and returns a
``DockerfilePlan``: the base image (``FROM``), the variables (``ENV``) and working directory
(``WORKDIR``) it gives the service, a note for every step that is satisfied without
building anything, and ``unsupported``: the reason of the first step the local environment
cannot stand for (``None`` when every step is satisfied). Nothing is built, fetched or run.

CVDP's synthesis harnesses build their image from ``src/Dockerfile.synth``: ``FROM`` the
simulation image, an ``ADD`` of pip's bootstrap script (``get-pip.py``), ``RUN`` of it, and
``RUN pip install pytest``. The stand-in environments have pip and pytest, so those steps
change nothing there. Satisfied:

- ``FROM IMAGE [AS NAME]``, once (the image is then mapped as a compose ``image:``);
- ``ENV``, ``WORKDIR``: applied to the service; ``ARG``, ``LABEL``, ``EXPOSE``,
  ``MAINTAINER``, ``CMD`` (the compose ``command`` replaces it), ``USER`` (the sandbox runs
  as the caller, as the official runner's ``--user``): no effect here;
- ``ADD``/``COPY`` of pip's bootstrap URL (``https://bootstrap.pypa.io/...get-pip.py``):
  never fetched, since pip is there;
- ``RUN python3 get-pip.py`` of that script (pip installs itself: it is there);
- ``RUN [python3 -m] pip install NAME[==VERSION] ...`` when every named distribution is
  installed (at that version when one is pinned); options that only change how pip runs
  are ignored;
- ``RUN`` of ``echo``, ``mkdir``, ``true``, ``chmod``, chained with ``&&`` or ``;``.

Anything else (another ``RUN``, ``COPY`` of files, ``ADD`` of another URL, a second
``FROM``, ``ENTRYPOINT``, ``pip install -r FILE``, a version range, a missing package) makes
the service ``unsupported``, with that step as the reason.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

#: pip's bootstrap script, which CVDP's synthesis Dockerfiles download (never fetched here).
PIP_BOOTSTRAP = re.compile(r"^https://bootstrap\.pypa\.io/(?:pip/[\w.]+/)?get-pip\.py$")
#: Instructions that change nothing a harness command sees in the stand-in environment.
_NO_EFFECT = {
    "ARG": "a build argument",
    "LABEL": "image metadata",
    "EXPOSE": "a port (the sandbox has no network)",
    "MAINTAINER": "image metadata",
    "CMD": "a default command (the compose command replaces it)",
    "USER": "a user (the sandbox runs as the caller, as the official runner's --user)",
    "STOPSIGNAL": "a stop signal",
    "HEALTHCHECK": "a health check",
}
#: ``RUN`` commands that leave nothing a harness depends on.
_HARMLESS = ("echo", "mkdir", "true", "chmod", ":")
#: pip options that change how it runs, not what ends up installed.
_PIP_FLAGS = {
    "-q", "--quiet", "-v", "--verbose", "-U", "--upgrade", "--user", "--no-cache-dir",
    "--break-system-packages", "--disable-pip-version-check", "--no-warn-script-location",
    "--ignore-installed", "-I", "--force-reinstall", "--no-input", "--progress-bar",
    "--root-user-action", "--upgrade-strategy", "--prefer-binary", "--no-deps",
}
_PIP_FLAGS_WITH_VALUE = {"--progress-bar", "--root-user-action", "--upgrade-strategy"}
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?(?:==([A-Za-z0-9.+!_-]+))?$")


@dataclass
class DockerfilePlan:
    """What a Dockerfile gives its service, and whether the local environment covers it."""

    base: str | None = None
    environment: dict[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    notes: list[str] = field(default_factory=list)
    unsupported: str | None = None


def _pip_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_dockerfile(text: str, installed: Mapping[str, str] | Collection[str]) -> DockerfilePlan:
    """The plan of ``text`` given ``installed``: the distributions of the environment the
    service runs in (name -> version; a bare collection of names cannot satisfy a pinned
    version)."""
    plan = DockerfilePlan()
    bootstraps: set[str] = set()  # where ADD put pip's bootstrap script
    for line in _instructions(text):
        word, _, rest = line.partition(" ")
        word, rest = word.upper(), rest.strip()
        if plan.unsupported is not None:
            break
        if word == "FROM":
            if plan.base is not None:
                plan.unsupported = f"multi-stage Dockerfile not reproducible locally: FROM {rest}"
            else:
                plan.base = rest.split()[0] if rest.split() else None
        elif word == "ENV":
            _apply_env(rest, plan)
        elif word == "WORKDIR":
            plan.working_dir = rest
        elif word in _NO_EFFECT:
            plan.notes.append(f"Dockerfile {word} ignored: {_NO_EFFECT[word]}")
        elif word in ("ADD", "COPY"):
            _add(word, rest, plan, bootstraps)
        elif word == "RUN":
            _run(rest, plan, bootstraps, installed)
        else:
            plan.unsupported = f"Dockerfile step not reproducible locally: {line}"
    return plan


def _instructions(text: str) -> list[str]:
    """Instruction lines: continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n", " ", text)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def _apply_env(rest: str, plan: DockerfilePlan) -> None:
    if "=" in rest.split(" ", 1)[0]:
        for token in shlex.split(rest):
            key, _, value = token.partition("=")
            plan.environment[key] = value
    else:
        key, _, value = rest.partition(" ")
        plan.environment[key] = value.strip()


def _add(word: str, rest: str, plan: DockerfilePlan, bootstraps: set[str]) -> None:
    args = [a for a in shlex.split(rest) if not a.startswith("--")]
    if len(args) == 2 and PIP_BOOTSTRAP.match(args[0]):
        bootstraps.add(args[1].rstrip("/"))
        plan.notes.append(f"Dockerfile {word} {args[0]} not fetched: pip is in the environment")
    elif args and re.match(r"^[a-z]+://", args[0]):
        plan.unsupported = f"Dockerfile {word} downloads {args[0]}, which is never fetched here"
    else:
        plan.unsupported = f"Dockerfile {word} of build files into the image is not reproduced locally: {word} {rest}"


def _run(command: str, plan: DockerfilePlan, bootstraps: set[str], installed: Mapping[str, str] | Collection[str]) -> None:
    for step in (s.strip() for s in re.split(r"&&|;", command)):
        if not step:
            continue
        try:
            tokens = shlex.split(step)
        except ValueError:
            plan.unsupported = f"Dockerfile step not reproducible locally: RUN {command}"
            return
        if tokens[0] in _HARMLESS:
            continue
        if _is_bootstrap_run(tokens, bootstraps):
            plan.notes.append(f"Dockerfile RUN {step} skipped: pip is in the environment")
            continue
        if _is_pip_install(tokens):
            problem = _pip_install_problem(tokens[tokens.index("install") + 1 :], installed)
            if problem:
                plan.unsupported = f"{problem} (Dockerfile: RUN {command}); add them to the simulation environment"
                return
            plan.notes.append(f"Dockerfile RUN {step}: already installed")
            continue
        plan.unsupported = f"Dockerfile step not reproducible locally: RUN {command}"
        return


def _is_bootstrap_run(tokens: list[str], bootstraps: set[str]) -> bool:
    """``python3 [-flags] ./get-pip.py [pip options]`` of a script an ``ADD`` put there."""
    if not bootstraps or not re.fullmatch(r"python(3(\.\d+)?)?", tokens[0]):
        return False
    script = next((t for t in tokens[1:] if not t.startswith("-")), "")
    names = {b.removeprefix("./") for b in bootstraps} | {b.rsplit("/", 1)[-1] for b in bootstraps}
    return script.removeprefix("./") in names or script.rsplit("/", 1)[-1] in names


def _is_pip_install(tokens: list[str]) -> bool:
    if "install" not in tokens:
        return False
    head = tokens[: tokens.index("install")]
    return head in (["pip"], ["pip3"]) or (
        len(head) == 3 and re.fullmatch(r"python(3(\.\d+)?)?", head[0]) is not None and head[1:] == ["-m", "pip"]
    )


def _pip_install_problem(args: list[str], installed: Mapping[str, str] | Collection[str]) -> str | None:
    """Why ``pip install ARGS`` would change the environment (``None``: it would not)."""
    missing: list[str] = []
    skip_value = False
    for arg in args:
        if skip_value:
            skip_value = False
            continue
        if arg.startswith("-"):
            flag = arg.split("=", 1)[0]
            if flag not in _PIP_FLAGS:
                return f"pip install {arg} is not reproducible locally"
            skip_value = flag in _PIP_FLAGS_WITH_VALUE and "=" not in arg
            continue
        match = _REQUIREMENT.match(arg)
        if match is None:
            return f"pip install {arg} (not a plain name or name==version) is not reproducible locally"
        name, version = _pip_name(match.group(1)), match.group(2)
        have = next((v for k, v in installed.items() if _pip_name(k) == name), None) if isinstance(installed, Mapping) else None
        present = have is not None or any(_pip_name(k) == name for k in installed)
        if not present or (version is not None and have != version):
            missing.append(f"{name}=={version}" if version else name)
    return f"needs Python package(s) {', '.join(missing)}" if missing else None
