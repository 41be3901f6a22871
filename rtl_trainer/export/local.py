"""Export from a local-backend run: the checkpoint folder and the base model it adapts.

The checkpoint folder is the path ``checkpoints.jsonl`` recorded, or, when that path was
relative to another working directory or the run directory moved, the folder of the same
name under ``RUN_DIR/checkpoints/`` (where the local backend always saves). Its
``state.json`` names the base as it was given and, from this version on, its absolute
folder (``base_model_path``): the base is found by either; a name that is no folder is a
hub name, loaded (and needed: the checkpoint holds only the adapter) by transformers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rtl_trainer.backends.local.checkpoint import lora_spec_of, read_state
from rtl_trainer.errors import ModelError
from rtl_trainer.export.adapter import read_adapter
from rtl_trainer.export.run import RunCheckpoint, require_backend
from rtl_trainer.export.write import write_export


def checkpoint_folder(checkpoint: RunCheckpoint) -> Path:
    """The checkpoint's folder as recorded, else under ``RUN_DIR/checkpoints/``."""
    recorded = Path(checkpoint.state_path)
    if recorded.is_dir():
        return recorded
    moved = checkpoint.run_dir / "checkpoints" / recorded.name
    return moved if moved.is_dir() else recorded


def base_source(state: dict[str, Any]) -> str:
    """Where the base model of a checkpoint is now: a folder, or a hub name."""
    name = str(state["base_model"])
    for candidate in (name, state.get("base_model_path")):
        if candidate and Path(candidate).expanduser().is_dir():
            return str(Path(candidate).expanduser().resolve())
    if state.get("base_model_path") or name.startswith((".", "/", "~")):
        raise ModelError(
            f"the base model folder {name!r} ({state.get('base_model_path')}) is gone; "
            "the checkpoint holds only the adapter, so the base is needed"
        )
    return name


def export_local(checkpoint: RunCheckpoint, out: Path, fmt: str, dtype: str = "auto") -> dict[str, Any]:
    """Export a local-backend checkpoint to ``out`` (``merged`` or ``peft``)."""
    require_backend(checkpoint, "local")
    folder = checkpoint_folder(checkpoint)
    state = read_state(folder)
    spec = lora_spec_of(state)
    base = base_source(state) if spec is not None else _full_base(state)
    adapter = read_adapter(folder / "adapter") if spec is not None else None
    record = {
        "run_dir": str(checkpoint.run_dir.resolve()),
        "backend": "local",
        "step": checkpoint.step,
        "checkpoint": str(folder.resolve()),
        "base_model": state["base_model"],
        "base_model_source": base,
        "format": fmt,
        "lora": None if adapter is None else adapter.settings(),
    }
    full_model = folder / "model" if spec is None else None
    vocab_source = full_model if full_model is not None else (Path(base) if Path(base).is_dir() else None)
    return write_export(
        out, fmt, adapter=adapter, base_source=base, full_model=full_model, vocab_source=vocab_source, record=record, dtype=dtype
    )


def _full_base(state: dict[str, Any]) -> str:
    """A full fine-tune carries its weights; the base only lends its tokenizer."""
    try:
        return base_source(state)
    except ModelError:
        return str(state["base_model"])
