"""What the benchmarks' official flows share: their verdict type and one sandboxed run.

Contract: ``BenchmarkVerdict`` is an ``OfficialVerdict`` (outcome ``passed``/``failed`` for a
verdict, ``machine``/``missing`` for none) with ``reading``: the official script's own
words for the answer (VerilogEval v2 ``{"class"}``, v1 ``{"result"}``, RTLLM
``{"compiled", "auto_run"}``), compared key by key with our flow's ``official``.

``run_sandboxed`` runs one shell script of an official flow in the project's sandbox: the
user's clone read-only at ``/benchmark``, the flow's stand-ins and shims read-only at
``/parity`` (``/parity/bin`` first on ``PATH``), a writable folder at ``/work`` (its
working directory), any extra read-only mounts, and the simulator the problems name bound
in (``Toolchain.binds``: Icarus 12 for VerilogEval). Nothing of the clone is ever written.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cvdp_gym.parity.official import FAILED, MACHINE, MISSING, PASSED, OfficialVerdict
from cvdp_gym.sandbox.base import Limits, Mount, Sandbox, SandboxResult

__all__ = [
    "BENCHMARK",
    "PARITY",
    "WORK",
    "BenchmarkVerdict",
    "machine",
    "machine_reason",
    "missing",
    "newer_than",
    "read_tail",
    "run_sandboxed",
    "verdict",
    "write_executable",
]

#: Where the clone, the stand-ins and the writable folder are seen inside the sandbox.
BENCHMARK, PARITY, WORK = "/benchmark", "/parity", "/work"
#: Bytes of a log kept in a verdict's ``log_tail``.
TAIL_BYTES = 4000


@dataclass
class BenchmarkVerdict(OfficialVerdict):
    """An official verdict with the official script's own reading of the answer."""

    reading: dict[str, Any] = field(default_factory=dict)


def verdict(
    key: str, passed: bool, reading: dict[str, Any], *, reason: str = "", logs: Sequence[Path] = (), seconds: float = 0.0,
) -> BenchmarkVerdict:
    """A verdict of the official script, its logs' tail kept for the disagreement printout."""
    tail = "\n".join(f"== {p.name}\n{read_tail(p)}" for p in logs if p.exists())[-TAIL_BYTES:]
    return BenchmarkVerdict(
        key, PASSED if passed else FAILED, reason, [str(p) for p in logs], tail, seconds, reading=dict(reading),
    )


def machine(key: str, why: str, log_tail: str = "") -> BenchmarkVerdict:
    """The official flow could not run at all: no verdict."""
    return BenchmarkVerdict(key, MACHINE, why, [], log_tail[-TAIL_BYTES:])


def missing(key: str, why: str) -> BenchmarkVerdict:
    """The official flow ran but gave no verdict for this answer."""
    return BenchmarkVerdict(key, MISSING, why)


def read_tail(path: Path, limit: int = TAIL_BYTES) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, path.stat().st_size - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def write_executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


def run_sandboxed(
    sandbox: Sandbox,
    script: str,
    *,
    clone: Path,
    parity: Path,
    work: Path,
    simulator: str,
    limits: Limits,
    extra_mounts: Sequence[Mount] = (),
    env: Mapping[str, str] | None = None,
) -> SandboxResult:
    """Run ``script`` with bash in ``/work`` (see the module doc for the mounts)."""
    work.mkdir(parents=True, exist_ok=True)
    mounts = [
        Mount(clone.resolve(), BENCHMARK),
        Mount(parity.resolve(), PARITY),
        Mount(work.resolve(), WORK, writable=True),
        *extra_mounts,
        *(Mount(source, target) for source, target in sandbox.toolchain.binds(simulator)),
    ]
    variables = {"PATH": f"{PARITY}/bin:/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", **(env or {})}
    scratch = Path(tempfile.mkdtemp(prefix="cvdp-gym-parity-"))
    try:
        return sandbox.run(["/bin/bash", "-c", script], mounts=mounts, scratch=scratch, cwd=WORK, env=variables, limits=limits)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def machine_reason(result: SandboxResult, what: str) -> str:
    """Why a sandboxed official run gave nothing, in words."""
    if result.timed_out:
        return f"{what}: killed after {result.wall_s:.0f} s (the sandbox's wall-time limit)"
    if result.out_of_memory:
        return f"{what}: killed for exceeding the memory limit"
    last = next((line for line in reversed(result.output.splitlines()) if line.strip()), "")
    return f"{what} failed (exit {result.returncode})" + (f": {last.strip()[:300]}" if last else "")


def newer_than(path: Path, *others: Path) -> None:
    """Give ``path`` a modification time after every one of ``others`` (and now)."""
    newest = max([os.stat(o).st_mtime for o in others if o.exists()] + [0.0])
    stamp = max(newest + 2.0, os.stat(path).st_mtime)
    os.utime(path, (stamp, stamp))
