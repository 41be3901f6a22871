"""cvdp_gym: Gymnasium environments and a sandboxed harness runner for the NVIDIA CVDP benchmark.

Importing the package registers ``CVDP-SingleShot-v0``, ``CVDP-Refine-v0`` and
``CVDP-Agentic-v0``; each also works as ``gymnasium.make("cvdp_gym:CVDP-SingleShot-v0")``
without a prior import.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

__version__ = "0.1.0"

for _env_id, _entry in (
    ("CVDP-SingleShot-v0", "cvdp_gym.envs.single_shot:SingleShotEnv"),
    ("CVDP-Agentic-v0", "cvdp_gym.envs.agentic:AgenticEnv"),
    ("CVDP-Refine-v0", "cvdp_gym.envs.refine:RefineEnv"),
):
    if _env_id not in registry:
        register(id=_env_id, entry_point=_entry, disable_env_checker=True)
