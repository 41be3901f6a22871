"""Writing an export folder: the output guard, the merged model, the adapter, the tokenizer.

The folder is built in a temporary sibling and renamed into place (``staged``), so a
failed export leaves nothing behind and an existing non-empty OUT is never touched.

Merging: the base is loaded in float32, the adapter applied with PEFT and folded in with
``merge_and_unload``, and the result cast back to the base's own dtype (or ``dtype``). A
base whose output head shares its weights with the input embeddings (tied, as Qwen3's
small models and the tiny test models are) gets its own copy of the head first when the
adapter changes the head: merging into a shared matrix would change the embeddings too.
The merged model is then saved with ``tie_word_embeddings=False``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from rtl_trainer.errors import ConfigError, InvalidCheckpointError, ModelError, OutputExistsError
from rtl_trainer.export.adapter import Adapter, write_peft
from rtl_trainer.models import VOCAB_FILE

#: What ``rtl-train export`` writes next to the weights: where they came from.
EXPORT_FILE = "export.json"
DTYPES = ("auto", "float32", "bfloat16", "float16")
#: Tokenizer files copied when the base's tokenizer does not load as a Hugging Face one.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "chat_template.jinja",
)


def check_out(out: Path) -> None:
    """Refuse an ``out`` that exists and is not an empty folder."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise OutputExistsError(f"{out} exists and is not empty; choose a new folder")


@contextlib.contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A temporary sibling of ``out`` to fill; renamed to ``out`` when the block ends well."""
    check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    try:
        yield tmp
        check_out(out)
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_base(source: str) -> Any:
    """The base model in float32 on the CPU (a folder or a hub name)."""
    import transformers

    try:
        return transformers.AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load the base model {source!r}: {exc}") from exc


def saved_dtype(source: str, dtype: str) -> torch.dtype:
    """``dtype``, or for ``auto`` the dtype the base's config names (float32 if none)."""
    if dtype not in DTYPES:
        raise ConfigError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if dtype != "auto":
        return getattr(torch, dtype)
    import transformers

    named = getattr(transformers.AutoConfig.from_pretrained(source), "dtype", None)
    if isinstance(named, str):
        named = getattr(torch, named, None)
    return named if isinstance(named, torch.dtype) else torch.float32


def _untie_head(model: Any, adapter: Adapter) -> bool:
    """Give the output head its own weights when it is tied and the adapter changes it."""
    head, embeddings = model.get_output_embeddings(), model.get_input_embeddings()
    if head is None or head.weight.data_ptr() != embeddings.weight.data_ptr():
        return False
    head_name = next(name for name, module in model.named_modules() if module is head)
    if head_name not in adapter.matrices:
        return False
    head.weight = torch.nn.Parameter(embeddings.weight.detach().clone())
    model.config.tie_word_embeddings = False
    return True


def merged_model(adapter: Adapter, base_source: str) -> Any:
    """The base with ``adapter`` folded into its weights (a plain transformers model)."""
    from peft import PeftModel

    from rtl_trainer.backends.local.runtime import quiet_peft

    model = load_base(base_source)
    _untie_head(model, adapter)
    with tempfile.TemporaryDirectory(prefix="rtl-export-") as scratch:
        write_peft(adapter, Path(scratch), base_source)
        with quiet_peft():
            peft_model = PeftModel.from_pretrained(model, scratch)
    return peft_model.merge_and_unload()


def copy_vocab(source: Path | None, folder: Path) -> bool:
    """Copy a compact vocabulary (``models.CompactVocab``) next to the weights, if any."""
    if source is None or not (source / VOCAB_FILE).is_file():
        return False
    shutil.copy2(source / VOCAB_FILE, folder / VOCAB_FILE)
    return True


def copy_tokenizer(source: str, folder: Path) -> str:
    """Save the base's tokenizer into ``folder``; say what was done (for ``export.json``)."""
    from transformers import AutoTokenizer

    base = Path(source)
    present = [name for name in TOKENIZER_FILES if (base / name).is_file()] if base.is_dir() else None
    if present == []:
        # transformers would build an empty tokenizer from config.json alone.
        return "none: the base model folder has no tokenizer files"
    try:
        AutoTokenizer.from_pretrained(source).save_pretrained(str(folder))
        return "saved (Hugging Face tokenizer of the base model)"
    except (OSError, ValueError, TypeError, KeyError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    copied = present or []
    for name in copied:
        shutil.copy2(base / name, folder / name)
    if copied:
        return f"copied {', '.join(copied)} (they do not load with AutoTokenizer: {reason})"
    return f"none: the base model has no Hugging Face tokenizer ({reason})"


def write_export(
    out: Path,
    fmt: str,
    *,
    adapter: Adapter | None,
    base_source: str,
    full_model: Path | None,
    vocab_source: Path | None,
    record: dict[str, Any],
    dtype: str,
) -> dict[str, Any]:
    """Write ``out`` in format ``fmt`` (``merged``: weights in safetensors; ``peft``: the
    adapter) with the tokenizer, the compact vocab if any and ``export.json`` (``record``
    plus what was written); return the ``export.json`` content. ``adapter`` is None for a
    full fine-tune, whose weights are the folder ``full_model``."""
    record = dict(record)
    with staged(out) as folder:
        if fmt == "peft":
            if adapter is None:
                raise InvalidCheckpointError("a full fine-tune has no LoRA adapter; export it with --format merged")
            write_peft(adapter, folder, base_source)
        else:
            source = base_source if adapter is not None else str(full_model)
            target = saved_dtype(source, dtype)
            model = merged_model(adapter, base_source) if adapter is not None else load_base(source)
            model.to(target).save_pretrained(str(folder))
            record["dtype"] = str(target).removeprefix("torch.")
        record["compact_vocab"] = copy_vocab(vocab_source, folder)
        record["tokenizer"] = copy_tokenizer(base_source, folder)
        (folder / EXPORT_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record
