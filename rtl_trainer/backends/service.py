"""The service client of the backend a run is configured for: local (in process) or Tinker;
each backend's module is imported only when chosen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rtl_trainer.backends.saved_state import is_saved_state, load_tokenizer
from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import ConfigError


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
