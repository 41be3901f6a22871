"""``LocalSamplingClient``: sampling and prompt logprobs from a fixed set of weights.

Each request decodes alone (its ``n`` rows), in the order requests came, drawing from its
own seeded generator: a seeded request gets the same samples, to the last bit of their
log-probs, whatever else is in flight. With ``Runtime.batch_sampling`` the requests queued
while the sampler is busy decode together as one batch instead (prompts left-padded), so
many small requests (as a step's groups make) cost about one; a request then gets the same
tokens, but log-probs that differ in the last bits with what shared its batch, which the
timing of the calls decides. Sampled ``logprobs`` are under the distribution
actually sampled from (temperature, ``top_k``, ``top_p`` applied): the behaviour policy, as
importance sampling needs; at ``temperature == 0`` (greedy) they are the model's own
(temperature 1) logprobs. Requests are validated at call time (``RequestError``).
"""

from __future__ import annotations

import concurrent.futures
import secrets
import threading
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tinker import types

from rtl_trainer.backends.futures import LocalFuture, SerialWorker
from rtl_trainer.backends.local.runtime import LocalClient, Runtime
from rtl_trainer.backends.local.vocab import TokenMap
from rtl_trainer.errors import RequestError, UnsupportedRequestError


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
            raise RequestError("stop strings must be non-empty")
        return eos_ids, [str(s) for s in stops]
    if all(isinstance(s, int) and not isinstance(s, bool) for s in stops):
        return eos_ids | {int(s) for s in stops}, []
    raise RequestError(f"stop must be strings or token ids, not a mix: {stops!r}")


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


class LocalSamplingClient(LocalClient):
    """Samples from a fixed set of weights (a snapshot: later training does not reach it)."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokmap: TokenMap,
        tokenizer: Any,
        runtime: Runtime,
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
            raise UnsupportedRequestError("top-k logprobs are not supported by the local backend")
        if num_samples < 1:
            raise RequestError(f"num_samples must be >= 1, got {num_samples}")
        tokens = prompt.to_ints()
        if not tokens:
            raise RequestError("prompt is empty")
        bad = self._tokmap.out_of_range(tokens)
        if bad is not None:
            raise RequestError(f"prompt token id {bad} is outside the model's rows")
        p = sampling_params
        if p.temperature < 0:
            raise RequestError(f"temperature must be >= 0, got {p.temperature}")
        if not 0 < p.top_p <= 1:
            raise RequestError(f"top_p must be in (0, 1], got {p.top_p}")
        if p.max_tokens is not None and p.max_tokens < 0:
            raise RequestError(f"max_tokens must be >= 0, got {p.max_tokens}")
        stop_ids, stop_strs = _stop_rules(p, self._tokenizer)
        future: concurrent.futures.Future[types.SampleResponse] = concurrent.futures.Future()
        request = _SampleRequest(
            tokens, num_samples, p, stop_ids, stop_strs, include_prompt_logprobs, future
        )
        if not self._runtime.batch_sampling:
            self._worker.submit(self._decode, [request])
            return LocalFuture(future)
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
            raise RequestError("prompt is empty")
        bad = self._tokmap.out_of_range(tokens)
        if bad is not None:
            raise RequestError(f"prompt token id {bad} is outside the model's rows")
        if prompt_logprobs_last_n is not None and not 1 <= prompt_logprobs_last_n < len(tokens):
            raise RequestError("prompt_logprobs_last_n must be between 1 and len(prompt) - 1")
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
            self._decode(batch)

    def _decode(self, batch: list[_SampleRequest]) -> None:
        """Decode ``batch`` as one and settle each request's future."""
        try:
            responses = self._sample(batch)
        except BaseException as exc:  # every waiting caller gets the error
            for request in batch:
                request.future.set_exception(exc)
            return
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

