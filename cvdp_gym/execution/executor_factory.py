"""Executors by name: the one module that knows every kind of ``GradeExecutor``.

A spec string picks where grading jobs run (see ``cvdp_gym.execution.executors``):
``threads[:N]`` (default), ``processes[:N]`` or ``ray[:ADDRESS]``. The executors
themselves live one kind a module (``executors.py``: threads and processes;
``ray_executor.py``: Ray, which imports Ray itself only when one is made), so none of them
needs to know the others; like Gymnasium's ``registration.py``, this factory sits above
them all.
"""

from __future__ import annotations

from cvdp_gym.errors import ConfigError
from cvdp_gym.execution.executors import GradeExecutor, ProcessExecutor, ThreadExecutor
from cvdp_gym.execution.ray_executor import RayExecutor

EXECUTORS = ("threads", "processes", "ray")


def parse_executor(spec: str) -> tuple[str, str | None]:
    """``"ray:10.0.0.1:6379"`` → ``("ray", "10.0.0.1:6379")``; ``"threads:4"`` → ``("threads", "4")``."""
    name, _, rest = spec.strip().partition(":")
    if name not in EXECUTORS:
        raise ConfigError(f"unknown executor {spec!r}; expected threads[:N], processes[:N] or ray[:ADDRESS]")
    if name != "ray" and rest and not rest.isdigit():
        raise ConfigError(f"{name}: the worker count must be a number, not {rest!r}")
    return name, rest or None


def executor_besides_threads(spec: str | None, *, workers: int = 2) -> GradeExecutor | None:
    """The executor a spec names, or None for ``threads``: the caller's own threads then
    grade in place (no second pool between them and the sandbox)."""
    if spec is None or parse_executor(spec)[0] == "threads":
        return None
    return make_executor(spec, workers=workers)


def make_executor(spec: str | GradeExecutor | None = None, *, workers: int = 2) -> GradeExecutor:
    """An executor from a spec string (see the module docstring); objects pass through."""
    if spec is not None and not isinstance(spec, str):
        return spec
    name, rest = parse_executor(spec or "threads")
    if name == "threads":
        return ThreadExecutor(int(rest) if rest else workers)
    if name == "processes":
        return ProcessExecutor(int(rest) if rest else workers)
    return RayExecutor(rest)
