"""An in-process stand-in of ``tinker.ServiceClient`` (and of the ``RestClient`` calls the
trainer and ``rtl-train export`` make), built from the SDK's own types.

The service cannot be reached from the test machines. The stand-in answers with
``tinker.types`` values and futures, the local backend's real model behind them, and
records every request. For export it serves what the service serves: a LoRA checkpoint
saved as *external weights* in Tinker's PEFT-style layout (output head named
``model.unembed_tokens``), each file at a URL (``file://`` here, signed HTTPS there).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import json
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Literal

from tinker import APIFuture, types

from rtl_trainer.backends.local import LocalServiceClient


# -- the stand-in of tinker.ServiceClient -----------------------------------------------
class Recorder:
    """Every request made to the stand-in, and every future it handed out."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.futures: list[TrackedFuture] = []
        self._lock = threading.Lock()

    def record(self, method: str, **args: Any) -> None:
        with self._lock:
            self.calls.append((method, args))

    def future(self, method: str, inner: Any = None, *, value: Any = None) -> TrackedFuture:
        future = TrackedFuture(method, inner, value)
        with self._lock:
            self.futures.append(future)
        return future

    def named(self, method: str) -> list[dict[str, Any]]:
        return [args for name, args in self.calls if name == method]


class TrackedFuture(APIFuture[Any]):
    """The SDK's ``APIFuture`` (``result()``, ``await``) over a local call or a value,
    remembering whether it was waited on."""

    def __init__(self, method: str, inner: Any, value: Any) -> None:
        self.method, self._inner, self._value = method, inner, value
        self.awaited = False

    def result(self, timeout: float | None = None) -> Any:
        self.awaited = True
        return self._value if self._inner is None else self._inner.result(timeout)

    async def result_async(self, timeout: float | None = None) -> Any:
        self.awaited = True
        return await asyncio.wait_for(asyncio.wrap_future(self.future()), timeout)

    def future(self) -> concurrent.futures.Future[Any]:
        if self._inner is not None:
            return self._inner.future()
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        done.set_result(self._value)
        return done


class StandInSamplingClient:
    def __init__(self, local: Any, rec: Recorder, name: str | None = None) -> None:
        self._local, self._rec, self.name = local, rec, name

    def sample(self, prompt: types.ModelInput, num_samples: int, sampling_params: types.SamplingParams, **kw: Any):
        self._rec.record(
            "sample", prompt=prompt, num_samples=num_samples, sampling_params=sampling_params, weights=self.name, **kw
        )
        return self._rec.future("sample", self._local.sample(prompt, num_samples, sampling_params, **kw))

    def compute_logprobs(self, prompt: types.ModelInput, **kw: Any):
        self._rec.record("compute_logprobs", prompt=prompt, weights=self.name, **kw)
        return self._rec.future("compute_logprobs", self._local.compute_logprobs(prompt, **kw))

    def get_tokenizer(self) -> Any:
        return self._local.get_tokenizer()


class StandInTrainingClient:
    def __init__(self, local: Any, rec: Recorder, service: StandInServiceClient | None = None) -> None:
        self._local, self._rec, self._service = local, rec, service

    def forward_backward(self, data: list[types.Datum], loss_fn: str, loss_fn_config: dict | None = None):
        self._rec.record("forward_backward", data=data, loss_fn=loss_fn, loss_fn_config=loss_fn_config)
        return self._rec.future("forward_backward", self._local.forward_backward(data, loss_fn, loss_fn_config))

    def forward(self, data: list[types.Datum], loss_fn: str, loss_fn_config: dict | None = None):
        self._rec.record("forward", data=data, loss_fn=loss_fn, loss_fn_config=loss_fn_config)
        return self._rec.future("forward", self._local.forward(data, loss_fn, loss_fn_config))

    def optim_step(self, adam_params: types.AdamParams):
        self._rec.record("optim_step", adam_params=adam_params)
        return self._rec.future("optim_step", self._local.optim_step(adam_params))

    def save_state(self, name: str, ttl_seconds: int | None = None, **kw: Any):
        self._rec.record("save_state", name=name, ttl_seconds=ttl_seconds, **kw)
        return self._rec.future("save_state", self._local.save_state(name))

    def save_weights_for_sampler(self, name: str, ttl_seconds: int | None = None, **kw: Any):
        self._rec.record("save_weights_for_sampler", name=name, ttl_seconds=ttl_seconds, **kw)
        return self._rec.future("save_weights_for_sampler", self._local.save_weights_for_sampler(name))

    def load_state(self, path: str):
        self._rec.record("load_state", path=path)
        return self._rec.future("load_state", self._local.load_state(path))

    def save_weights_and_get_sampling_client(self, name: str | None = None, **kw: Any):
        # As SDK 0.38: a future of the sampling client.
        self._rec.record("save_weights_and_get_sampling_client", name=name)
        sampler = self._local.save_weights_and_get_sampling_client(name)
        return self._rec.future("save_weights_and_get_sampling_client", value=StandInSamplingClient(sampler, self._rec, name))

    def save_weights_external(self, name: str, ttl_seconds: int | None = None, **kw: Any):
        """As the service: the weights in Tinker's PEFT-style layout, as a checkpoint."""
        self._rec.record("save_weights_external", name=name, ttl_seconds=ttl_seconds, **kw)
        assert self._service is not None, "made without its service"
        path = self._service.store_external(self._local, name)
        return self._rec.future("save_weights_external", value=types.SaveWeightsExternalResponse(path=path))

    def get_tokenizer(self) -> Any:
        return self._local.get_tokenizer()


