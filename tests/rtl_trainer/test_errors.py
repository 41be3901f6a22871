"""``rtl_trainer.errors``: one root, stdlib-compatible, picklable; bad input raises it.

A bad config, a bad sampling or training request and a missing checkpoint each raise an
``RtlTrainerError`` subclass that is still the stdlib type raised before the hierarchy
(so callers' ``except ValueError`` / ``except FileNotFoundError`` keep working).
"""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

from rtl_trainer import errors
from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import (
    BackendUnavailableError,
    CheckpointError,
    CheckpointExistsError,
    CheckpointNotFoundError,
    ConfigError,
    InvalidCheckpointError,
    RequestError,
    RtlTrainerError,
    UnsupportedRequestError,
)

#: Each concrete class and the stdlib error it stands in for.
STDLIB_BASE = {
    "ConfigError": ValueError,
    "BackendUnavailableError": RuntimeError,
    "ModelError": ValueError,
    "RequestError": ValueError,
    "UnsupportedRequestError": NotImplementedError,
    "InvalidCheckpointError": ValueError,
    "CheckpointNotFoundError": FileNotFoundError,
    "CheckpointExistsError": FileExistsError,
    "OutputExistsError": FileExistsError,
    "RenderingError": ValueError,
    "UnsupportedTokenizerError": TypeError,
    "TrackingError": RuntimeError,
    "InfrastructureError": RuntimeError,
}


@pytest.mark.parametrize("name", errors.__all__)
def test_every_error_pickles_and_is_an_rtl_trainer_error(name: str) -> None:
    cls = getattr(errors, name)
    assert issubclass(cls, RtlTrainerError)
    if name in STDLIB_BASE:
        assert issubclass(cls, STDLIB_BASE[name])
    error = cls("datum 3: model_input is empty")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is cls and copy.args == error.args and str(copy) == str(error)


def test_every_concrete_class_is_listed() -> None:
    grouping = {"RtlTrainerError", "CheckpointError"}
    assert set(errors.__all__) == set(STDLIB_BASE) | grouping
    assert issubclass(CheckpointNotFoundError, CheckpointError) and not issubclass(CheckpointError, OSError)


def test_raises_in_the_package_use_the_hierarchy() -> None:
    """Every ``raise SomeClass(...)`` in rtl_trainer names an ``rtl_trainer.errors`` class
    (or one of the few deliberate exceptions: a programming error, typer's exits)."""
    allowed = set(errors.__all__)
    deliberate = {("losses/datums.py", "TypeError")}  # a non-Segment passed by code, not input
    root = Path(errors.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                name = func.id if isinstance(func, ast.Name) else None
                if name is None or not name[0].isupper():  # typer.Exit(...), the CLI's _fail(...)
                    continue
                where = str(path.relative_to(root))
                if name not in allowed and (where, name) not in deliberate:
                    found.append(f"{where}:{node.lineno} raises {name}")
    assert not found, found


# -- bad input raises the hierarchy, and still the stdlib type -----------------------------


def test_a_bad_config_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="mode must be rl, distill or sft") as caught:
        TrainConfig(mode="bogus", student="s").validate()
    assert isinstance(caught.value, ValueError)
    with pytest.raises(ConfigError, match="unknown config keys: nope"):
        TrainConfig.from_dict({"nope": 1})
    with pytest.raises(ConfigError):  # cvdp_gym's message, re-raised as a ConfigError
        TrainConfig(student="s", teacher="t", grade_executor="carrier-pigeon").validate()
    with pytest.raises(ValueError, match="distillation needs a teacher"):
        TrainConfig(student="s").validate()


def _local_clients(tmp_path: Path):
    """Clients over a stand-in module: validation happens before the model is touched."""
    pytest.importorskip("tinker")
    import torch

    from rtl_trainer.backends.local.runtime import resolve_runtime
    from rtl_trainer.backends.local.sampling import LocalSamplingClient
    from rtl_trainer.backends.local.training import LocalTrainingClient
    from rtl_trainer.backends.local.vocab import TokenMap

    runtime = resolve_runtime("cpu", "float32", True)
    tokmap = TokenMap(None, model_rows=8, tokenizer_size=8)
    sampler = LocalSamplingClient(torch.nn.Linear(2, 2), tokmap, None, runtime, "stand-in")
    trainer = LocalTrainingClient(
        torch.nn.Linear(2, 2), tokmap=tokmap, tokenizer=None, runtime=runtime, base_model="stand-in",
        lora=None, workdir=tmp_path, microbatch_tokens=64,
    )
    return sampler, trainer


