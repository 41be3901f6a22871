"""CVDP's datasets: the problems this package ships (``bundled``), files of
``nvidia/cvdp-benchmark-dataset`` on the Hugging Face hub (``hf[:PATTERN[@REVISION]]``), and
local CVDP JSONL files (a file, or a folder of them).

:func:`cvdp_gym.data.load_dataset` reaches them by name (``DATASET_SOURCES``): ``bundled`` and
``hf:...`` before any benchmark of the catalog, a path only when no benchmark's layout claimed it
(a VerilogEval v1 ``.jsonl``, a training set's first row), which is why CVDP is the last built-in
plug-in. What every benchmark shares stays in :mod:`cvdp_gym.data`: CVDP's two record shapes are
the ``Problem`` model's own (:mod:`cvdp_gym.data.problems`, read also by ``coverage`` and the
NeMo-Gym routes), the hub download serves the training sets too (:mod:`cvdp_gym.data.hub`), and
the bundled set's files and candidates are read by ``check``, ``parity`` and the trainer
(:mod:`cvdp_gym.data.bundle`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cvdp_gym.data import hub
from cvdp_gym.data.benchmark import Benchmark, DatasetSource
from cvdp_gym.data.bundle import BUNDLED, bundled_records
from cvdp_gym.data.problems import CVDP, Dataset, load_jsonl, load_records

__all__ = ["BENCHMARKS", "DATASET_SOURCES", "CvdpDatasets"]

#: The spec prefix of files on the Hugging Face hub, CVDP's dataset there, and the file a bare
#: ``hf`` names (the open-source, non-agentic code-generation file: the usual training and eval set).
HUB = "hf"
HF_DATASET = "nvidia/cvdp-benchmark-dataset"
DEFAULT_PATTERN = "nonagentic_code_generation_no_commercial"


class CvdpDatasets:
    """CVDP's dataset specs: ``bundled``, ``hf[:PATTERN[@REVISION]]``, and CVDP JSONL paths."""

    name = CVDP
    reads_paths = True

    def names(self, text: str) -> bool:
        """Whether ``text`` is one of CVDP's words (``bundled``, ``hf``, ``hf:...``), not a path."""
        return text in (BUNDLED, HUB) or text.startswith(HUB + ":")

    def load(self, text: str, *, token: str | None, cache_dir: str | Path | None, **filters: Any) -> Dataset:
        """The problems ``text`` names; anything that is not one of its words is a JSONL path."""
        if text == BUNDLED:
            return load_records(bundled_records(), source=BUNDLED, **filters)
        if self.names(text):
            pattern, _, revision = text[len(HUB) + 1 :].partition("@")
            paths = hub.download(
                pattern or DEFAULT_PATTERN, repo_id=HF_DATASET, revision=revision or None, token=token, cache_dir=cache_dir,
            )
            datasets = [load_jsonl(p, **filters) for p in paths]
            return Dataset(
                problems=[p for d in datasets for p in d.problems],
                skipped=[s for d in datasets for s in d.skipped],
                source=text,
            )
        return load_jsonl(text, **filters)


#: CVDP is not one of the catalog's benchmarks (those beside it): it lists none.
BENCHMARKS: tuple[Benchmark, ...] = ()
#: CVDP's datasets, by benchmark name (:mod:`cvdp_gym.plugins`).
DATASET_SOURCES: tuple[DatasetSource, ...] = (CvdpDatasets(),)
