"""In-process training backend with the Tinker SDK's interface (see ``base.py``).

Why: the training loop is written once against the Tinker API; this backend runs the
same calls on a local GPU or CPU (transformers + peft), so the loop can be developed,
tested and run on tiny models without the service.

What the loop must know:

- Every call returns a future; each client runs its calls in submission order on one
  worker thread (``futures.SerialWorker``), so ``forward_backward`` then ``optim_step``
  may be submitted back to back, as with the service. Input validation happens at call
  time and raises ``ValueError`` at once.
- ``full_finetune=True`` trains every weight and ignores the LoRA rank. Use it for tiny
  models built from scratch (``rtl_trainer.models``): LoRA adapts a *pretrained* base;
  on random weights a low-rank update of frozen noise has too little capacity to learn.
- A base model directory may carry a ``CompactVocab`` (``models.py``); the model then
  works in compact ids while everything at the API (``ModelInput``, ``target_tokens``,
  sampled tokens) stays in full tokenizer ids; the mapping happens here.
- ``save_state`` writes a directory and returns its filesystem path (not a
  ``tinker://`` URI). As in the SDK, ``load_state`` and ``create_training_client_from_state``
  restore the weights with a fresh optimizer; their ``_with_optimizer`` variants also
  restore AdamW's state and the step counter, so a resume is exact.
- Sampling requests queued on one sampler while it is busy are decoded together as one
  batch (prompts left-padded), each with its own seed: many small requests, as a step's
  groups make, cost about one.
- Sampled ``logprobs`` are under the distribution actually sampled from (temperature,
  ``top_k``, ``top_p`` applied): the behaviour policy, as importance sampling needs. At
  ``temperature == 0`` (greedy) they are the model's own (temperature 1) logprobs.
- Client-creation methods return the client itself; ``client.result()`` returns it too,
  so code written for SDK 0.38's future-of-a-client style also works.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import json
import logging
import math
import os
import secrets
import shutil
import threading
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from tinker import types

from rtl_trainer.backends import STATE_FILE
from rtl_trainer.backends.futures import LocalFuture, SerialWorker
from rtl_trainer.models import CompactVocab

logger = logging.getLogger(__name__)

DEFAULT_TARGET_MODULES = (
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
)
_ATTN_MODULES = {"q_proj", "k_proj", "v_proj", "o_proj"}
_MLP_MODULES = {"gate_proj", "up_proj", "down_proj"}

# loss_fn -> the loss_fn_inputs it needs (all 1-D, as long as the datum's model_input).
LOSS_FN_INPUTS: dict[str, tuple[str, ...]] = {
    "cross_entropy": ("target_tokens", "weights"),
    "importance_sampling": ("target_tokens", "logprobs", "advantages"),
    "ppo": ("target_tokens", "logprobs", "advantages"),
}
_CLIP_KEYS = ("clip_low_threshold", "clip_high_threshold")
_DEFAULT_CLIP = 0.2


OPTIMIZER_FILE = "optimizer.pt"
_FORMAT = "rtl_trainer.local/1"


# --------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class _LoraSpec:
    rank: int
    alpha: float
    dropout: float
    target_modules: tuple[str, ...]


@dataclass(frozen=True)
class _Runtime:
    """Where and in what precision a model runs."""

    device: torch.device
    param_dtype: torch.dtype
    autocast_dtype: torch.dtype | None  # bf16 compute over fp32 master weights (GPU full FT)

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype)


def _resolve_runtime(device: str, dtype: str | torch.dtype, full_finetune: bool) -> _Runtime:
    dev = torch.device(
        ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    )
    if dtype == "auto":
        if dev.type == "cpu":
            return _Runtime(dev, torch.float32, None)
        # AdamW updates on bf16 weights lose most small steps; full FT keeps fp32 masters.
        if full_finetune:
            return _Runtime(dev, torch.float32, torch.bfloat16)
        return _Runtime(dev, torch.bfloat16, None)
    resolved = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    if not isinstance(resolved, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}")
    return _Runtime(dev, resolved, None)


class _TokenMap:
    """Full tokenizer ids <-> model rows (identity without a compact vocab)."""

    def __init__(self, vocab: CompactVocab | None, model_rows: int, tokenizer_size: int) -> None:
        self.vocab = vocab
        self.model_rows = model_rows
        self._to_model = vocab.compact_table() if vocab is not None else None
        self._to_full = vocab.full_table() if vocab is not None else None
        # Rows that are no token of the tokenizer (padding rows of real checkpoints):
        # never sampled, so sampled ids always decode.
        self.unsampleable = (
            torch.arange(model_rows) >= tokenizer_size
            if vocab is None and model_rows > tokenizer_size
            else None
        )

    def to_model(self, ids: torch.Tensor) -> torch.Tensor:
        if self._to_model is None:
            return ids
        table = self._to_model.to(ids.device)
        inside = (ids >= 0) & (ids < table.numel())
        return torch.where(inside, table[ids.clamp(0, table.numel() - 1)], CompactVocab.UNK)

    def to_full(self, ids: torch.Tensor) -> torch.Tensor:
        if self._to_full is None:
            return ids
        return self._to_full.to(ids.device)[ids]

    def out_of_range(self, ids: Sequence[int]) -> int | None:
        """The first id the model has no row for (only without a compact vocab)."""
        if self.vocab is not None:
            return None
        return next((i for i in ids if not 0 <= i < self.model_rows), None)


def _load_causal_lm(
    name_or_path: str, runtime: _Runtime
) -> tuple[transformers.PreTrainedModel, CompactVocab | None]:
    """A local ``save_pretrained`` directory (with its compact vocab, if any) or a hub
    name (``from_pretrained``; fails offline with transformers' own error)."""
    path = Path(name_or_path).expanduser()
    source = str(path) if path.is_dir() else name_or_path
    model = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=runtime.param_dtype)
    vocab = CompactVocab.load(path) if path.is_dir() else None
    return model, vocab


