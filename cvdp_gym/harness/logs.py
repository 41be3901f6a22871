"""The compiler and simulator logs a CVDP harness run leaves in its writable folders.

cocotb sends the compiler's output to log files rather than the console, so a build error's
own lines are read back from the run folder (``read_logs``): only files written since the
service started (an earlier service's logs are not this one's), never through a link made
inside the sandbox, and only their tails.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["read_logs", "writable_roots"]

_LOG_READ_BYTES = 64_000


def writable_roots(run_dir: Path) -> list[Path]:
    """The folders a harness run can write: its run directory, seen at /code/rundir and /rundir."""
    return [run_dir / "code" / "rundir", run_dir / "rundir"]


#: Slack on "written since the service started": file times come from a coarse kernel clock.
_MTIME_SLACK_S = 0.05


def read_logs(run_dir: Path, *, since: float = 0.0) -> str:
    """The tails of the compiler and simulator logs the harness left in its writable folders,
    written since ``since`` (``time.time()``): an earlier service's logs are not this one's."""
    chunks: list[str] = []
    for root in writable_roots(run_dir):
        if not root.exists():
            continue
        for path in sorted(root.rglob("*.log")):
            if path.is_symlink() or not path.is_file():
                continue  # a link made inside the sandbox must not make us read host files
            try:
                with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
                    info = os.fstat(handle.fileno())
                    if info.st_mtime < since - _MTIME_SLACK_S:
                        continue
                    size = info.st_size
                    handle.seek(max(0, size - _LOG_READ_BYTES))
                    chunks.append(f"--- {path.name} ---\n" + handle.read().decode("utf-8", "replace"))
            except OSError:
                continue
    return "\n".join(chunks)
