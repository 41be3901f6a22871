"""Export from a Tinker run: download the checkpoint's LoRA through the SDK, then convert.

Tinker (SDK 0.38) downloads weights only as an *external weights* checkpoint, the same way
its own ``tinker checkpoint download`` does, and so does this module:

1. ``RestClient.get_weights_info_by_tinker_path(state_path)``: the base model and LoRA rank;
2. ``ServiceClient.create_training_client_from_state(state_path)``: a session on the saved
   state (on the service, a training session on the base model);
3. ``TrainingClient.save_weights_external(name, ttl_seconds=3600)``: the weights in
   Hugging Face PEFT form, as a ``tinker://.../external_weights/...`` checkpoint;
4. ``RestClient.get_external_weights_urls(path)``: one signed URL per file
   (``adapter_config.json``, ``adapter_model.safetensors``), each downloaded;
5. ``RestClient.delete_checkpoint_from_tinker_path(path)``: the temporary export is deleted
   (if that fails, its one-hour TTL ends it).

The download is converted (``adapter.read_adapter(tinker_names=True)``) and written as for a
local run. ``merged`` needs the base's weights: a hub name is fetched by transformers.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from rtl_trainer.errors import BackendUnavailableError, CheckpointNotFoundError, ModelError
from rtl_trainer.export.adapter import read_adapter
from rtl_trainer.export.run import RunCheckpoint, require_backend
from rtl_trainer.export.write import write_export

#: Name and lifetime of the temporary external-weights checkpoint (the SDK's minimum TTL).
EXPORT_NAME = "rtl-train-export"
EXPORT_TTL_S = 3600


def _result(value: Any) -> Any:
    result = getattr(value, "result", None)
    return result() if callable(result) else value


def download(urls: dict[str, str], folder: Path) -> list[str]:
    """Fetch every ``name -> url`` into ``folder`` (names must stay inside it)."""
    root = folder.resolve()
    written = []
    for name, url in sorted(urls.items()):
        target = (folder / name).resolve()
        if not target.is_relative_to(root) or target == root:
            raise ModelError(f"the export lists an unsafe file name {name!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with urllib.request.urlopen(url, timeout=60) as response, open(target, "wb") as handle:
                shutil.copyfileobj(response, handle)
        except urllib.error.URLError as exc:
            raise BackendUnavailableError(f"could not download {name} of the Tinker export: {exc}") from exc
        written.append(name)
    return written


def fetch_adapter(service: Any, state_path: str, folder: Path) -> Any:
    """Download the LoRA of Tinker state ``state_path`` into ``folder`` (steps 1-5 above);
    return the service's ``WeightsInfoResponse`` for it. ``service`` is a ``TinkerService``."""
    import tinker

    rest = service.rest
    try:
        info = _result(rest.get_weights_info_by_tinker_path(state_path))
    except tinker.TinkerError as exc:
        raise CheckpointNotFoundError(f"the Tinker service has no checkpoint {state_path}: {exc}") from exc
    if not info.is_lora:
        raise ModelError(f"{state_path} is not a LoRA checkpoint; rtl-train export converts LoRA adapters")
    training = service.create_training_client_from_state(state_path)
    export_path = _result(training.save_weights_external(EXPORT_NAME, ttl_seconds=EXPORT_TTL_S)).path
    try:
        response = _result(rest.get_external_weights_urls(export_path))
        if not response.urls:
            raise ModelError(f"the Tinker export {export_path} has no files")
        download(dict(response.urls), folder)
    finally:
        with contextlib.suppress(tinker.TinkerError):  # else it expires after EXPORT_TTL_S
            _result(rest.delete_checkpoint_from_tinker_path(export_path))
    return info


def export_tinker(
    checkpoint: RunCheckpoint, out: Path, fmt: str, dtype: str = "auto", service: Any = None
) -> dict[str, Any]:
    """Export a Tinker run's checkpoint to ``out``; ``service`` defaults to a
    ``TinkerService()`` (``TINKER_API_KEY``)."""
    require_backend(checkpoint, "tinker")
    if service is None:
        from rtl_trainer.backends.tinker_backend import TinkerService

        service = TinkerService()
    with tempfile.TemporaryDirectory(prefix="rtl-export-tinker-") as scratch:
        info = fetch_adapter(service, checkpoint.state_path, Path(scratch))
        adapter = read_adapter(scratch, tinker_names=True)
        record = {
            "run_dir": str(checkpoint.run_dir.resolve()),
            "backend": "tinker",
            "step": checkpoint.step,
            "checkpoint": checkpoint.state_path,
            "base_model": info.base_model,
            "base_model_source": info.base_model,
            "format": fmt,
            "lora": adapter.settings(),
        }
        base = Path(info.base_model)
        return write_export(
            out,
            fmt,
            adapter=adapter,
            base_source=info.base_model,
            full_model=None,
            vocab_source=base if base.is_dir() else None,
            record=record,
            dtype=dtype,
        )