def _check_tokenizer(model: torch.nn.Module, vocab: CompactVocab | None, tokenizer: Any) -> int:
    rows = model.get_input_embeddings().num_embeddings
    n_tok = len(tokenizer)
    if vocab is not None:
        if rows != vocab.size:
            raise ValueError(f"model has {rows} token rows but its compact vocab has {vocab.size}")
        if vocab.full_vocab_size != n_tok:
            raise ValueError(
                f"the compact vocab was built for a {vocab.full_vocab_size}-token tokenizer, "
                f"this tokenizer has {n_tok}"
            )
    elif rows < n_tok:
        raise ValueError(
            f"model has {rows} token rows but the tokenizer has {n_tok} tokens; "
            "save the model with a CompactVocab (rtl_trainer.models.save_tiny)"
        )
    return rows


@contextlib.contextmanager
def _quiet_peft() -> Iterator[None]:
    """Silence peft's notes that do not apply here. LoRA on a tied ``lm_head`` adapts
    only the output side, which is sound because the adapter is never merged into the
    (shared, frozen) base weights."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*tie_word_embeddings=True.*")
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")
        yield


def _read_state(path: str | Path) -> dict[str, Any]:
    file = Path(path) / STATE_FILE
    if not file.is_file():
        raise FileNotFoundError(f"{path} is no local checkpoint (no {STATE_FILE})")
    state = json.loads(file.read_text())
    if state.get("format") != _FORMAT:
        raise ValueError(f"{file}: unknown checkpoint format {state.get('format')!r}")
    return state


def _checkpoint_name(name: str) -> str:
    if not name or name in {".", ".."} or "/" in name or os.sep in name:
        raise ValueError(f"checkpoint name {name!r} must be a plain file name")
    return name


# --------------------------------------------------------------------------- losses


@dataclass
class _Item:
    """One validated datum, on CPU, in full tokenizer ids."""

    tokens: torch.Tensor  # [L] int64
    targets: torch.Tensor  # [L] int64
    weights: torch.Tensor | None  # [L] float32 (cross_entropy)
    logprobs: torch.Tensor | None  # [L] float32 (sampler's)
    advantages: torch.Tensor | None  # [L] float32


def _prepare(
    data: Sequence[types.Datum],
    loss_fn: str,
    loss_fn_config: Mapping[str, float | str] | None,
    tokmap: _TokenMap,
) -> tuple[list[_Item], tuple[float, float]]:
    """Validate a request and turn it into tensors; errors name the datum and key."""
    if loss_fn not in LOSS_FN_INPUTS:
        raise ValueError(f"unknown loss_fn {loss_fn!r}; supported: {sorted(LOSS_FN_INPUTS)}")
    config = dict(loss_fn_config or {})
    allowed = set(_CLIP_KEYS) if loss_fn != "cross_entropy" else set()
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise ValueError(
            f"loss_fn_config keys {unknown} are not used by {loss_fn!r} (allowed: {sorted(allowed)})"
        )
    try:
        clip = (
            float(config.get("clip_low_threshold", _DEFAULT_CLIP)),
            float(config.get("clip_high_threshold", _DEFAULT_CLIP)),
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"loss_fn_config clip thresholds must be numbers: {config}") from exc
    if not isinstance(data, Sequence) or len(data) == 0:
        raise ValueError("data must be a non-empty list of tinker.types.Datum")

    items: list[_Item] = []
    for i, datum in enumerate(data):
        if not isinstance(datum, types.Datum):
            raise ValueError(f"datum {i} is a {type(datum).__name__}, not tinker.types.Datum")
        tokens = datum.model_input.to_ints()
        n = len(tokens)
        if n == 0:
            raise ValueError(f"datum {i}: model_input is empty")
        arrays: dict[str, np.ndarray] = {}
        for key in LOSS_FN_INPUTS[loss_fn]:
            if key not in datum.loss_fn_inputs:
                raise ValueError(
                    f"datum {i}: loss_fn {loss_fn!r} needs loss_fn_inputs[{key!r}], which is "
                    f"missing (given: {sorted(datum.loss_fn_inputs)})"
                )
            array = np.asarray(datum.loss_fn_inputs[key].to_numpy())
            if array.shape != (n,):
                raise ValueError(
                    f"datum {i}: loss_fn_inputs[{key!r}] has shape {tuple(array.shape)}, but "
                    f"model_input has {n} tokens; it must be 1-D of length {n} "
                    "(position t holds the value for the token after position t)"
                )
            if key != "target_tokens" and not np.all(np.isfinite(array)):
                raise ValueError(f"datum {i}: loss_fn_inputs[{key!r}] has non-finite values")
            arrays[key] = array
        bad = tokmap.out_of_range(tokens)
        if bad is None:
            bad = tokmap.out_of_range(arrays["target_tokens"].tolist())
        if bad is not None:
            raise ValueError(
                f"datum {i}: token id {bad} is outside the model's {tokmap.model_rows} rows"
            )

        def floats(key: str, arrays: dict[str, np.ndarray] = arrays) -> torch.Tensor | None:
            return torch.tensor(arrays[key], dtype=torch.float32) if key in arrays else None

        items.append(
            _Item(
                tokens=torch.tensor(tokens, dtype=torch.long),
                targets=torch.tensor(arrays["target_tokens"], dtype=torch.long),
                weights=floats("weights"),
                logprobs=floats("logprobs"),
                advantages=floats("advantages"),
            )
        )
    return items, clip


def _pad(rows: Sequence[torch.Tensor | None], length: int, device: torch.device) -> torch.Tensor:
    """Right-pad with zeros: padding has weight/advantage 0 and is masked out."""
    present = [row for row in rows if row is not None]
    assert len(present) == len(rows), "validated inputs are present"
    out = torch.zeros(len(rows), length, dtype=present[0].dtype)
    for b, row in enumerate(present):
        out[b, : row.numel()] = row
    return out.to(device)


def _microbatches(items: list[_Item], token_budget: int) -> Iterator[list[int]]:
    """Consecutive groups whose padded size stays within the budget (at least one)."""
    group: list[int] = []
    longest = 0
    for i, item in enumerate(items):
        n = item.tokens.numel()
        if group and (len(group) + 1) * max(longest, n) > token_budget:
            yield group
            group, longest = [], 0
        group.append(i)
        longest = max(longest, n)
    if group:
        yield group


# --------------------------------------------------------------------------- sampling


def _filtered_logprobs(
    logits: torch.Tensor, temperature: float, top_k: int, top_p: float
) -> torch.Tensor:
    """Log-probs of the distribution actually sampled from: temperature, then top-k,
    then top-p (nucleus), renormalised; excluded tokens get -inf."""
    x = logits / temperature
    vocab = x.shape[-1]
    if 0 < top_k < vocab:
        kth = torch.topk(x, top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    if top_p < 1.0:
        sorted_x, order = torch.sort(x, dim=-1, descending=True)
        probs = sorted_x.softmax(-1)
        mass_before = probs.cumsum(-1) - probs
        drop_sorted = mass_before >= top_p  # the top token always stays (mass_before == 0)
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        x = x.masked_fill(drop, float("-inf"))
    return x.log_softmax(-1)


def _stop_rules(params: types.SamplingParams, tokenizer: Any) -> tuple[set[int], list[str]]:
    """(stop token ids, stop strings). ``stop=None``: EOS only; ``stop=[]``: nothing;
    a non-empty list adds to EOS, as in vLLM/Tinker."""
    stop = params.stop
    eos = getattr(tokenizer, "eos_token_id", None)
    eos_ids = {int(eos)} if eos is not None else set()
    if stop is None:
        return eos_ids, []
    if isinstance(stop, str):
        return eos_ids, [stop]
    stops = list(stop)
    if not stops:
        return set(), []
    if all(isinstance(s, str) for s in stops):
        if any(s == "" for s in stops):
            raise ValueError("stop strings must be non-empty")
        return eos_ids, [str(s) for s in stops]
    if all(isinstance(s, int) and not isinstance(s, bool) for s in stops):
        return eos_ids | {int(s) for s in stops}, []
    raise ValueError(f"stop must be strings or token ids, not a mix: {stops!r}")


class _LocalClient:
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


@dataclass
class _SampleRequest:
    tokens: list[int]
    n: int
    params: types.SamplingParams
    stop_ids: set[int]
    stop_strs: list[str]
    include_prompt_logprobs: bool
    future: concurrent.futures.Future[types.SampleResponse]

    def batch_key(self) -> tuple[Any, ...]:
        """Requests with equal keys can share one batched decode."""
        p = self.params
        return (
            p.temperature,
            p.top_k,
            p.top_p,
            p.max_tokens,
            frozenset(self.stop_ids),
            tuple(self.stop_strs),
        )


class LocalSamplingClient(_LocalClient):
    """Samples from a fixed set of weights (a snapshot: later training does not reach it)."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokmap: _TokenMap,
        tokenizer: Any,
        runtime: _Runtime,
        base_model: str,
    ) -> None:
        self._model = model.eval().requires_grad_(False)
        self._tokmap = tokmap
        self._tokenizer = tokenizer
        self._runtime = runtime
        self._base_model = base_model
        self._worker = SerialWorker("local-sampler")
        self._pending: list[_SampleRequest] = []
        self._pending_lock = threading.Lock()

    # -- public API ------------------------------------------------------------------

    def sample(
        self,
        prompt: types.ModelInput,
        num_samples: int,
        sampling_params: types.SamplingParams,
        include_prompt_logprobs: bool = False,
        topk_prompt_logprobs: int = 0,
        topk_sample_logprobs: int = 0,
    ) -> LocalFuture[types.SampleResponse]:
        """``num_samples`` completions of ``prompt``, with the behaviour policy's logprobs."""
        if topk_prompt_logprobs or topk_sample_logprobs:
            raise NotImplementedError("top-k logprobs are not supported by the local backend")
        if num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {num_samples}")
        tokens = prompt.to_ints()
        if not tokens:
            raise ValueError("prompt is empty")
        bad = self._tokmap.out_of_range(tokens)
        if bad is not None:
            raise ValueError(f"prompt token id {bad} is outside the model's rows")
        p = sampling_params
        if p.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {p.temperature}")
        if not 0 < p.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {p.top_p}")
        if p.max_tokens is not None and p.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {p.max_tokens}")
        stop_ids, stop_strs = _stop_rules(p, self._tokenizer)
        future: concurrent.futures.Future[types.SampleResponse] = concurrent.futures.Future()
        request = _SampleRequest(
            tokens, num_samples, p, stop_ids, stop_strs, include_prompt_logprobs, future
        )
        with self._pending_lock:
            self._pending.append(request)
        self._worker.submit(self._drain)
        return LocalFuture(future)

    def compute_logprobs(
        self, prompt: types.ModelInput, prompt_logprobs_last_n: int | None = None
    ) -> LocalFuture[list[float | None]]:
        """``[None, logp(t1|t0), logp(t2|t0 t1), ...]`` under the model (temperature 1)."""
        tokens = prompt.to_ints()
        if not tokens:
            raise ValueError("prompt is empty")
        bad = self._tokmap.out_of_range(tokens)
        if bad is not None:
            raise ValueError(f"prompt token id {bad} is outside the model's rows")
        if prompt_logprobs_last_n is not None and not 1 <= prompt_logprobs_last_n < len(tokens):
            raise ValueError("prompt_logprobs_last_n must be between 1 and len(prompt) - 1")
        return self._worker.submit(self._prompt_logprobs, tokens, prompt_logprobs_last_n)

    # -- worker side -----------------------------------------------------------------

    def _forward(self, ids: torch.Tensor, use_cache: bool = False, **kwargs: Any) -> Any:
        with torch.inference_mode(), self._runtime.autocast():
            return self._model(input_ids=ids, use_cache=use_cache, **kwargs)

    def _prompt_logprobs(self, tokens: list[int], last_n: int | None) -> list[float | None]:
        ids = self._tokmap.to_model(torch.tensor([tokens], device=self._runtime.device))
        logits = self._forward(ids).logits[0, :-1].float()
        logp = logits.log_softmax(-1).gather(-1, ids[0, 1:, None]).squeeze(-1)
        values: list[float | None] = [None, *logp.tolist()]
        if last_n is not None:
            values[: len(values) - last_n] = [None] * (len(values) - last_n)
        return values

    def _drain(self) -> None:
        """Decode every queued request, batching those with the same sampling settings."""
        with self._pending_lock:
            requests, self._pending = self._pending, []
        batches: dict[tuple[Any, ...], list[_SampleRequest]] = {}
        for request in requests:
            key = (id(request),) if request.include_prompt_logprobs else request.batch_key()
            batches.setdefault(key, []).append(request)
        for batch in batches.values():
            try:
                responses = self._sample(batch)
            except BaseException as exc:  # every waiting caller gets the error
                for request in batch:
                    request.future.set_exception(exc)
                continue
            for request, response in zip(batch, responses, strict=True):
                request.future.set_result(response)

    def _sample(self, requests: list[_SampleRequest]) -> list[types.SampleResponse]:
        """One batched decode: prompts left-padded, ``n`` rows per request, each request
        drawing from its own seeded generator (so batching does not change its samples)."""
        rt = self._runtime
        first = requests[0]
        params, stop_ids, stop_strs = first.params, first.stop_ids, first.stop_strs
        longest = max(len(r.tokens) for r in requests)
        max_new = params.max_tokens
        if max_new is None:
            limit = getattr(self._config(), "max_position_embeddings", 4096)
            max_new = max(limit - longest, 0)
        generators = []
        for r in requests:
            g = torch.Generator(device=rt.device)
            g.manual_seed(r.params.seed if r.params.seed is not None else secrets.randbits(62))
            generators.append(g)

        prompt_ids = torch.zeros((len(requests), longest), dtype=torch.long, device=rt.device)
        mask = torch.zeros((len(requests), longest), dtype=torch.long, device=rt.device)
        for i, r in enumerate(requests):
            ids = self._tokmap.to_model(torch.tensor(r.tokens, device=rt.device))
            prompt_ids[i, longest - len(r.tokens) :] = ids
            mask[i, longest - len(r.tokens) :] = 1
        padded = bool((mask == 0).any())
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        extra: dict[str, Any] = (
            {"attention_mask": mask, "position_ids": positions} if padded else {}
        )
        want_prompt_lp = first.include_prompt_logprobs
        out = self._forward(
            prompt_ids, use_cache=True, logits_to_keep=0 if want_prompt_lp else 1, **extra
        )
        prompt_logprobs_np = None
        if want_prompt_lp:  # never batched with other requests
            lp = out.logits[0, :-1].float().log_softmax(-1).gather(-1, prompt_ids[0, 1:, None])
            prompt_logprobs_np = np.concatenate([[np.nan], lp.squeeze(-1).cpu().numpy()]).astype(
                np.float32
            )
        # Rows: request i's n samples are consecutive.
        owner = [i for i, r in enumerate(requests) for _ in range(r.n)]
        ends = np.cumsum([r.n for r in requests]).tolist()
        rows_of = [list(range(end - r.n, end)) for r, end in zip(requests, ends, strict=True)]
        index = torch.tensor(owner, device=rt.device)
        cache = out.past_key_values
        if len(owner) > 1:
            cache.batch_select_indices(index)
        logits = out.logits[:, -1].float()[index]
        mask = mask[index]
        next_pos = positions[index, -1] + 1

        rows = len(owner)
        sampled: list[list[int]] = [[] for _ in range(rows)]
        logprobs: list[list[float]] = [[] for _ in range(rows)]
        reasons: list[types.StopReason] = ["length"] * rows
        live = [True] * rows
        window = 4 * max((len(s) for s in stop_strs), default=0) + 2
        unsampleable = self._tokmap.unsampleable
        if unsampleable is not None:
            unsampleable = unsampleable.to(rt.device)
        for step in range(max_new):
            if unsampleable is not None:
                logits = logits.masked_fill(unsampleable, float("-inf"))
            if params.temperature == 0:
                chosen = logits.argmax(-1)
                dist = logits.log_softmax(-1)
            else:
                dist = _filtered_logprobs(logits, params.temperature, params.top_k, params.top_p)
                probs = dist.exp()
                chosen = torch.empty(rows, dtype=torch.long, device=rt.device)
                for j, picked in enumerate(rows_of):
                    chosen[picked] = torch.multinomial(
                        probs[picked], 1, generator=generators[j]
                    ).squeeze(-1)
            chosen_lp = dist.gather(-1, chosen[:, None]).squeeze(-1).tolist()
            chosen_full = self._tokmap.to_full(chosen).tolist()
            for b in range(rows):
                if not live[b]:
                    continue
                sampled[b].append(chosen_full[b])
                logprobs[b].append(chosen_lp[b])
                if chosen_full[b] in stop_ids or (
                    stop_strs and self._hits_stop(sampled[b][-window:], stop_strs)
                ):
                    live[b] = False
                    reasons[b] = "stop"
            if not any(live) or step == max_new - 1:
                break
            # Finished rows keep decoding (their tokens are dropped): simpler than
            # shrinking the KV cache.
            step_extra: dict[str, Any] = {}
            if padded:
                mask = torch.cat([mask, mask.new_ones((rows, 1))], dim=-1)
                step_extra = {"attention_mask": mask, "position_ids": next_pos[:, None]}
                next_pos = next_pos + 1
            out = self._forward(
                chosen[:, None], use_cache=True, past_key_values=cache, **step_extra
            )
            cache = out.past_key_values
            logits = out.logits[:, -1].float()

        responses = []
        for j, picked in enumerate(rows_of):
            sequences = [
                types.SampledSequence(
                    stop_reason=reasons[b],
                    sequence_id=f"local-{uuid.uuid4().hex}",
                    tokens_np=np.asarray(sampled[b], dtype=np.int32),
                    logprobs_np=np.asarray(logprobs[b], dtype=np.float32),
                )
                for b in picked
            ]
            responses.append(
                types.SampleResponse(
                    sequences=sequences, prompt_logprobs_np=prompt_logprobs_np if j == 0 else None
                )
            )
        return responses

    def _hits_stop(self, tail: list[int], stop_strs: list[str]) -> bool:
        text = self._tokenizer.decode(tail, skip_special_tokens=False)
        return any(s in text for s in stop_strs)

    def _config(self) -> Any:
        return getattr(self._model, "config", None)


