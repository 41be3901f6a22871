"""The CVDP taskset under the id verifiers' own commands import (``vf-eval cvdp_gym_verifiers``).

verifiers 0.4.0 finds a taskset by importing its id as a top-level package that exports one
``Taskset`` subclass in ``__all__``; the code lives in :mod:`cvdp_gym.integrations.verifiers`.
"""

from cvdp_gym.integrations.verifiers import CVDPTaskset, CVDPTasksetConfig, load_environment

__all__ = ["CVDPTaskset", "CVDPTasksetConfig", "load_environment"]
