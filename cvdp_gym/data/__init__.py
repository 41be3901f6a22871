"""Loading problems: CVDP (local JSONL files, the bundled set, the Hugging Face hub) and the
other benchmarks (:mod:`cvdp_gym.data.benchmarks`: VerilogEval v1/v2, RTLLM v1.1/v2.0);
``load_dataset`` (``loading.py``) takes any of them by its spec."""

from __future__ import annotations

from cvdp_gym.data.bundle import bundled_candidates
from cvdp_gym.data.loading import BUNDLED as BUNDLED
from cvdp_gym.data.loading import load_dataset
from cvdp_gym.data.problems import Dataset, DatasetError, Problem

__all__ = ["Dataset", "DatasetError", "Problem", "bundled_candidates", "load_dataset"]