def tinker_layout(adapter: Path, target: Path) -> None:
    """A local PEFT adapter folder rewritten as Tinker's download names it: the output
    head ``lm_head`` is ``model.unembed_tokens`` (in the keys and ``target_modules``)."""
    from safetensors.torch import load_file, save_file

    target.mkdir(parents=True)
    tensors = load_file(str(adapter / "adapter_model.safetensors"))
    renamed = {k.replace("base_model.model.lm_head.", "base_model.model.model.unembed_tokens."): v for k, v in tensors.items()}
    save_file(renamed, str(target / "adapter_model.safetensors"), metadata={"format": "pt"})
    config = json.loads((adapter / "adapter_config.json").read_text())
    config["target_modules"] = sorted("unembed_tokens" if m == "lm_head" else m for m in config["target_modules"])
    (target / "adapter_config.json").write_text(json.dumps(config))


class StandInServiceClient:
    """``tinker.ServiceClient``'s methods over ``LocalServiceClient``; ``create_*`` return
    futures of clients, as SDK 0.38 does."""

    def __init__(
        self, local: LocalServiceClient, models: list[str], rec: Recorder, flags: dict[str, tuple[bool, bool]] | None = None
    ) -> None:
        self._local, self._models, self.rec = local, models, rec
        self._flags = flags or {}  # model -> (trainable, sampleable); default both
        self.external: dict[str, Path] = {}  # tinker://.../external_weights/NAME -> its files
        self._external_root: Path | None = None

    # -- external weights (RestClient's calls for downloads) ----------------------------
    def store_external(self, local: Any, name: str) -> str:
        if self._external_root is None:
            self._external_root = Path(tempfile.mkdtemp(prefix="standin-external-"))
        saved = Path(local.save_weights_for_sampler(f"external-{name}").result().path)
        folder = self._external_root / f"{name}-{len(self.external)}"
        tinker_layout(saved / "adapter", folder)
        path = f"tinker://standin-run/external_weights/{folder.name}"
        self.external[path] = folder
        return path

    def get_weights_info_by_tinker_path(self, tinker_path: str):
        self.rec.record("get_weights_info_by_tinker_path", tinker_path=tinker_path)
        state = json.loads((Path(tinker_path) / "state.json").read_text())
        lora = state["lora"]
        info = types.WeightsInfoResponse(
            base_model=state["base_model"], is_lora=lora is not None, lora_rank=None if lora is None else lora["rank"]
        )
        return self.rec.future("get_weights_info_by_tinker_path", value=info)

    def get_external_weights_urls(self, tinker_path: str):
        self.rec.record("get_external_weights_urls", tinker_path=tinker_path)
        folder = self.external[tinker_path]
        response = types.ExternalWeightsUrlsResponse(
            urls={f.name: f.resolve().as_uri() for f in sorted(folder.iterdir())},
            expires=datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1),
        )
        return self.rec.future("get_external_weights_urls", value=response)

    def delete_checkpoint_from_tinker_path(self, tinker_path: str):
        self.rec.record("delete_checkpoint_from_tinker_path", tinker_path=tinker_path)
        shutil.rmtree(self.external.pop(tinker_path))
        return self.rec.future("delete_checkpoint_from_tinker_path", value=None)

    def get_server_capabilities(self):
        self.rec.record("get_server_capabilities")
        response = types.GetServerCapabilitiesResponse(
            supported_models=[
                types.SupportedModel(
                    model_name=m, max_context_length=4096,
                    trainable=self._flags.get(m, (True, True))[0], sampleable=self._flags.get(m, (True, True))[1],
                )
                for m in self._models
            ]
        )
        return self.rec.future("get_server_capabilities", value=response)

    def create_lora_training_client(self, base_model: str, rank: int = 32, **kw: Any):
        self.rec.record("create_lora_training_client", base_model=base_model, rank=rank, **kw)
        client = StandInTrainingClient(self._local.create_lora_training_client(base_model, rank=rank), self.rec, self)
        return self.rec.future("create_lora_training_client", value=client)

    def create_training_client_from_state(self, path: str, **kw: Any):
        self.rec.record("create_training_client_from_state", path=path, **kw)
        client = StandInTrainingClient(self._local.create_training_client_from_state(path), self.rec, self)
        return self.rec.future("create_training_client_from_state", value=client)

    def create_training_client_from_state_with_optimizer(self, path: str, **kw: Any):
        self.rec.record("create_training_client_from_state_with_optimizer", path=path, **kw)
        local = self._local.create_training_client_from_state_with_optimizer(path)
        return self.rec.future("create_training_client_from_state_with_optimizer", value=StandInTrainingClient(local, self.rec))

    def create_sampling_client(self, model_path: str | None = None, base_model: str | None = None, **kw: Any):
        self.rec.record("create_sampling_client", model_path=model_path, base_model=base_model, **kw)
        local = self._local.create_sampling_client(model_path=model_path, base_model=base_model)
        return self.rec.future("create_sampling_client", value=StandInSamplingClient(local, self.rec))

    def __enter__(self) -> StandInServiceClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: Any) -> None:
        """As the SDK: closes the session, ``success`` unless an exception left the block."""
        status = "success" if exc_type is None else "errored" if issubclass(exc_type, Exception) else "interrupted"
        self.close(status).result()

    def close(self, status: Literal["success", "errored", "interrupted"], detail: str | None = None):
        """As the SDK: finishes the session with ``status``; a future of None."""
        self.rec.record("close", status=status, detail=detail)
        return self.rec.future("close", value=None)
