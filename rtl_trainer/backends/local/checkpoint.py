"""Local checkpoints: the folder layout, writing it atomically, and reading it back.

A checkpoint is a folder with ``STATE_FILE`` (``state.json``: format, base model as given,
``base_model_path`` (the base's absolute folder, ``None`` for a hub name: ``rtl-train export``
finds the base by it after the working directory changed), LoRA spec or ``None`` for a full
fine-tune, step, user metadata), the weights (``adapter/`` for LoRA,
only the adapter; ``model/`` for a full fine-tune, with its compact vocab) and, for
``save_state``, AdamW's state in ``OPTIMIZER_FILE``. It is written to a temporary sibling
and renamed into place, so a reader never sees half of one. ``save_state`` returns the
folder's path (not a ``tinker://`` URI).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import torch

from rtl_trainer.backends.base import STATE_FILE
from rtl_trainer.backends.local.runtime import LoraSpec, Runtime, load_causal_lm, quiet_peft
from rtl_trainer.backends.local.vocab import TokenMap, token_map_for
from rtl_trainer.errors import (
    CheckpointExistsError,
    CheckpointNotFoundError,
    InvalidCheckpointError,
)
from rtl_trainer.models import CompactVocab

OPTIMIZER_FILE = "optimizer.pt"
FORMAT = "rtl_trainer.local/1"


def read_state(path: str | Path) -> dict[str, Any]:
    """The ``state.json`` of a checkpoint folder, after checking it is one of ours."""
    file = Path(path) / STATE_FILE
    if not file.is_file():
        raise CheckpointNotFoundError(f"{path} is no local checkpoint (no {STATE_FILE})")
    state = json.loads(file.read_text())
    if state.get("format") != FORMAT:
        raise InvalidCheckpointError(f"{file}: unknown checkpoint format {state.get('format')!r}")
    return state


def checkpoint_name(name: str) -> str:
    """``name`` if it is a plain file name (a checkpoint never lands outside its folder)."""
    if not name or name in {".", ".."} or "/" in name or os.sep in name:
        raise InvalidCheckpointError(f"checkpoint name {name!r} must be a plain file name")
    return name


def lora_spec_of(state: dict[str, Any]) -> LoraSpec | None:
    """The LoRA spec a checkpoint was saved with (``None``: a full fine-tune)."""
    saved = state["lora"]
    if saved is None:
        return None
    return LoraSpec(
        int(saved["rank"]),
        float(saved["alpha"]),
        float(saved["dropout"]),
        tuple(saved["target_modules"]),
    )


def write_checkpoint(
    target: Path,
    *,
    model: torch.nn.Module,
    lora: LoraSpec | None,
    vocab: CompactVocab | None,
    optimizer: torch.optim.Optimizer | None,
    base_model: str,
    step: int,
    user_metadata: dict[str, str],
    overwrite: bool,
) -> Path:
    """Write a checkpoint folder at ``target`` (with AdamW's state when ``optimizer`` is
    given) via a temporary sibling renamed into place; return ``target``."""
    if target.exists() and not overwrite:
        raise CheckpointExistsError(f"checkpoint {target} exists (pass overwrite=True)")
    tmp = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.mkdir(parents=True)
    try:
        if lora is not None:
            # Only the adapter: the (frozen, tied) embeddings come from the base model.
            model.save_pretrained(  # type: ignore[operator]
                tmp / "adapter", save_embedding_layers=False
            )
        else:
            model.save_pretrained(tmp / "model")  # type: ignore[operator]
            if vocab is not None:
                vocab.save(tmp / "model")
        if optimizer is not None:
            torch.save(optimizer.state_dict(), tmp / OPTIMIZER_FILE)
        state = {
            "format": FORMAT,
            "base_model": base_model,
            "base_model_path": str(Path(base_model).resolve()) if Path(base_model).is_dir() else None,
            "lora": None if lora is None else vars(lora) | {"target_modules": list(lora.target_modules)},
            "step": step,
            "user_metadata": user_metadata,
        }
        (tmp / STATE_FILE).write_text(json.dumps(state, indent=1))
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def restore_weights(
    path: Path,
    state: dict[str, Any],
    model: torch.nn.Module,
    lora: LoraSpec | None,
    runtime: Runtime,
    *,
    full_weights: bool,
) -> None:
    """Load a checkpoint's weights into ``model`` in place: the adapter for LoRA (rank and
    targets must match ``lora``), all weights for a full fine-tune when ``full_weights``."""
    saved_lora = state["lora"]
    if (saved_lora is None) != (lora is None):
        kind = "full fine-tune" if saved_lora is None else "LoRA"
        raise InvalidCheckpointError(f"{path} is a {kind} checkpoint; this client is not")
    if lora is not None:
        from peft.utils import load_peft_weights, set_peft_model_state_dict

        if int(saved_lora["rank"]) != lora.rank or tuple(saved_lora["target_modules"]) != tuple(
            lora.target_modules
        ):
            raise InvalidCheckpointError(f"{path}: LoRA rank/targets differ from this client's")
        adapter = load_peft_weights(str(path / "adapter"), device=str(runtime.device))
        result = set_peft_model_state_dict(model, adapter)
        if getattr(result, "unexpected_keys", None):
            raise InvalidCheckpointError(f"{path}: unexpected adapter keys {result.unexpected_keys[:5]}")
    elif full_weights:
        fresh, _ = load_causal_lm(str(path / "model"), runtime)
        model.load_state_dict(fresh.state_dict())


def optimizer_state(path: Path, runtime: Runtime) -> dict[str, Any] | None:
    """AdamW's saved state (``None`` when the checkpoint has none: weights only)."""
    optimizer_file = path / OPTIMIZER_FILE
    if not optimizer_file.is_file():
        return None
    return torch.load(optimizer_file, map_location=runtime.device, weights_only=True)


def sampler_model_from_checkpoint(
    path: Path, runtime: Runtime, tokenizer: Any
) -> tuple[torch.nn.Module, TokenMap]:
    """A model to sample from, with the weights of a checkpoint folder, on the device."""
    state = read_state(path)
    if state["lora"] is not None:
        from peft import PeftModel

        base, vocab = load_causal_lm(state["base_model"], runtime)
        with quiet_peft():
            model: torch.nn.Module = PeftModel.from_pretrained(base, str(path / "adapter"))
    else:
        model, vocab = load_causal_lm(str(path / "model"), runtime)
    tokmap = token_map_for(model, vocab, tokenizer)
    return model.to(runtime.device), tokmap
