"""The errors ``rtl_trainer`` raises on bad input: one root, a class per category.

Contract: every error the trainer raises because of what it was given (a setting, a model,
a request, a checkpoint, a tokenizer) is an ``RtlTrainerError``, so ``except
RtlTrainerError`` catches all of them and nothing else. Each concrete class also subclasses
the stdlib error that was raised before the hierarchy existed (``ValueError``,
``RuntimeError``, ``FileNotFoundError``, ...), so an ``except ValueError`` written against
the old code still catches what it caught. Grouping classes that span stdlib types
(``CheckpointError``) subclass none; catch a concrete class or the root for those.

The classes take a message and nothing else, so they pickle as any stdlib exception does
(errors cross process boundaries: grading workers, Ray). Add no ``__init__`` parameters
without a ``__reduce__``.

One class is not about input: ``InfrastructureError`` stops a run whose grading machinery
fails too often (it is still an ``RtlTrainerError``, so the CLI reports it the same way).

Errors raised by the Tinker SDK, transformers or cvdp_gym are theirs and pass through;
internal invariants (``assert``) are not input errors and stay as they are.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailableError",
    "CheckpointError",
    "CheckpointExistsError",
    "CheckpointNotFoundError",
    "ConfigError",
    "InfrastructureError",
    "InvalidCheckpointError",
    "ModelError",
    "OutputExistsError",
    "RenderingError",
    "RequestError",
    "RtlTrainerError",
    "TrackingError",
    "UnsupportedRequestError",
    "UnsupportedTokenizerError",
]


class RtlTrainerError(Exception):
    """Root of every error ``rtl_trainer`` raises on bad input."""


class ConfigError(RtlTrainerError, ValueError):
    """A setting is invalid: a ``TrainConfig`` field or file, a command-line option, a
    choice among named alternatives (backend, problem sampler, ``sft_source``, tiny model
    size, dtype), or a selection that leaves nothing to train on."""


class BackendUnavailableError(RtlTrainerError, RuntimeError):
    """The training service cannot be used at all: no API key, the client cannot be set
    up, or its capabilities cannot be fetched."""


class ModelError(RtlTrainerError, ValueError):
    """A model cannot be used as asked: the service does not offer it (or cannot train or
    sample it), its weights and the tokenizer or compact vocab disagree, or it has nothing
    to train (no trainable parameters, no LoRA target)."""


class RequestError(RtlTrainerError, ValueError):
    """A sampling or training request, or what it is built from (datums, segments,
    advantages, logprobs), is malformed: an unknown ``loss_fn``, a missing or misshapen
    ``loss_fn_inputs`` array, an out-of-range token, an empty prompt, a bad sampling
    parameter, non-finite values."""


class UnsupportedRequestError(RtlTrainerError, NotImplementedError):
    """A request the Tinker SDK accepts but this backend does not implement."""


class CheckpointError(RtlTrainerError):
    """A checkpoint (saved state) cannot be written or read. Grouping class: the concrete
    ones below each carry the stdlib type raised before."""


class InvalidCheckpointError(CheckpointError, ValueError):
    """A checkpoint exists but does not fit: unknown format, LoRA vs full fine-tune or
    LoRA rank/targets unlike the client's, unexpected adapter keys, a checkpoint name
    that is not a plain file name, or (``rtl-train export``) a run of another backend than
    the exporter's, or a full fine-tune asked for as an adapter."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """The path is no checkpoint (no state file), or (``rtl-train export``) the folder is
    no run directory, the run has no checkpoint yet, or none at the step asked for."""


class CheckpointExistsError(CheckpointError, FileExistsError):
    """A checkpoint of that name exists and overwriting was not asked for."""


class OutputExistsError(RtlTrainerError, FileExistsError):
    """An output folder (``rtl-train export``'s OUT) exists and is not empty: nothing is
    overwritten."""


class RenderingError(RtlTrainerError, ValueError):
    """A renderer or tokenizer (``rtl_trainer.rendering``, and the token alignment in
    ``losses.align``) cannot do what was asked: messages the renderer cannot train on, an
    unknown offline tokenizer, a vocabulary file that does not build the expected ids, a
    token id outside the vocabulary."""


class InfrastructureError(RtlTrainerError, RuntimeError):
    """A step's grading failed for reasons not the answers' (sandboxes that would not start,
    broken harnesses, lost workers) in a larger share than ``max_infra_frac``: the run stops
    rather than train on noise, after writing the step's metrics and a checkpoint of the
    steps trained so far. Not bad input: the machine's trouble, which the message names."""


class UnsupportedTokenizerError(RtlTrainerError, TypeError):
    """A tokenizer of a kind that cannot give what is needed (character offsets need a
    ``tokenizers.Tokenizer`` or a fast Hugging Face tokenizer)."""


class TrackingError(RtlTrainerError, RuntimeError):
    """An experiment tracker (``log_to``: W&B, MLflow) cannot be opened: its library is not
    installed (the message names the extra to install) or the service refuses the run.
    Raised before training starts; a tracker that fails later only prints a warning."""
