"""Compile-only checks of a candidate, before any simulation: the grader's syntax stage.

Contract: ``compile_only`` compiles the sources a harness service lists, in the sandbox,
with the simulator that service uses (Icarus: ``iverilog -g2012 -t null``, parse and
elaborate without code generation; Verilator: ``--lint-only``), and returns a
``LintResult``; it never raises for what the compiler says. When the host toolchain's
Icarus 11 rejects code, ``full_parser_accepts`` asks slang (a full SystemVerilog front
end) for a second opinion: code slang accepts is a toolchain gap (``gap``), since the
official image's newer Icarus may accept it, not the answer's fault.

``HarnessRunner`` lays out the run folder and calls these (``HarnessRunner.lint``); the
harness run itself uses ``full_parser_accepts`` for the same question after a build error.
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvdp_gym.harness.compose import Service
from cvdp_gym.harness.results import compile_errors, sorry_lines
from cvdp_gym.harness.svparse import parse_sources
from cvdp_gym.sandbox.base import Limits, Mount, Sandbox
from cvdp_gym.sandbox.paths import UnsafePathError, check_relative_path
from cvdp_gym.toolchain import Toolchain


@dataclass
class LintResult:
    """A compile-only verdict: ``ok``, or the compiler's errors (``gap``: Icarus-only rejection)."""

    ok: bool
    gap: bool
    errors: list[str]
    simulator: str
    seconds: float
    #: The compiler did not finish (its limit, or a cancelled job killed it): no verdict.
    timed_out: bool = False


def compile_call(toolchain: Toolchain, run_dir: Path, service: Service) -> tuple[list[str], dict[str, Any], str]:
    """The compile-only sandbox call for ``service`` in the laid-out ``run_dir``: ``argv``,
    the keyword arguments of ``Sandbox.run`` and the simulator (``cvdp-gym debug`` prints it)."""
    sources = service.environment["VERILOG_SOURCES"].split()
    top = service.environment.get("TOPLEVEL", "")
    simulator = service.environment.get("SIM", "icarus").lower()
    present = [s for s in sources if (run_dir / "code" / check_relative_path(s)).exists()]
    if simulator == "verilator":
        argv = ["verilator", "--lint-only", "-Wno-fatal", "-Wno-lint", "-Wno-style", "--timing"]
        argv += ["--top-module", top] if top else []
    else:
        simulator = "icarus"
        argv = ["iverilog", "-g2012", "-t", "null"] + (["-s", top] if top else [])
    argv += sorted({f"-I{posixpath.dirname(s)}" for s in present}) + present
    kwargs: dict[str, Any] = {
        "mounts": [Mount(run_dir / "code", "/code")],
        "scratch": run_dir / "scratch",
        "cwd": "/code",
        "env": {"HOME": "/tmp"},
        "sim_env": toolchain.env(service.generation or "cocotb2"),
        "limits": Limits(wall_s=60, output_bytes=20_000),
    }
    return argv, kwargs, simulator


def compile_only(
    sandbox: Sandbox, toolchain: Toolchain, run_dir: Path, service: Service, *, started: float
) -> LintResult:
    """Compile ``service``'s ``VERILOG_SOURCES`` found under ``run_dir/code`` (laid out as for
    a harness run); ``started``: the ``time.monotonic()`` the check began (for ``seconds``)."""
    argv, kwargs, simulator = compile_call(toolchain, run_dir, service)
    outcome = sandbox.run(argv, **kwargs)
    ok = outcome.returncode == 0 and not outcome.timed_out
    errors = compile_errors(outcome.output) or ([outcome.output.strip()[-500:]] if not ok else [])
    gap = False
    if not ok and simulator == "icarus" and toolchain.reports_gaps:
        gap = bool(sorry_lines(outcome.output)) or full_parser_accepts(run_dir, service)
    return LintResult(ok, gap, errors, simulator, time.monotonic() - started, timed_out=outcome.timed_out)


def full_parser_accepts(run_dir: Path, service: Service) -> bool:
    """Second opinion from slang, a full SystemVerilog front end, on what Icarus rejected."""
    sources = {}
    for path in service.environment.get("VERILOG_SOURCES", "").split():
        try:
            local = run_dir / "code" / check_relative_path(path)
        except UnsafePathError:
            return False
        if not local.is_file():
            return False
        sources[path] = local.read_text(encoding="utf-8", errors="replace")
    if not sources:
        return False
    parsed = parse_sources(sources)
    top = service.environment.get("TOPLEVEL")
    return parsed.ok and (not top or top in parsed.modules)