def test_a_bad_sampling_request_raises_request_error(tmp_path: Path) -> None:
    from tinker import types

    sampler, trainer = _local_clients(tmp_path)
    prompt = types.ModelInput.from_ints([1, 2])
    with pytest.raises(RequestError, match="num_samples must be >= 1") as caught:
        sampler.sample(prompt, 0, types.SamplingParams(max_tokens=4))
    assert isinstance(caught.value, ValueError)
    with pytest.raises(RequestError, match="outside the model's rows"):
        sampler.sample(types.ModelInput.from_ints([99]), 1, types.SamplingParams(max_tokens=4))
    with pytest.raises(UnsupportedRequestError) as unsupported:
        sampler.sample(prompt, 1, types.SamplingParams(max_tokens=4), topk_sample_logprobs=2)
    assert isinstance(unsupported.value, NotImplementedError)
    sampler.close()
    trainer.close()


def test_a_bad_training_request_raises_request_error(tmp_path: Path) -> None:
    from tinker import types

    from rtl_trainer.losses import check_data

    sampler, trainer = _local_clients(tmp_path)
    datum = types.Datum(
        model_input=types.ModelInput.from_ints([1, 2, 3]),
        loss_fn_inputs={"target_tokens": [2, 3, 4], "weights": [1.0, 1.0]},
    )
    with pytest.raises(RequestError, match=r"datum 0: loss_fn_inputs\['weights'\] has shape \(2,\)") as caught:
        trainer.forward_backward([datum], "cross_entropy")
    assert isinstance(caught.value, ValueError)
    with pytest.raises(RequestError, match="unknown loss_fn 'grpo'"):
        trainer.forward([datum], "grpo")
    with pytest.raises(RequestError, match="only has AdamW"):
        trainer.optim_step({"learning_rate": 0.1})  # type: ignore[arg-type]
    with pytest.raises(RequestError, match="datum 0: weights has shape"):
        check_data([datum], "cross_entropy")
    sampler.close()
    trainer.close()


def test_a_missing_checkpoint_raises_checkpoint_not_found(tmp_path: Path) -> None:
    pytest.importorskip("tinker")
    from rtl_trainer.backends.local import LocalServiceClient

    service = LocalServiceClient(None, workdir=tmp_path, device="cpu")
    with pytest.raises(CheckpointNotFoundError, match="is no local checkpoint") as caught:
        service.create_training_client_from_state(str(tmp_path / "nope"))
    assert isinstance(caught.value, FileNotFoundError)
    with pytest.raises(FileNotFoundError):
        service.create_sampling_client(model_path=str(tmp_path / "nope"))

    sampler, trainer = _local_clients(tmp_path)
    with pytest.raises(CheckpointNotFoundError):
        trainer.load_state(str(tmp_path / "nope")).result()
    (tmp_path / "checkpoints" / "taken").mkdir(parents=True)
    with pytest.raises(CheckpointExistsError) as exists:
        trainer.save_state("taken").result()
    assert isinstance(exists.value, FileExistsError)
    with pytest.raises(InvalidCheckpointError, match="plain file name"):
        trainer.save_state("../escape")
    sampler.close()
    trainer.close()


def test_no_tinker_key_is_backend_unavailable(monkeypatch) -> None:
    pytest.importorskip("tinker")
    from rtl_trainer.backends.tinker_backend import API_KEY_VAR, TinkerService

    monkeypatch.delenv(API_KEY_VAR, raising=False)
    with pytest.raises(BackendUnavailableError, match=API_KEY_VAR) as caught:
        TinkerService()
    assert isinstance(caught.value, RuntimeError)
