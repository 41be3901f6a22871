"""Validate JSON payloads with NeMo-Gym's own pydantic models (run by ``test_nemo_gym_models``
in the sandbox, under the toolchain root's Python 3.14, with ``nemo_gym`` and the packages
its models need on ``PYTHONPATH``; see ``scripts/nemo_gym_models.py``).

``python3 nemo_gym_check.py IN.json``: IN is ``[[model name, payload], ...]`` (a name
``config:NAME`` checks a server instance's config the way ``ng_run`` reads it); prints one
JSON line ``[[model name, null or the validation error or warning], ...]`` (NeMo-Gym warns,
not fails, on a ``failure_kind`` outside its vocabulary: reported here as a problem too).

``nemo_gym.base_resources_server`` imports, besides its models, the server machinery
(aiohttp, uvicorn, hydra, pandas, scipy, wandb, ray through ``server_utils``, ``judge``,
``reward_profile``, ``telemetry``): those modules are stand-ins here (``_stand_in``), so
that only what the models are built from is needed: pydantic, openai's types, fastapi,
omegaconf and rich. The models themselves are NeMo-Gym's, unchanged.
"""

from __future__ import annotations

import contextlib
import enum
import importlib.util
import json
import logging
import sys
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Modules that hold server machinery, not the models' building blocks.
STAND_INS = (
    "nemo_gym.server_utils", "nemo_gym.judge", "nemo_gym.reward_profile", "nemo_gym.global_config",
    "nemo_gym.telemetry", "nemo_gym.telemetry.endpoints", "nemo_gym.profiling",
)


class _Anything:
    """Subclassable, callable, subscriptable: whatever a stand-in module is asked for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __class_getitem__(cls, item: Any) -> type:
        return cls


def _stand_in(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = []  # a package too, for its submodules' stand-ins
    module.__getattr__ = lambda attr: type(attr, (_Anything,), {})  # type: ignore[method-assign]
    return module


def load_models() -> types.ModuleType:
    for name in STAND_INS:
        sys.modules[name] = _stand_in(name)
    # nemo_gym.sandbox's __init__ pulls in every sandbox provider; its ``access`` module (a
    # model a seed-session answer names) needs none of them: the package without its __init__.
    spec = importlib.util.find_spec("nemo_gym")
    assert spec is not None and spec.submodule_search_locations, "nemo_gym is not on PYTHONPATH"
    sandbox = types.ModuleType("nemo_gym.sandbox")
    sandbox.__path__ = [str(Path(next(iter(spec.submodule_search_locations))) / "sandbox")]
    sys.modules["nemo_gym.sandbox"] = sandbox
    import nemo_gym.base_resources_server as models

    return models


@contextlib.contextmanager
def _logged() -> Iterator[list[str]]:
    """The warnings NeMo-Gym logs (``failure_kinds`` logs, rather than ``warnings.warn``s)."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                lines.append(record.getMessage())

    handler = Keep()
    logging.getLogger().addHandler(handler)
    try:
        yield lines
    finally:
        logging.getLogger().removeHandler(handler)


#: A payload name ``config:NAME``: the config of server instance NAME, not a model's payload.
CONFIG = "config:"


def _check_config(name: str, instance: dict[str, Any]) -> None:
    """Validate a server instance's config with NeMo-Gym's own reading of it."""
    from nemo_gym.config_types import maybe_get_server_instance_config
    from omegaconf import OmegaConf

    config, error = maybe_get_server_instance_config(name, OmegaConf.create(instance))
    if config is None:
        raise ValueError(f"not a server instance config: {error}")


def main(path: str) -> None:
    models = load_models()
    results: list[tuple[str, str | None]] = []
    for name, payload in json.loads(Path(path).read_text()):
        model = None if name.startswith(CONFIG) else getattr(models, name)
        with warnings.catch_warnings(record=True) as caught, _logged() as logged:
            warnings.simplefilter("always")
            try:
                if model is None:  # a server instance's config, as ng_run reads it
                    _check_config(name.removeprefix(CONFIG), payload)
                elif isinstance(model, type) and issubclass(model, enum.Enum):
                    model(payload)  # ReverifyMode: a plain value
                else:
                    model.model_validate(payload)
                problem = None
            except Exception as exc:  # the validation error, reported to the test
                problem = f"{type(exc).__name__}: {exc}"
        notes = [str(w.message) for w in caught] + logged
        results.append((name, problem or ("; ".join(notes) if notes else None)))
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1])
