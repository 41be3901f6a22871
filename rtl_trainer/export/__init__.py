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

Modules: ``exporter`` (``export_run``), ``run`` (which checkpoint), ``adapter`` (LoRA
matrices from a local or Tinker adapter folder, written back as PEFT), ``write`` (the
output folder, merging, tokenizer), ``local`` and ``tinker`` (each backend's source of the
adapter).
"""

from __future__ import annotations

from rtl_trainer.export.exporter import FORMATS, export_run
from rtl_trainer.export.local import export_local
from rtl_trainer.export.run import RunCheckpoint, find_checkpoint
from rtl_trainer.export.tinker import export_tinker
from rtl_trainer.export.write import DTYPES, EXPORT_FILE

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
