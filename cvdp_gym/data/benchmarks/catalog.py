"""Every benchmark's datasets by name, and how a dataset spec or a folder finds them.

``load_benchmark("verilog-eval-v2:spec-to-rtl?shots=1")`` loads a benchmark by name (its
files located by :mod:`.sources`); ``detect(path)`` recognises a copy of one from its
layout (each benchmark's :meth:`~cvdp_gym.data.benchmark.Benchmark.find`, in the plug-ins'
order), so a folder or file can be named directly (``cvdp-gym eval path/to/verilog-eval``).
The benchmarks are the plug-ins' ``data`` parts (:mod:`cvdp_gym.plugins`), read on first use.

Training sets (the ``training`` plug-in) are benchmarks too, graded against their
references: a file or folder of one is recognised by its first row, after every other
benchmark's layout (``Benchmark.found_by_first_row``), and ``locate``/``fetch`` let such a
benchmark find its own files (``Benchmark.own_copy``, ``fetch_own``: the user's files, an
environment variable, a Hugging Face dataset) instead of a pinned commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from cvdp_gym.data.benchmark import Benchmark, parse_spec
from cvdp_gym.data.benchmarks import sources
from cvdp_gym.data.problems import Dataset, Problem
from cvdp_gym.errors import DatasetError
from cvdp_gym.plugins import PluginTable

__all__ = [
    "BENCHMARKS",
    "benchmark",
    "detect",
    "fetch",
    "is_benchmark_spec",
    "load_benchmark",
    "locate",
]

#: Every benchmark beside CVDP, by dataset name (the plug-ins' ``data`` parts).
BENCHMARKS: PluginTable[Benchmark] = PluginTable("data", "BENCHMARKS")


def locate(bench: Benchmark, explicit: str | Path | None = None) -> Path:
    """Where ``bench``'s files are: where it finds them itself (:meth:`.Benchmark.own_copy`: a
    training set's data file or their folder), else its pinned copy (:func:`.sources.locate`)."""
    own = bench.own_copy(explicit)
    return own if own is not None else sources.locate(bench, explicit)


def fetch(
    bench: Benchmark, *, url: str | None = None, force: bool = False, log: Callable[[str], None] = print,
) -> Path:
    """Fetch a benchmark's files: itself (:meth:`.Benchmark.fetch_own`: a training set's default
    files from its Hugging Face dataset; ``url`` and ``force`` do not apply), else its pinned
    commit (:func:`.sources.fetch`)."""
    own = bench.fetch_own(log)
    return own if own is not None else sources.fetch(bench, url=url, force=force, log=log)


def benchmark(name: str) -> Benchmark:
    """The benchmark called ``name`` (``DatasetError`` naming the known ones otherwise)."""
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise DatasetError(f"unknown benchmark {name!r} (known: {', '.join(BENCHMARKS)})") from None


def is_benchmark_spec(text: str) -> bool:
    """``text`` names a benchmark (``verilog-eval-v2``, ``rtllm-v2:...``), not a path."""
    return parse_spec(text).name in BENCHMARKS and not Path(text).exists()


def detect(path: Path) -> tuple[Benchmark, Path, tuple[str, ...]] | None:
    """The benchmark a folder or file is a copy of: ``(benchmark, its root, tasks)``, or None.

    Each benchmark's own layout first (a VerilogEval v2 clone or one ``dataset_<task>``
    folder, a VerilogEval v1 clone or one of its ``.jsonl`` files, an RTLLM clone: nested
    design folders v2.0, flat v1.1, ...); else a training set's file or folder, by its first
    row (``.jsonl``, ``.json``, ``.parquet``). A Parquet file is read by nothing else: one of
    no known layout, or unreadable, raises a one-line ``DatasetError`` (no pyarrow:
    ``MissingDependencyError``).
    """
    in_order = sorted(BENCHMARKS.values(), key=lambda b: b.found_by_first_row)  # stable: layouts, then rows
    for bench in in_order:
        found = bench.find(path)
        if found is not None:
            return bench, *found
    return None


def load_benchmark(
    spec: str | Path,
    *,
    benchmark_dir: str | Path | None = None,
    ids: Iterable[str] | None = None,
    categories: Iterable[str] | None = None,
    difficulty: Iterable[str] | str | None = None,
    include_unsupported: bool = False,
    lenient: bool = False,
) -> Dataset:
    """A benchmark's problems, by spec (``NAME[:TASK][?options]``) or by the path of a copy.

    ``ids`` keeps problems by id or by the benchmark's own name (``Prob001_zero``);
    ``categories`` by task or category; ``difficulty`` matches nothing (these benchmarks
    grade none). ``include_unsupported`` is accepted for symmetry with CVDP files (nothing
    here is unsupported); ``lenient`` skips a training set's bad rows (with the reason in
    ``Dataset.skipped``) instead of failing on the first.
    """
    del include_unsupported
    text = str(spec)
    found = detect(Path(text)) if not is_benchmark_spec(text) else None
    if found is not None:
        bench, root, tasks = found
        options: dict[str, str] = {}
    else:
        parsed = parse_spec(text)
        bench = benchmark(parsed.name)
        root = None if bench.found_by_first_row else locate(bench, benchmark_dir)
        tasks, options = parsed.tasks, dict(parsed.options)
    options = bench.options(options)
    problems, skipped = bench.load_problems(root, tuple(tasks), options, explicit=benchmark_dir, lenient=lenient)
    problems = _filtered(problems, ids, categories, difficulty, text)
    return Dataset(problems=problems, skipped=skipped, source=text)


def _filtered(
    problems: list[Problem], ids: Iterable[str] | None, categories: Iterable[str] | None,
    difficulty: Iterable[str] | str | None, source: str,
) -> list[Problem]:
    if ids:
        wanted = set(ids)
        problems = [p for p in problems if p.id in wanted or p.extra.get("name") in wanted]
        matched = {p.id for p in problems} | {p.extra.get("name") for p in problems}
        missing = wanted - matched
        if missing:
            raise DatasetError(f"{source}: no problem with id {', '.join(sorted(missing))}")
    if categories:
        wanted = {str(c).strip().lower() for c in categories}
        problems = [p for p in problems if p.task.lower() in wanted or p.category.lower() in wanted]
    if difficulty:
        problems = []
    return problems
