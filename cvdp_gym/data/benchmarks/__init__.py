"""The benchmarks beside CVDP as datasets: the catalog (:mod:`.catalog`) and where a benchmark's
files come from (:mod:`.sources`).

Each benchmark's own loader lives in its plug-in package (``cvdp_gym/benchmarks/<name>/data.py``,
:mod:`cvdp_gym.plugins`). :func:`cvdp_gym.data.load_dataset` uses the catalog, so every
command and environment that takes a dataset takes a benchmark.
"""

from cvdp_gym.data.benchmark import Benchmark, BenchmarkSpec, Pin, parse_spec
from cvdp_gym.data.benchmarks import sources
from cvdp_gym.data.benchmarks.catalog import (
    BENCHMARKS,
    benchmark,
    detect,
    fetch,
    is_benchmark_spec,
    load_benchmark,
    locate,
)
from cvdp_gym.data.benchmarks.sources import checksum

__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "BenchmarkSpec",
    "Pin",
    "benchmark",
    "checksum",
    "detect",
    "fetch",
    "is_benchmark_spec",
    "load_benchmark",
    "locate",
    "parse_spec",
    "sources",
]