# --------------------------------------------------------------------------- training


class LocalTrainingClient(_LocalClient):
    """Trains one model (LoRA adapter or all weights) with Tinker's losses and AdamW."""

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        tokmap: _TokenMap,
        tokenizer: Any,
        runtime: _Runtime,
        base_model: str,
        lora: _LoraSpec | None,
        workdir: Path,
        microbatch_tokens: int,
        user_metadata: dict[str, str] | None = None,
    ) -> None:
        self._model = model
        self._tokmap = tokmap
        self._tokenizer = tokenizer
        self._runtime = runtime
        self._base_model = base_model
        self._lora = lora
        self._workdir = workdir
        self._microbatch_tokens = microbatch_tokens
        self._user_metadata = dict(user_metadata or {})
        self._trainable = [p for p in model.parameters() if p.requires_grad]
        if not self._trainable:
            raise ValueError("the model has no trainable parameters")
        self._optimizer: torch.optim.AdamW | None = None
        self._step = 0
        self._worker = SerialWorker("local-train")

    # -- introspection ---------------------------------------------------------------

    @property
    def model(self) -> torch.nn.Module:
        """The live model (for inspection; mutate only through the API)."""
        return self._model

    @property
    def step(self) -> int:
        """Optimizer steps taken (restored by ``load_state``)."""
        return self._step

    @property
    def is_lora(self) -> bool:
        return self._lora is not None

    # -- forward / backward ----------------------------------------------------------

    def forward_backward(
        self,
        data: list[types.Datum],
        loss_fn: types.LossFnType,
        loss_fn_config: Mapping[str, float | str] | None = None,
    ) -> LocalFuture[types.ForwardBackwardOutput]:
        """Loss and gradients (accumulated until ``optim_step``); see ``base.py``."""
        items, clip = _prepare(data, loss_fn, loss_fn_config, self._tokmap)
        return self._worker.submit(self._run, items, loss_fn, clip, True)

    def forward(
        self,
        data: list[types.Datum],
        loss_fn: types.LossFnType,
        loss_fn_config: Mapping[str, float | str] | None = None,
    ) -> LocalFuture[types.ForwardBackwardOutput]:
        """As ``forward_backward`` without gradients."""
        items, clip = _prepare(data, loss_fn, loss_fn_config, self._tokmap)
        return self._worker.submit(self._run, items, loss_fn, clip, False)

    def _run(
        self, items: list[_Item], loss_fn: str, clip: tuple[float, float], backward: bool
    ) -> types.ForwardBackwardOutput:
        rt = self._runtime
        self._model.train(backward)
        outputs: list[dict[str, types.TensorData]] = [{} for _ in items]
        loss_total = 0.0
        tokens_total = 0.0
        ratio_sum = 0.0
        clipped = 0.0
        for group in _microbatches(items, self._microbatch_tokens):
            batch = [items[i] for i in group]
            length = max(it.tokens.numel() for it in batch)
            ids = self._tokmap.to_model(_pad([it.tokens for it in batch], length, rt.device))
            targets = self._tokmap.to_model(_pad([it.targets for it in batch], length, rt.device))
            mask = _pad([torch.ones_like(it.tokens) for it in batch], length, rt.device)
            with torch.set_grad_enabled(backward), rt.autocast():
                logits = self._model(input_ids=ids, attention_mask=mask, use_cache=False).logits
            with torch.set_grad_enabled(backward):
                logp = -F.cross_entropy(
                    logits.float().flatten(0, 1), targets.flatten(), reduction="none"
                ).view(targets.shape)
                if loss_fn == "cross_entropy":
                    weights = _pad([it.weights for it in batch], length, rt.device)
                    per_token = -(weights * logp)
                    tokens_total += float(weights.sum())
                else:
                    sampler = _pad([it.logprobs for it in batch], length, rt.device)
                    adv = _pad([it.advantages for it in batch], length, rt.device)
                    acting = adv != 0
                    # Zero the log-ratio where the advantage is 0 (prompt, padding): its
                    # loss term is 0 anyway, and exp() of a stale gap could overflow to inf
                    # and turn the product into NaN.
                    ratio = torch.exp((logp - sampler).masked_fill(~acting, 0.0))
                    objective = ratio * adv
                    if loss_fn == "ppo":
                        bounded = ratio.clamp(1.0 - clip[0], 1.0 + clip[1]) * adv
                        objective = torch.minimum(objective, bounded)
                    per_token = -objective
                    with torch.no_grad():
                        was_clipped = ((adv > 0) & (ratio > 1.0 + clip[1])) | (
                            (adv < 0) & (ratio < 1.0 - clip[0])
                        )
                        tokens_total += float(acting.sum())
                        ratio_sum += float(ratio[acting].sum())
                        clipped += float(was_clipped[acting].sum())
                per_token = per_token * mask
                loss = per_token.sum()
            if backward:
                loss.backward()
            loss_total += float(loss.detach())
            logp_cpu = logp.detach().float().cpu()
            loss_cpu = per_token.detach().float().cpu()
            for row, i in enumerate(group):
                n = items[i].tokens.numel()
                outputs[i] = {
                    "logprobs": types.TensorData.from_torch(logp_cpu[row, :n].contiguous()),
                    "elementwise_loss": types.TensorData.from_torch(loss_cpu[row, :n].contiguous()),
                }
        metrics = {"loss:sum": loss_total}
        if loss_fn == "cross_entropy":
            metrics["weights:sum"] = tokens_total
        else:
            metrics["action_tokens:sum"] = tokens_total
            metrics["ratio:mean"] = ratio_sum / tokens_total if tokens_total else 1.0
            metrics["clip_fraction:mean"] = clipped / tokens_total if tokens_total else 0.0
        return types.ForwardBackwardOutput(
            loss_fn_output_type="ArrayRecord", loss_fn_outputs=outputs, metrics=metrics
        )

    # -- optimizer -------------------------------------------------------------------

    def optim_step(
        self,
        optim_params: types.AdamParams | None = None,
        *,
        adam_params: types.AdamParams | None = None,
    ) -> LocalFuture[types.OptimStepResponse]:
        """One AdamW step on the accumulated gradients, then zero them."""
        if (optim_params is None) == (adam_params is None):
            raise ValueError("pass exactly one of optim_params and adam_params")
        params = optim_params if optim_params is not None else adam_params
        if not isinstance(params, types.AdamParams):
            raise ValueError(
                f"the local backend only has AdamW; got {type(params).__name__}, "
                "expected tinker.types.AdamParams"
            )
        return self._worker.submit(self._optim_step, params)

    def _new_optimizer(self) -> torch.optim.AdamW:
        return torch.optim.AdamW(self._trainable, lr=1e-4, betas=(0.9, 0.95), eps=1e-12)

    def _optim_step(self, p: types.AdamParams) -> types.OptimStepResponse:
        if self._optimizer is None:
            self._optimizer = self._new_optimizer()
        for group in self._optimizer.param_groups:
            group.update(
                lr=p.learning_rate,
                betas=(p.beta1, p.beta2),
                eps=p.eps,
                weight_decay=p.weight_decay,
            )
        max_norm = p.grad_clip_norm if p.grad_clip_norm > 0 else math.inf
        grad_norm = torch.nn.utils.clip_grad_norm_(self._trainable, max_norm)
        self._optimizer.step()
        self._optimizer.zero_grad(set_to_none=True)
        self._step += 1
        return types.OptimStepResponse(
            metrics={
                "grad_norm": float(grad_norm),
                "learning_rate": p.learning_rate,
                "step": float(self._step),
            }
        )

    # -- checkpoints -----------------------------------------------------------------

    def save_state(
        self,
        name: str,
        ttl_seconds: int | None = None,
        overwrite: bool = False,
        user_metadata: dict[str, str] | None = None,
    ) -> LocalFuture[types.SaveWeightsResponse]:
        """Weights + AdamW state + step under ``workdir/checkpoints/name`` (atomically)."""
        target = self._workdir / "checkpoints" / _checkpoint_name(name)
        return self._worker.submit(
            lambda: types.SaveWeightsResponse(
                path=str(self._save(target, overwrite, True, user_metadata))
            )
        )

    def save_weights_for_sampler(
        self,
        name: str,
        ttl_seconds: int | None = None,
        user_metadata: dict[str, str] | None = None,
    ) -> LocalFuture[types.SaveWeightsForSamplerResponse]:
        """Weights only, under ``workdir/sampler_weights/name``, for ``create_sampling_client``."""
        target = self._workdir / "sampler_weights" / _checkpoint_name(name)
        return self._worker.submit(
            lambda: types.SaveWeightsForSamplerResponse(
                path=str(self._save(target, True, False, user_metadata))
            )
        )

    def _save(
        self, target: Path, overwrite: bool, with_optimizer: bool, meta: dict[str, str] | None
    ) -> Path:
        if target.exists() and not overwrite:
            raise FileExistsError(f"checkpoint {target} exists (pass overwrite=True)")
        tmp = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex[:8]}")
        tmp.mkdir(parents=True)
        try:
            if self._lora is not None:
                # Only the adapter: the (frozen, tied) embeddings come from the base model.
                self._model.save_pretrained(  # type: ignore[operator]
                    tmp / "adapter", save_embedding_layers=False
                )
            else:
                self._model.save_pretrained(tmp / "model")  # type: ignore[operator]
                if self._tokmap.vocab is not None:
                    self._tokmap.vocab.save(tmp / "model")
            if with_optimizer and self._optimizer is not None:
                torch.save(self._optimizer.state_dict(), tmp / OPTIMIZER_FILE)
            state = {
                "format": _FORMAT,
                "base_model": self._base_model,
                "lora": None
                if self._lora is None
                else vars(self._lora) | {"target_modules": list(self._lora.target_modules)},
                "step": self._step,
                "user_metadata": {**self._user_metadata, **(meta or {})},
            }
            (tmp / STATE_FILE).write_text(json.dumps(state, indent=1))
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return target

    def load_state(
        self, path: str, weights_access_token: str | None = None
    ) -> LocalFuture[types.LoadWeightsResponse]:
        """Restore the weights of a ``save_state`` path; the optimizer starts afresh (as
        the SDK's ``load_state``)."""
        return self._worker.submit(self._load, Path(path), optimizer=False)

    def load_state_with_optimizer(
        self, path: str, weights_access_token: str | None = None
    ) -> LocalFuture[types.LoadWeightsResponse]:
        """Restore weights, AdamW state and step counter from a ``save_state`` path."""
        return self._worker.submit(self._load, Path(path), optimizer=True)

    def _load(
        self, path: Path, weights: bool = True, optimizer: bool = True
    ) -> types.LoadWeightsResponse:
        state = _read_state(path)
        saved_lora = state["lora"]
        if (saved_lora is None) != (self._lora is None):
            kind = "full fine-tune" if saved_lora is None else "LoRA"
            raise ValueError(f"{path} is a {kind} checkpoint; this client is not")
        if self._lora is not None:
            from peft.utils import load_peft_weights, set_peft_model_state_dict

            if int(saved_lora["rank"]) != self._lora.rank or tuple(
                saved_lora["target_modules"]
            ) != tuple(self._lora.target_modules):
                raise ValueError(f"{path}: LoRA rank/targets differ from this client's")
            adapter = load_peft_weights(str(path / "adapter"), device=str(self._runtime.device))
            result = set_peft_model_state_dict(self._model, adapter)
            if getattr(result, "unexpected_keys", None):
                raise ValueError(f"{path}: unexpected adapter keys {result.unexpected_keys[:5]}")
        elif weights:
            fresh, _ = _load_causal_lm(str(path / "model"), self._runtime)
            self._model.load_state_dict(fresh.state_dict())
        optimizer_file = path / OPTIMIZER_FILE
        if optimizer and optimizer_file.is_file():
            self._optimizer = self._new_optimizer()
            self._optimizer.load_state_dict(
                torch.load(optimizer_file, map_location=self._runtime.device, weights_only=True)
            )
        else:
            self._optimizer = None
        for p in self._trainable:
            p.grad = None
        self._step = int(state["step"]) if optimizer else 0
        return types.LoadWeightsResponse(path=str(path), model_id=self._base_model)

    # -- sampling --------------------------------------------------------------------

    def save_weights_and_get_sampling_client(
        self,
        name: str | None = None,
        retry_config: Any = None,
        record_stability_info: bool = False,
        kind: str = "snapshot",
    ) -> LocalSamplingClient:
        """A sampler over the weights as of every call submitted before this one; later
        training does not reach it. ``name`` has no effect (as in the SDK)."""
        if kind != "snapshot":
            raise ValueError("the local backend only has kind='snapshot' sampling clients")
        model = self._worker.run_sync(self._snapshot)
        return LocalSamplingClient(
            model, self._tokmap, self._tokenizer, self._runtime, self._base_model
        )

    def create_sampling_client(
        self, model_path: str, retry_config: Any = None
    ) -> LocalSamplingClient:
        """A sampler over weights saved by ``save_state``/``save_weights_for_sampler``."""
        model, tokmap = _sampler_model_from_checkpoint(
            Path(model_path), self._runtime, self._tokenizer
        )
        return LocalSamplingClient(model, tokmap, self._tokenizer, self._runtime, model_path)

    def _snapshot(self) -> torch.nn.Module:
        # Frozen (base) weights never change, so the copy shares them; only trainable
        # tensors are copied. A LoRA snapshot costs the adapter's size.
        memo: dict[int, Any] = {id(p): p for p in self._model.parameters() if not p.requires_grad}
        model = copy.deepcopy(self._model, memo)
        for p in model.parameters():
            p.grad = None
        return model.eval().requires_grad_(False)


