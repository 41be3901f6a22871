"""In-process training backend with the Tinker SDK's interface (see ``backends/base.py``).

Why: the training loop is written once against the Tinker API; this backend runs the
same calls on a local GPU or CPU (transformers + peft), so the loop can be developed,
tested and run on tiny models without the service.

What the loop must know:

- Every call returns a future; each client runs its calls in submission order on one
  worker thread (``futures.SerialWorker``), so ``forward_backward`` then ``optim_step``
  may be submitted back to back, as with the service. Input validation happens at call
  time and raises ``ValueError`` (``rtl_trainer.errors.RequestError``) at once.
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
- Each sampling request decodes alone, with its own seed, so a seeded request gets the
  same bits whatever else is in flight; ``batch_sampling=True`` decodes the requests queued
  on a sampler together instead (many small requests, as a step's groups make, cost about
  one; their log-probs then depend on what shared the batch). ``cpu_threads`` fixes the
  process's float math on CPU (``runtime.fix_cpu_math``): the same figures on any machine.
- Sampled ``logprobs`` are under the distribution actually sampled from (temperature,
  ``top_k``, ``top_p`` applied): the behaviour policy, as importance sampling needs. At
  ``temperature == 0`` (greedy) they are the model's own (temperature 1) logprobs.
- Client-creation methods return the client itself; ``client.result()`` returns it too,
  so code written for SDK 0.38's future-of-a-client style also works.

Modules, bottom up: ``runtime`` (device, dtype, model loading, the clients' base),
``vocab`` (full ids <-> model rows), ``objectives`` (the three losses as tensor
arithmetic), ``batching`` (request validation, padding, microbatches), ``checkpoint``
(folder layout, atomic writes, reading back), ``sampling``, ``training``, ``service``.
"""

from rtl_trainer.backends.local.checkpoint import OPTIMIZER_FILE
from rtl_trainer.backends.local.objectives import LOSS_FN_INPUTS
from rtl_trainer.backends.local.runtime import DEFAULT_TARGET_MODULES
from rtl_trainer.backends.local.sampling import LocalSamplingClient
from rtl_trainer.backends.local.service import LocalServiceClient
from rtl_trainer.backends.local.training import LocalTrainingClient

__all__ = [
    "DEFAULT_TARGET_MODULES",
    "LOSS_FN_INPUTS",
    "OPTIMIZER_FILE",
    "LocalSamplingClient",
    "LocalServiceClient",
    "LocalTrainingClient",
]
