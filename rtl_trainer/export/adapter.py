"""A LoRA adapter as export handles it: A/B matrices keyed by module path, rank, alpha.

Two sources, one result. The local backend's checkpoint ``adapter/`` is a PEFT folder
(``adapter_config.json`` + ``adapter_model.safetensors``, keys
``base_model.model.<module>.lora_A.weight``). A Tinker external-weights download is a
PEFT-style folder with the same two files, but its output head is
``model.unembed_tokens`` where transformers and PEFT say ``lm_head`` (tinker-cookbook's
merge script renames it the same way); it is renamed here. Mixture-of-experts layers
(3-D stacked expert matrices) are refused: they need per-expert slicing this exporter
does not do. ``write_peft`` writes the adapter back as a plain PEFT folder, which
``peft.PeftModel.from_pretrained(base, folder)`` loads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from rtl_trainer.errors import CheckpointNotFoundError, InvalidCheckpointError, ModelError

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
#: PEFT's prefix of every saved adapter key (the wrapped model's path).
PEFT_PREFIX = "base_model.model."
#: Tinker's module names that transformers spells otherwise.
TINKER_RENAMES = {"model.unembed_tokens": "lm_head"}
_LORA_KEY = re.compile(r"^(?P<module>.+)\.(?P<side>lora_A|lora_B)\.weight$")


@dataclass(frozen=True)
class Adapter:
    """LoRA matrices by module path (``model.layers.0.self_attn.q_proj``): ``(A, B)``,
    A ``[rank, in]``, B ``[out, rank]``; the update is ``alpha / rank * B @ A``
    (``alpha / sqrt(rank)`` with ``use_rslora``)."""

    matrices: dict[str, tuple[torch.Tensor, torch.Tensor]]
    rank: int
    alpha: float
    use_rslora: bool = False

    @property
    def target_modules(self) -> tuple[str, ...]:
        """The adapted modules' leaf names (PEFT's ``target_modules``)."""
        return tuple(sorted({module.rsplit(".", 1)[-1] for module in self.matrices}))

    def settings(self) -> dict[str, Any]:
        """The LoRA settings, as ``export.json`` records them."""
        return {
            "rank": self.rank,
            "alpha": self.alpha,
            "use_rslora": self.use_rslora,
            "target_modules": list(self.target_modules),
        }


def read_adapter(folder: str | Path, *, tinker_names: bool = False) -> Adapter:
    """The adapter in a PEFT-style ``folder``; ``tinker_names`` renames Tinker's modules."""
    from safetensors.torch import load_file

    folder = Path(folder)
    config_file, weights_file = folder / ADAPTER_CONFIG, folder / ADAPTER_WEIGHTS
    if not config_file.is_file() or not weights_file.is_file():
        raise CheckpointNotFoundError(f"{folder} is no LoRA adapter (needs {ADAPTER_CONFIG} and {ADAPTER_WEIGHTS})")
    config = json.loads(config_file.read_text(encoding="utf-8"))
    sides: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in load_file(str(weights_file)).items():
        match = _LORA_KEY.match(key.removeprefix(PEFT_PREFIX))
        if match is None:
            raise InvalidCheckpointError(f"{weights_file}: {key} is no LoRA matrix (lora_A / lora_B)")
        if tensor.ndim != 2:
            raise ModelError(
                f"{weights_file}: {key} has shape {tuple(tensor.shape)}: mixture-of-experts adapters "
                "are not supported by rtl-train export"
            )
        module = match["module"]
        if tinker_names:
            module = TINKER_RENAMES.get(module, module)
        sides.setdefault(module, {})[match["side"]] = tensor
    incomplete = sorted(m for m, pair in sides.items() if set(pair) != {"lora_A", "lora_B"})
    if incomplete or not sides:
        raise InvalidCheckpointError(f"{weights_file}: no complete lora_A/lora_B pair for {incomplete or 'any module'}")
    matrices = {m: (pair["lora_A"], pair["lora_B"]) for m, pair in sorted(sides.items())}
    ranks = {a.shape[0] for a, _ in matrices.values()}
    rank = int(config.get("r") or 0)
    if ranks != {rank}:
        raise InvalidCheckpointError(f"{folder}: {ADAPTER_CONFIG} says rank {rank}, the matrices have {sorted(ranks)}")
    return Adapter(matrices, rank, float(config["lora_alpha"]), bool(config.get("use_rslora", False)))


def write_peft(adapter: Adapter, folder: Path, base_model: str) -> None:
    """Write ``adapter`` as a PEFT folder over ``base_model`` (its name or folder)."""
    import peft
    from safetensors.torch import save_file

    config = peft.LoraConfig(
        r=adapter.rank,
        lora_alpha=adapter.alpha,
        use_rslora=adapter.use_rslora,
        lora_dropout=0.0,
        target_modules=list(adapter.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
        base_model_name_or_path=base_model,
    )
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(str(folder))
    tensors: dict[str, torch.Tensor] = {}
    for module, (a, b) in adapter.matrices.items():
        tensors[f"{PEFT_PREFIX}{module}.lora_A.weight"] = a.contiguous()
        tensors[f"{PEFT_PREFIX}{module}.lora_B.weight"] = b.contiguous()
    save_file(tensors, str(folder / ADAPTER_WEIGHTS), metadata={"format": "pt"})
