"""The Tinker service behind the loop's interfaces: a thin wrapper over ``tinker.ServiceClient``.

The SDK (0.38) returns futures of clients from ``create_*`` and from
``save_weights_and_get_sampling_client``; the loop wants the clients themselves, so this
wrapper calls ``.result()`` on those and passes everything else through unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Literal

import tinker
from tinker import types

from rtl_trainer.errors import BackendUnavailableError, ModelError

API_KEY_VAR = "TINKER_API_KEY"
#: How a session ended, as ``tinker.ServiceClient.close`` takes it.
SessionStatus = Literal["success", "errored", "interrupted"]


def _resolved(value: Any) -> Any:
    """The client behind a future of a client (the SDK's back-compat futures), or ``value``."""
    result = getattr(value, "result", None)
    return result() if callable(result) else value


class TinkerTrainingClient:
    """A ``tinker.TrainingClient`` whose ``save_weights_and_get_sampling_client`` returns
    the sampling client (not a future of it); every other attribute is the SDK's."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def save_weights_and_get_sampling_client(self, name: str | None = None) -> Any:
        return _resolved(self._client.save_weights_and_get_sampling_client(name))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class TinkerService:
    """``ServiceClient`` for the loop over the Tinker service.

    ``client`` (a ``tinker.ServiceClient`` or a stand-in with its methods) and
    ``rest_client`` (for ``get_server_capabilities``) may be injected; by default both are
    made here, after the API key was found.
    """

    def __init__(self, client: Any = None, *, rest_client: Any = None, api_key: str | None = None) -> None:
        api_key = api_key or os.environ.get(API_KEY_VAR)
        if not api_key:
            raise BackendUnavailableError(
                f"the Tinker backend needs an API key: set {API_KEY_VAR} "
                "(from the Tinker console) or use --backend local"
            )
        if client is None:
            try:
                client = tinker.ServiceClient(api_key=api_key)
                rest_client = rest_client or tinker.RestClient(api_key=api_key)
            except tinker.TinkerError as exc:
                raise BackendUnavailableError(f"could not set up the Tinker client ({API_KEY_VAR}?): {exc}") from exc
        self._client = client
        self._rest = rest_client if rest_client is not None else client

    @property
    def client(self) -> Any:
        return self._client

    @property
    def rest(self) -> Any:
        """The ``tinker.RestClient`` (checkpoint info, external-weights URLs, deletion)."""
        return self._rest

    # -- models ------------------------------------------------------------------------
    def capabilities(self) -> types.GetServerCapabilitiesResponse:
        try:
            return _resolved(self._rest.get_server_capabilities())
        except tinker.TinkerError as exc:
            raise BackendUnavailableError(f"could not get the models the Tinker service offers: {exc}") from exc

    def available_models(self) -> list[types.SupportedModel]:
        return list(self.capabilities().supported_models)

    def check_models(self, trainable: Iterable[str | None] = (), sampleable: Iterable[str | None] = ()) -> None:
        """Raise ``ValueError`` unless every ``trainable`` name is offered for training and
        every ``sampleable`` name for sampling (a flag the service leaves unset passes)."""
        wanted_train = [n for n in trainable if n]
        wanted_sample = [n for n in sampleable if n]
        if not wanted_train and not wanted_sample:
            return
        offered = {m.model_name: m for m in self.available_models() if m.model_name}
        missing = [n for n in dict.fromkeys(wanted_train + wanted_sample) if n not in offered]
        if missing:
            raise ModelError(
                f"model(s) not offered by the Tinker service: {', '.join(missing)}; "
                f"offered: {', '.join(offered) or '(none)'}"
            )
        problems = [f"{n} cannot be trained" for n in wanted_train if offered[n].trainable is False]
        problems += [f"{n} has no sampling capacity" for n in wanted_sample if offered[n].sampleable is False]
        if problems:
            able = [n for n, m in offered.items() if m.trainable is not False]
            raise ModelError(f"{'; '.join(problems)} on the Tinker service (trainable: {', '.join(able) or '(none)'})")

    # -- what the loop calls -----------------------------------------------------------
    def create_lora_training_client(self, base_model: str, rank: int = 32, **kwargs: Any) -> TinkerTrainingClient:
        return TinkerTrainingClient(_resolved(self._client.create_lora_training_client(base_model, rank=rank, **kwargs)))

    def create_training_client_from_state(self, path: str, **kwargs: Any) -> TinkerTrainingClient:
        return TinkerTrainingClient(_resolved(self._client.create_training_client_from_state(path, **kwargs)))

    def create_training_client_from_state_with_optimizer(self, path: str, **kwargs: Any) -> TinkerTrainingClient:
        return TinkerTrainingClient(
            _resolved(self._client.create_training_client_from_state_with_optimizer(path, **kwargs))
        )

    def create_sampling_client(
        self, model_path: str | None = None, base_model: str | None = None, **kwargs: Any
    ) -> Any:
        return _resolved(self._client.create_sampling_client(model_path=model_path, base_model=base_model, **kwargs))

    def close(self, status: SessionStatus, detail: str | None = None) -> None:
        """Finish the session as ``status`` (``detail``: why, for the console) and release the
        SDK's connections; waits until the service has it (SDK 0.38: a future of None)."""
        self._client.close(status, detail).result()