def _sampler_model_from_checkpoint(
    path: Path, runtime: _Runtime, tokenizer: Any
) -> tuple[torch.nn.Module, _TokenMap]:
    state = _read_state(path)
    if state["lora"] is not None:
        from peft import PeftModel

        base, vocab = _load_causal_lm(state["base_model"], runtime)
        with _quiet_peft():
            model: torch.nn.Module = PeftModel.from_pretrained(base, str(path / "adapter"))
    else:
        model, vocab = _load_causal_lm(str(path / "model"), runtime)
    rows = _check_tokenizer(model, vocab, tokenizer)
    return model.to(runtime.device), _TokenMap(vocab, rows, len(tokenizer))


# --------------------------------------------------------------------------- service


class LocalServiceClient:
    """Creates local training and sampling clients (``tinker.ServiceClient``'s methods).

    ``full_finetune=True`` trains all weights instead of a LoRA adapter: needed for tiny
    models trained from scratch, where there is no pretrained base for LoRA to adapt.
    ``microbatch_tokens`` bounds the padded tokens of one forward pass (memory), without
    changing results: gradients of the summed loss accumulate across microbatches.
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
    ) -> None:
        self._tokenizer = tokenizer
        self._workdir = Path(workdir)
        self._runtime = _resolve_runtime(device, dtype, full_finetune)
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
            raise ValueError("the local backend only has AdamW (types.AdamOptimizerConfig)")
        lora = None
        if not self._full_finetune:
            wanted = {m for m in self._target_modules if m not in _ATTN_MODULES | _MLP_MODULES}
            wanted |= {m for m in self._target_modules if m in _ATTN_MODULES and train_attn}
            wanted |= {m for m in self._target_modules if m in _MLP_MODULES and train_mlp}
            if train_unembed:
                wanted.add("lm_head")
            lora = (rank, wanted)
        return self._build(base_model, lora, seed, user_metadata)

    def _build(
        self,
        base_model: str,
        lora: tuple[int, set[str]] | _LoraSpec | None,
        seed: int | None,
        user_metadata: dict[str, str] | None,
    ) -> LocalTrainingClient:
        model, vocab = _load_causal_lm(base_model, self._runtime)
        rows = _check_tokenizer(model, vocab, self._tokenizer)
        spec: _LoraSpec | None = None
        if lora is None:
            model.requires_grad_(True)
        else:
            import peft

            if isinstance(lora, _LoraSpec):
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
                    raise ValueError(f"none of the LoRA targets {sorted(wanted)} is in the model")
                spec = _LoraSpec(rank, self._lora_alpha, self._lora_dropout, present)
            config = peft.LoraConfig(
                r=spec.rank,
                lora_alpha=spec.alpha,
                lora_dropout=spec.dropout,
                target_modules=list(spec.target_modules),
                bias="none",
                task_type="CAUSAL_LM",
            )
            with torch.random.fork_rng(devices=[]), _quiet_peft():
                if seed is not None:
                    torch.manual_seed(seed)
                model = peft.get_peft_model(model, config)
        model.to(self._runtime.device)
        return LocalTrainingClient(
            model,
            tokmap=_TokenMap(vocab, rows, len(self._tokenizer)),
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
        state = _read_state(path)
        saved = state["lora"]
        if saved is None:
            client = self._build(str(Path(path) / "model"), None, None, user_metadata)
            client._base_model = base_model or state["base_model"]
        else:
            spec = _LoraSpec(
                int(saved["rank"]),
                float(saved["alpha"]),
                float(saved["dropout"]),
                tuple(saved["target_modules"]),
            )
            client = self._build(base_model or state["base_model"], spec, None, user_metadata)
        # A full fine-tune was just built from the checkpoint's own weights.
        client._load(Path(path), weights=saved is not None, optimizer=with_optimizer)
        return client

    def create_sampling_client(
        self,
        model_path: str | None = None,
        base_model: str | None = None,
        retry_config: Any = None,
    ) -> LocalSamplingClient:
        """A sampler over a saved checkpoint (``model_path``) or a base model."""
        if model_path is not None:
            model, tokmap = _sampler_model_from_checkpoint(
                Path(model_path), self._runtime, self._tokenizer
            )
            name = model_path
        elif base_model is not None:
            model, vocab = _load_causal_lm(base_model, self._runtime)
            rows = _check_tokenizer(model, vocab, self._tokenizer)
            model = model.to(self._runtime.device)
            tokmap = _TokenMap(vocab, rows, len(self._tokenizer))
            name = base_model
        else:
            raise ValueError("Either model_path or base_model must be provided")
        return LocalSamplingClient(model, tokmap, self._tokenizer, self._runtime, name)

    def get_tokenizer(self) -> Any:
        return self._tokenizer
