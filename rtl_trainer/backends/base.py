"""The interfaces the training loop is written against: the Tinker SDK's, restated.

The loop only calls what is listed here, with ``tinker.types`` values, so the Tinker
service (``tinker.ServiceClient``) and the in-process local backend are interchangeable.
Every call returns a future whose ``result()`` gives the value, as the SDK's do; a caller
may submit ``forward_backward`` and ``optim_step`` back to back and await both.

Loss functions (``loss_fn`` and the ``loss_fn_inputs`` each needs, all shaped like the
datum's ``model_input`` length; targets are the next tokens):

- ``cross_entropy``: ``target_tokens`` (int64), ``weights`` (float32). Loss
  ``-sum(weights * logp(target))``.
- ``importance_sampling``: ``target_tokens``, ``logprobs`` (the sampler's, float32),
  ``advantages`` (float32). Loss ``-sum(exp(logp - logprobs) * advantages)``.
- ``ppo``: as ``importance_sampling`` with the ratio clipped to ``[1 - clip_low, 1 +
  clip_high]`` (``loss_fn_config``: ``clip_low_threshold``, ``clip_high_threshold``,
  default 0.2), pessimistic min as in PPO.

``ForwardBackwardOutput.loss_fn_outputs[i]["logprobs"]`` holds datum ``i``'s per-token
log-probabilities of the targets under the current weights; ``metrics["loss:sum"]`` the
summed loss.

A local checkpoint is a folder holding ``STATE_FILE``; ``backends.saved_state``'s
``is_saved_state`` and ``load_tokenizer`` recognise one by it, and
``backends.local.checkpoint`` writes it.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from tinker import types

#: The file that marks a local backend checkpoint folder (JSON: format, base model, step).
STATE_FILE = "state.json"

T = TypeVar("T", covariant=True)


class Future(Protocol[T]):
    def result(self, timeout: float | None = None) -> T: ...


class SamplingClient(Protocol):
    def sample(
        self,
        prompt: types.ModelInput,
        num_samples: int,
        sampling_params: types.SamplingParams,
    ) -> Future[types.SampleResponse]: ...

    def compute_logprobs(self, prompt: types.ModelInput) -> Future[list[float | None]]: ...

    def get_tokenizer(self) -> Any: ...


class TrainingClient(Protocol):
    def forward_backward(
        self,
        data: list[types.Datum],
        loss_fn: str,
        loss_fn_config: dict[str, float] | None = None,
    ) -> Future[types.ForwardBackwardOutput]: ...

    def forward(
        self,
        data: list[types.Datum],
        loss_fn: str,
        loss_fn_config: dict[str, float] | None = None,
    ) -> Future[types.ForwardBackwardOutput]: ...

    def optim_step(self, adam_params: types.AdamParams) -> Future[types.OptimStepResponse]: ...

    def save_state(self, name: str) -> Future[types.SaveWeightsResponse]: ...

    def load_state(self, path: str) -> Future[types.LoadWeightsResponse]: ...

    def save_weights_and_get_sampling_client(self, name: str | None = None) -> SamplingClient: ...

    def get_tokenizer(self) -> Any: ...


class ServiceClient(Protocol):
    def create_lora_training_client(self, base_model: str, rank: int = 32) -> TrainingClient: ...

    def create_training_client_from_state(self, path: str) -> TrainingClient: ...

    def create_sampling_client(self, model_path: str | None = None, base_model: str | None = None) -> SamplingClient: ...
