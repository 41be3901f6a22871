"""A model name is a base model or a saved training state (a Tinker path, or a local folder
holding ``STATE_FILE``); a saved state's tokenizer is its base model's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rtl_trainer.backends.base import STATE_FILE


def is_saved_state(name: str) -> bool:
    """A training state (Tinker ``tinker://`` path, or a local checkpoint folder)."""
    return name.startswith("tinker://") or (Path(name) / STATE_FILE).is_file()


def load_tokenizer(model: str) -> Any:
    """The tokenizer saved with a local model (or a saved state's base model)."""
    from transformers import AutoTokenizer

    path = Path(model)
    if is_saved_state(model):
        path = Path(json.loads((path / STATE_FILE).read_text())["base_model"])
    return AutoTokenizer.from_pretrained(str(path))
