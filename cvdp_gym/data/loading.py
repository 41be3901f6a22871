"""Loading a dataset by its spec: the bundled problems, CVDP files on the Hugging Face hub, a
benchmark by name or by the path of its copy, or local CVDP JSONL files; the one entry
point that tells these apart. CVDP's own specs are its plug-in's ``data`` part
(:mod:`cvdp_gym.benchmarks.cvdp.data`), reached by name (``DATASET_SOURCES``)."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cvdp_gym.data.benchmark import DatasetSource
from cvdp_gym.data.benchmarks import detect, is_benchmark_spec, load_benchmark
from cvdp_gym.data.bundle import BUNDLED
from cvdp_gym.data.problems import Dataset, DatasetError, Problem
from cvdp_gym.plugins import PluginTable

__all__ = ["BUNDLED", "DATASET_SOURCES", "POSINGS", "load_dataset"]

#: The plug-ins' own dataset specs beside the catalog's benchmarks, by benchmark name (CVDP's).
DATASET_SOURCES: PluginTable[DatasetSource] = PluginTable("data", "DATASET_SOURCES", optional=True)
#: What a ``#TASK[?options]`` fragment poses a dataset's problems as, by task: the verification
#: tasks' one posing path (``cvdp_gym.tasks.posing.POSINGS``, a higher layer), read by name on
#: first use, never imported.
POSINGS: PluginTable[Callable[[list[Problem], str], list[Problem]]] = PluginTable(
    "posing", "POSINGS", shared=("cvdp_gym.tasks",)
)


def load_dataset(
    spec: str | Path | None = None,
    *,
    benchmark_dir: str | Path | None = None,
    ids: Iterable[str] | None = None,
    categories: Iterable[str] | None = None,
    difficulty: Iterable[str] | str | None = None,
    include_unsupported: bool = False,
    lenient: bool = False,
    token: str | None = None,
    cache_dir: str | Path | None = None,
) -> Dataset:
    """Load problems from ``spec``.

    ``None`` or ``"bundled"``: the problems this package ships. ``"hf"``, ``"hf:PATTERN"`` or
    ``"hf:PATTERN@REVISION"``: JSONL files of ``nvidia/cvdp-benchmark-dataset`` whose names
    contain PATTERN (downloaded once into the hub cache, ``cache_dir``; ``token`` for the hub).
    A benchmark: ``NAME[:TASK][?options]`` (``verilog-eval-v2:spec-to-rtl``, ``rtllm-v2``; its
    files found as :func:`cvdp_gym.data.benchmarks.locate` says, or in ``benchmark_dir``), or
    the path of a copy of one. Anything else: a local CVDP JSONL file or a directory of them.
    Filters (every source): ``ids``, ``categories``, ``difficulty``, ``include_unsupported``;
    ``lenient`` skips malformed lines or rows (with the reason in ``Dataset.skipped``).

    A ``#testbench`` or ``#assertion`` fragment on any spec (``"bundled#testbench"``,
    ``"verilog-eval-v2:spec-to-rtl#assertion"``) poses its problems with a reference design as
    that verification task, with the options ``task=`` and ``--task`` take
    (``#testbench?coverage=1&agentic=1``; both off by default): how the adapters, which name a
    dataset by a string, reach ``RTL-Testbench-v0``'s and ``RTL-Assertion-v0``'s problems
    (:mod:`cvdp_gym.tasks.posing`).
    """
    text, _, fragment = str(spec if spec is not None else BUNDLED).partition("#")
    if fragment:
        task = fragment.partition("?")[0]
        if task not in POSINGS:
            raise DatasetError(f"unknown task #{task} in {spec!r}; expected one of {', '.join(POSINGS)}")
        loaded = load_dataset(
            text, benchmark_dir=benchmark_dir, ids=ids, categories=categories, difficulty=difficulty,
            include_unsupported=include_unsupported, lenient=lenient, token=token, cache_dir=cache_dir,
        )
        try:
            posed = POSINGS[task](loaded.problems, fragment)
        except ValueError as exc:  # an option the fragment spells wrong
            raise DatasetError(f"#{fragment} in {spec!r}: {exc}") from None
        if not posed and loaded.problems:
            raise DatasetError(f"no problem of {text} has a reference design, so none can be posed as #{task}")
        if len(posed) == len(loaded.problems) and all(map(operator.is_, posed, loaded.problems)):
            return loaded  # #design: the problems as their benchmarks pose them, the source as it was
        return Dataset(posed, loaded.skipped, f"{loaded.source}#{fragment}")
    filters: dict[str, Any] = {
        "ids": ids, "categories": categories, "difficulty": difficulty,
        "include_unsupported": include_unsupported, "lenient": lenient,
    }
    if text != BUNDLED and (is_benchmark_spec(text) or detect(Path(text)) is not None):
        return load_benchmark(text, benchmark_dir=benchmark_dir, **filters)
    sources = list(DATASET_SOURCES.values())
    source = next((s for s in sources if s.names(text)), None) or next((s for s in sources if s.reads_paths), None)
    if source is None:
        raise DatasetError(f"{text}: no benchmark's layout and no dataset source reads it")
    return source.load(text, token=token, cache_dir=cache_dir, **filters)
