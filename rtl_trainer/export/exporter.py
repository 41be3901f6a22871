"""``export_run``: the options checked and the output folder claimed before any download or
model load, then the run's backend (local or Tinker) does the export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rtl_trainer.errors import ConfigError
from rtl_trainer.export.local import export_local
from rtl_trainer.export.run import find_checkpoint
from rtl_trainer.export.tinker import export_tinker
from rtl_trainer.export.write import DTYPES, check_out

#: ``merged``: the LoRA folded into the base weights; ``peft``: the adapter alone.
FORMATS = ("merged", "peft")


def export_run(
    run_dir: str | Path,
    out: str | Path,
    *,
    format: str,
    step: int | None = None,
    dtype: str = "auto",
    tinker_service: Any = None,
) -> dict[str, Any]:
    """Export checkpoint ``step`` (default: the latest) of ``run_dir`` to ``out`` in
    ``format`` (``merged`` or ``peft``), by the run's backend; return ``export.json``'s
    content. ``tinker_service`` (a ``TinkerService``) is made from ``TINKER_API_KEY`` when
    a Tinker run needs one and none is given."""
    if format not in FORMATS:
        raise ConfigError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    if dtype not in DTYPES:
        raise ConfigError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    out = Path(out)
    check_out(out)  # before any download or model load
    checkpoint = find_checkpoint(run_dir, step)
    if checkpoint.backend == "tinker":
        return export_tinker(checkpoint, out, format, dtype, service=tinker_service)
    if checkpoint.backend == "local":
        return export_local(checkpoint, out, format, dtype)
    raise ConfigError(f"{run_dir}: unknown backend {checkpoint.backend!r} in config.json")
