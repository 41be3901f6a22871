"""cvdp_gym: Gymnasium environments and a sandboxed grader for RTL benchmarks: the NVIDIA CVDP
benchmark, VerilogEval v1/v2 and RTLLM v1.1/v2.0.

Importing the package registers ``CVDP-SingleShot-v0``, ``CVDP-Refine-v0`` and
``CVDP-Agentic-v0``, and the same three under benchmark-neutral names, ``RTL-SingleShot-v0``,
``RTL-Refine-v0`` and ``RTL-Agentic-v0`` (any dataset works with either name); each also
works as ``gymnasium.make("cvdp_gym:CVDP-SingleShot-v0")`` without a prior import. The
verification tasks are ``RTL-Testbench-v0`` and ``RTL-Assertion-v0``: a problem's design asked
for a test bench or for assertions, rewarded by the seeded bugs they catch.

The names in ``__all__`` are the package's curated entry points; they load on first use
(PEP 562), so ``import cvdp_gym`` costs only Gymnasium's registry. Everything else is
reached by its subpackage (``cvdp_gym.grading``, ``cvdp_gym.sandbox``, ...), each with its
own ``__all__``.

>>> import cvdp_gym
>>> problem = cvdp_gym.load_dataset("bundled")["cvdp_gym_gray_converter_0001"]
>>> sorted(problem.targets)
['rtl/gray_converter.sv']
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from gymnasium.envs.registration import register as _register
from gymnasium.envs.registration import registry as _registry

__version__ = "0.1.0"

#: The environments this package registers with Gymnasium, and their classes: each under its
#: CVDP name and a benchmark-neutral one (``RTL-...``), the same class either way.
ENV_IDS = (
    "CVDP-SingleShot-v0", "CVDP-Agentic-v0", "CVDP-Refine-v0", "RTL-SingleShot-v0", "RTL-Agentic-v0", "RTL-Refine-v0",
    "RTL-Testbench-v0", "RTL-Assertion-v0",
)
_ENTRY_POINTS = {
    f"{prefix}-{name}-v0": entry
    for prefix in ("CVDP", "RTL")
    for name, entry in (
        ("SingleShot", "cvdp_gym.envs.single_shot:SingleShotEnv"),
        ("Agentic", "cvdp_gym.envs.agentic:AgenticEnv"),
        ("Refine", "cvdp_gym.envs.refine:RefineEnv"),
    )
} | {
    "RTL-Testbench-v0": "cvdp_gym.envs.testbench:TestbenchEnv",
    "RTL-Assertion-v0": "cvdp_gym.envs.assertion:AssertionEnv",
}

#: Public name -> the module that defines it (imported on first access).
_LAZY = {
    "AgenticEnv": "cvdp_gym.envs.agentic",
    "AssertionEnv": "cvdp_gym.envs.assertion",
    "CvdpGymError": "cvdp_gym.errors",
    "Dataset": "cvdp_gym.data",
    "GradeResult": "cvdp_gym.grading.result",
    "Grader": "cvdp_gym.grading.grader",
    "Problem": "cvdp_gym.data",
    "RefineEnv": "cvdp_gym.envs.refine",
    "SingleShotEnv": "cvdp_gym.envs.single_shot",
    "TestbenchEnv": "cvdp_gym.envs.testbench",
    "extract_files": "cvdp_gym.parsers",
    "load_dataset": "cvdp_gym.data",
    "make_reward": "cvdp_gym.grading.rewards",
    "parse_tool_calls": "cvdp_gym.parsers",
    "run_harness": "cvdp_gym.harness.runner",
}

__all__ = [
    "ENV_IDS",
    "AgenticEnv",
    "AssertionEnv",
    "CvdpGymError",
    "Dataset",
    "GradeResult",
    "Grader",
    "Problem",
    "RefineEnv",
    "SingleShotEnv",
    "TestbenchEnv",
    "__version__",
    "extract_files",
    "load_dataset",
    "make_reward",
    "parse_tool_calls",
    "run_harness",
]

for _env_id in ENV_IDS:
    if _env_id not in _registry:
        _register(id=_env_id, entry_point=_ENTRY_POINTS[_env_id], disable_env_checker=True)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cvdp_gym' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from cvdp_gym.data import Dataset, Problem, load_dataset
    from cvdp_gym.envs.agentic import AgenticEnv
    from cvdp_gym.envs.assertion import AssertionEnv
    from cvdp_gym.envs.refine import RefineEnv
    from cvdp_gym.envs.single_shot import SingleShotEnv
    from cvdp_gym.envs.testbench import TestbenchEnv
    from cvdp_gym.errors import CvdpGymError
    from cvdp_gym.grading.grader import Grader
    from cvdp_gym.grading.result import GradeResult
    from cvdp_gym.grading.rewards import make_reward
    from cvdp_gym.harness.runner import run_harness
    from cvdp_gym.parsers import extract_files, parse_tool_calls
