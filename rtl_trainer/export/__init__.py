"""``rtl-train export``: a run's checkpoint as a model that can leave the run directory.

``export_run(RUN_DIR, OUT, format=...)`` takes the latest checkpoint of a run (or the one
of ``step``) and writes OUT, a new or empty folder:

- ``merged``: a Hugging Face model folder (``config.json``, ``model.safetensors``) with
  the LoRA folded into the base weights (``merge_and_unload``), loadable by
  ``transformers.AutoModelForCausalLM.from_pretrained(OUT)``; a full fine-tune is its own
  weights, re-saved;
- ``peft``: the adapter (``adapter_config.json``, ``adapter_model.safetensors``), loadable
  by ``peft.PeftModel.from_pretrained(base, OUT)`` on the base model;

each with the base's tokenizer (or, when it is no Hugging Face tokenizer, the tokenizer
files that exist, or none: ``export.json`` says which), the compact vocabulary of a tiny
model (``compact_vocab.json``: its logits are over compact ids, see ``models.py``) and
``export.json``: run, backend, step, checkpoint, base model, format, LoRA settings, dtype.

Modules: ``run`` (which checkpoint), ``adapter`` (LoRA matrices from a local or Tinker
adapter folder, written back as PEFT), ``write`` (the output folder, merging, tokenizer),
``local`` and ``tinker`` (each backend's source of the adapter).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rtl_trainer.errors import ConfigError
from rtl_trainer.export.local import export_local
from rtl_trainer.export.run import RunCheckpoint, find_checkpoint
from rtl_trainer.export.tinker import export_tinker
from rtl_trainer.export.write import DTYPES, EXPORT_FILE, check_out

__all__ = [
    "DTYPES",
    "EXPORT_FILE",
    "FORMATS",
    "RunCheckpoint",
    "export_local",
    "export_run",
    "export_tinker",
    "find_checkpoint",
]

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
