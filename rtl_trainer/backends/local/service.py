"""``LocalServiceClient``: makes local training and sampling clients (``tinker.ServiceClient``'s
methods), from a base model, a saved state or a saved sampler checkpoint.

Client-creation methods return the client itself (whose ``result()`` returns it too, for
code written against SDK 0.38's future-of-a-client style). The checkpoint decides LoRA vs
full fine-tune when a client is created from a saved state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from tinker import types

from rtl_trainer.backends.local import checkpoint
from rtl_trainer.backends.local.runtime import (
    ATTN_MODULES,
    DEFAULT_TARGET_MODULES,
    MLP_MODULES,
    LoraSpec,
    fix_cpu_math,
    load_causal_lm,
    quiet_peft,
    resolve_runtime,
)
from rtl_trainer.backends.local.sampling import LocalSamplingClient
from rtl_trainer.backends.local.training import LocalTrainingClient
from rtl_trainer.backends.local.vocab import token_map_for
from rtl_trainer.errors import ModelError, RequestError


class LocalServiceClient:
    """Creates local training and sampling clients (``tinker.ServiceClient``'s methods).

    ``full_finetune=True`` trains all weights instead of a LoRA adapter: needed for tiny
    models trained from scratch, where there is no pretrained base for LoRA to adapt.
    ``microbatch_tokens`` bounds the padded tokens of one forward pass (memory), without
    changing results: gradients of the summed loss accumulate across microbatches.
    ``cpu_threads``: ``fix_cpu_math`` (the process's torch threads and, on x86, its kernels),
    so a seeded run computes the same on any machine; None leaves the machine's defaults.
    ``batch_sampling``: a sampler decodes the requests queued on it together (faster; a
    request's log-probs then depend on what shared its batch) instead of one at a time.
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        workdir: str | Path,
        device: str = "auto",
        dtype: str | torch.dtype = "auto",
        lora_alpha: float = 32.0,
        lora_dropout: float = 0.0,
        target_modules: Sequence[str] = DEFAULT_TARGET_MODULES,
        full_finetune: bool = False,
        microbatch_tokens: int = 8192,
        cpu_threads: int | None = None,
        batch_sampling: bool = False,
    ) -> None:
        if cpu_threads is not None:
            fix_cpu_math(cpu_threads)
        self._tokenizer = tokenizer
        self._workdir = Path(workdir)
        self._runtime = replace(resolve_runtime(device, dtype, full_finetune), batch_sampling=batch_sampling)
        self._lora_alpha = float(lora_alpha)
        self._lora_dropout = float(lora_dropout)
        self._target_modules = tuple(target_modules)
        self._full_finetune = full_finetune
        self._microbatch_tokens = int(microbatch_tokens)

    @property
    def device(self) -> torch.device:
        return self._runtime.device

    def create_lora_training_client(
        self,
        base_model: str,
        rank: int = 32,
        seed: int | None = None,
        train_mlp: bool = True,
        train_attn: bool = True,
        train_unembed: bool = True,
        user_metadata: dict[str, str] | None = None,
        optimizer: Any = None,
    ) -> LocalTrainingClient:
        """A training client over ``base_model`` (a local ``save_pretrained`` directory,
        optionally with a compact vocab, or a hub name). With ``full_finetune`` every
        weight trains and ``rank``/``train_*`` are ignored."""
        if optimizer is not None and not isinstance(optimizer, types.AdamOptimizerConfig):
            raise RequestError("the local backend only has AdamW (types.AdamOptimizerConfig)")
        lora = None
        if not self._full_finetune:
            wanted = {m for m in self._target_modules if m not in ATTN_MODULES | MLP_MODULES}
            wanted |= {m for m in self._target_modules if m in ATTN_MODULES and train_attn}
            wanted |= {m for m in self._target_modules if m in MLP_MODULES and train_mlp}
            if train_unembed:
                wanted.add("lm_head")
            lora = (rank, wanted)
        return self._build(base_model, lora, seed, user_metadata)

    def _build(
        self,
        base_model: str,
        lora: tuple[int, set[str]] | LoraSpec | None,
        seed: int | None,
        user_metadata: dict[str, str] | None,
    ) -> LocalTrainingClient:
        model, vocab = load_causal_lm(base_model, self._runtime)
        tokmap = token_map_for(model, vocab, self._tokenizer)
        spec: LoraSpec | None = None
        if lora is None:
            model.requires_grad_(True)
        else:
            import peft

            if isinstance(lora, LoraSpec):
                spec = lora
            else:
                rank, wanted = lora
                linear = {
                    name.rsplit(".", 1)[-1]
                    for name, module in model.named_modules()
                    if isinstance(module, torch.nn.Linear)
                }
                present = tuple(sorted(wanted & linear))
                if not present:
                    raise ModelError(f"none of the LoRA targets {sorted(wanted)} is in the model")
                spec = LoraSpec(rank, self._lora_alpha, self._lora_dropout, present)
            config = peft.LoraConfig(
                r=spec.rank,
                lora_alpha=spec.alpha,
                lora_dropout=spec.dropout,
                target_modules=list(spec.target_modules),
                bias="none",
                task_type="CAUSAL_LM",
            )
            with torch.random.fork_rng(devices=[]), quiet_peft():
                if seed is not None:
                    torch.manual_seed(seed)
                model = peft.get_peft_model(model, config)
        model.to(self._runtime.device)
        return LocalTrainingClient(
            model,
            tokmap=tokmap,
            tokenizer=self._tokenizer,
            runtime=self._runtime,
            base_model=base_model,
            lora=spec,
            workdir=self._workdir,
            microbatch_tokens=self._microbatch_tokens,
            user_metadata=user_metadata,
        )

    def create_training_client_from_state(
        self,
        path: str,
        base_model: str | None = None,
        user_metadata: dict[str, str] | None = None,
        weights_access_token: str | None = None,
        optimizer: Any = None,
    ) -> LocalTrainingClient:
        """A training client with the weights of a ``save_state`` path and a fresh
        optimizer, as the SDK's (the checkpoint decides LoRA vs full fine-tune)."""
        return self._from_state(path, base_model, user_metadata, with_optimizer=False)

    def create_training_client_from_state_with_optimizer(
        self,
        path: str,
        base_model: str | None = None,
        user_metadata: dict[str, str] | None = None,
        weights_access_token: str | None = None,
    ) -> LocalTrainingClient:
        """A training client resumed from a ``save_state`` path: weights, AdamW state and
        step counter."""
        return self._from_state(path, base_model, user_metadata, with_optimizer=True)

    def _from_state(
        self,
        path: str,
        base_model: str | None,
        user_metadata: dict[str, str] | None,
        with_optimizer: bool,
    ) -> LocalTrainingClient:
        state = checkpoint.read_state(path)
        spec = checkpoint.lora_spec_of(state)
        if spec is None:
            client = self._build(str(Path(path) / "model"), None, None, user_metadata)
            client._base_model = base_model or state["base_model"]
        else:
            client = self._build(base_model or state["base_model"], spec, None, user_metadata)
        # A full fine-tune was just built from the checkpoint's own weights.
        client._load(Path(path), weights=spec is not None, optimizer=with_optimizer)
        return client

    def create_sampling_client(
        self,
        model_path: str | None = None,
        base_model: str | None = None,
        retry_config: Any = None,
    ) -> LocalSamplingClient:
        """A sampler over a saved checkpoint (``model_path``) or a base model."""
        if model_path is not None:
            model, tokmap = checkpoint.sampler_model_from_checkpoint(
                Path(model_path), self._runtime, self._tokenizer
            )
            name = model_path
        elif base_model is not None:
            model, vocab = load_causal_lm(base_model, self._runtime)
            tokmap = token_map_for(model, vocab, self._tokenizer)
            model = model.to(self._runtime.device)
            name = base_model
        else:
            raise RequestError("Either model_path or base_model must be provided")
        return LocalSamplingClient(model, tokmap, self._tokenizer, self._runtime, name)

    def get_tokenizer(self) -> Any:
        return self._tokenizer
