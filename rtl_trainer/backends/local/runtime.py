"""Where and how a local model runs: device and precision, loading, LoRA settings, and
what the sampling and training clients share.

``resolve_runtime`` picks the device and dtype once per service (fp32 master weights with
bf16 autocast for a full fine-tune on GPU: AdamW steps on bf16 weights lose most small
updates). ``fix_cpu_math`` makes the process's CPU float math the same on any machine (its
thread count and, on x86, its kernels). ``load_causal_lm`` reads a ``save_pretrained``
folder (with its compact vocab, if any) or a hub name. ``LocalClient`` is the common base
of the two clients.
"""

from __future__ import annotations

import contextlib
import os
import platform
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers

from rtl_trainer.backends.futures import SerialWorker
from rtl_trainer.errors import ConfigError
from rtl_trainer.models import CompactVocab

DEFAULT_TARGET_MODULES = (
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
)
ATTN_MODULES = {"q_proj", "k_proj", "v_proj", "o_proj"}
MLP_MODULES = {"gate_proj", "up_proj", "down_proj"}


@dataclass(frozen=True)
class LoraSpec:
    """A LoRA adapter's shape; saved in each checkpoint so a resume rebuilds the same one."""

    rank: int
    alpha: float
    dropout: float
    target_modules: tuple[str, ...]


@dataclass(frozen=True)
class Runtime:
    """Where and in what precision a model runs."""

    device: torch.device
    param_dtype: torch.dtype
    autocast_dtype: torch.dtype | None  # bf16 compute over fp32 master weights (GPU full FT)
    #: Decode the requests queued on a sampler together (``sampling``): faster, but a
    #: request's log-probs then depend on what shared its batch.
    batch_sampling: bool = False

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype)


def resolve_runtime(device: str, dtype: str | torch.dtype, full_finetune: bool) -> Runtime:
    """``device``/``dtype`` as given, or for ``"auto"`` the GPU if any and a dtype to suit."""
    dev = torch.device(
        ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    )
    if dtype == "auto":
        if dev.type == "cpu":
            return Runtime(dev, torch.float32, None)
        # AdamW updates on bf16 weights lose most small steps; full FT keeps fp32 masters.
        if full_finetune:
            return Runtime(dev, torch.float32, torch.bfloat16)
        return Runtime(dev, torch.bfloat16, None)
    resolved = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    if not isinstance(resolved, torch.dtype):
        raise ConfigError(f"unknown dtype {dtype!r}")
    return Runtime(dev, resolved, None)


#: The kernels ``fix_cpu_math`` chooses on x86: AVX2, which every x86-64 CPU of the last
#: decade has (MKL's conditional numerical reproducibility path, and ATen's own).
_X86_KERNELS = {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}


def fix_cpu_math(threads: int) -> bool:
    """Make this process's CPU float math give the same bits on any machine: ``threads``
    intra-op threads whatever its cores (torch's default is one per core, and another count
    splits matrix products and sums, so rounds, differently), and on x86 the AVX2 kernels of
    MKL and ATen whatever the CPU offers (AVX-512 ones round differently). One chip's
    instruction set is the other's figures otherwise: a seeded run diverges after the first
    differing bit, since every later sample depends on it.

    The kernels are chosen at the process's first tensor operation, so this only takes effect
    before it; a variable already set (``MKL_CBWR``, ``ATEN_CPU_CAPABILITY``) is kept. Returns
    whether the process runs the AVX2 kernels (False off x86, where only threads are fixed)."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        for name, value in _X86_KERNELS.items():
            os.environ.setdefault(name, value)
    torch.set_num_threads(threads)
    return torch.backends.cpu.get_cpu_capability() == "AVX2"


def load_causal_lm(
    name_or_path: str, runtime: Runtime
) -> tuple[transformers.PreTrainedModel, CompactVocab | None]:
    """A local ``save_pretrained`` directory (with its compact vocab, if any) or a hub
    name (``from_pretrained``; fails offline with transformers' own error)."""
    path = Path(name_or_path).expanduser()
    source = str(path) if path.is_dir() else name_or_path
    model = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=runtime.param_dtype)
    vocab = CompactVocab.load(path) if path.is_dir() else None
    return model, vocab


@contextlib.contextmanager
def quiet_peft() -> Iterator[None]:
    """Silence peft's notes that do not apply here. LoRA on a tied ``lm_head`` adapts
    only the output side, which is sound because the adapter is never merged into the
    (shared, frozen) base weights."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*tie_word_embeddings=True.*")
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")
        yield


class LocalClient:
    """What both local clients share: the SDK's client-future shim, tokenizer, base model."""

    _tokenizer: Any
    _base_model: str
    _worker: SerialWorker

    def result(self, timeout: float | None = None) -> Any:
        """The client itself (SDK 0.38 returns a future of the client)."""
        return self

    def get_tokenizer(self) -> Any:
        return self._tokenizer

    def get_base_model(self) -> str:
        return self._base_model

    def close(self) -> None:
        self._worker.shutdown(wait=False)
