"""Backends: the Tinker service, or an in-process implementation of its interfaces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rtl_trainer.backends.base import STATE_FILE
from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import ConfigError

__all__ = ["STATE_FILE", "is_saved_state", "load_tokenizer", "make_service"]


def load_tokenizer(model: str) -> Any:
    """The tokenizer saved with a local model (or a saved state's base model)."""
    from transformers import AutoTokenizer

    path = Path(model)
    if is_saved_state(model):
        path = Path(json.loads((path / STATE_FILE).read_text())["base_model"])
    return AutoTokenizer.from_pretrained(str(path))


def is_saved_state(name: str) -> bool:
    """A training state (Tinker ``tinker://`` path, or a local checkpoint folder)."""
    return name.startswith("tinker://") or (Path(name) / STATE_FILE).is_file()


def make_service(config: TrainConfig) -> Any:
    """A ``ServiceClient`` for ``config.backend``."""
    if config.backend == "local":
        from rtl_trainer.backends.local import LocalServiceClient

        return LocalServiceClient(
            load_tokenizer(config.student),
            workdir=Path(config.run_dir),
            full_finetune=config.full_finetune,
            cpu_threads=config.cpu_threads,
        )
    if config.backend == "tinker":
        from rtl_trainer.backends.tinker_backend import TinkerService

        service = TinkerService()
        # Before any training client exists (nothing is billed for a wrong name).
        def named(model: str | None) -> list[str]:
            return [model] if model and not is_saved_state(model) else []

        service.check_models(trainable=named(config.student), sampleable=named(config.teacher))
        return service
    raise ConfigError(f"unknown backend {config.backend!r}; expected 'local' or 'tinker'")
