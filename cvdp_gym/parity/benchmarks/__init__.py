"""``cvdp-gym parity`` for the benchmarks beside CVDP: the run (:mod:`.run`), and what the
benchmarks' official flows share (:mod:`.sandboxed`, :mod:`.python_packages`). Each benchmark's
own official flow is its plug-in's ``official`` part (:mod:`cvdp_gym.plugins`)."""

from cvdp_gym.parity.benchmarks.official_flows import OFFICIAL_FLOWS, OfficialFlow
from cvdp_gym.parity.benchmarks.run import (
    benchmark_answers,
    clone_for,
    is_benchmark_dataset,
    run_benchmark_parity,
)
from cvdp_gym.parity.benchmarks.sandboxed import BenchmarkVerdict

__all__ = [
    "OFFICIAL_FLOWS",
    "BenchmarkVerdict",
    "OfficialFlow",
    "benchmark_answers",
    "clone_for",
    "is_benchmark_dataset",
    "run_benchmark_parity",
]
