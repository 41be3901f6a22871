"""Every benchmark's datasets by name, and how a dataset spec or a folder finds them.

``load_benchmark("verilog-eval-v2:spec-to-rtl?shots=1")`` loads a benchmark by name (its
files located by :mod:`.sources`); ``detect(path)`` recognises a copy of one from its
layout (each benchmark's :meth:`~cvdp_gym.data.benchmark.Benchmark.find`, in the plug-ins'
order), so a folder or file can be named directly (``cvdp-gym eval path/to/verilog-eval``).
The benchmarks are the plug-ins' ``data`` parts (:mod:`cvdp_gym.plugins`), read on first use.

Training sets (:class:`.training.TrainingSet`) are benchmarks too, graded against their
references: a file or folder of one is recognised by its first row (after every other
benchmark's layout), and ``locate``/``fetch`` send them to their own file finding (the
user's files, an environment variable, a Hugging Face dataset) instead of a pinned commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from cvdp_gym.data.benchmark import Benchmark, parse_spec
from cvdp_gym.data.benchmarks import sources
from cvdp_gym.data.benchmarks.training import TrainingSet
from cvdp_gym.data.benchmarks.training_files import data_files, first_row
from cvdp_gym.data.problems import Dataset, Problem, Skipped
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
    "training_sets",
]

#: Every benchmark beside CVDP, by dataset name (the plug-ins' ``data`` parts).
BENCHMARKS: PluginTable[Benchmark] = PluginTable("data", "BENCHMARKS")


def training_sets() -> tuple[TrainingSet, ...]:
    """The training sets, in the order a file's first row is matched against their layouts."""
    return tuple(b for b in BENCHMARKS.values() if isinstance(b, TrainingSet))


def locate(bench: Benchmark, explicit: str | Path | None = None) -> Path:
    """Where ``bench``'s files are (:func:`.sources.locate`; a training set: its first data file's
    folder, or the file itself, as :meth:`.TrainingSet.locate_files` finds them)."""
    if isinstance(bench, TrainingSet):
        files = bench.locate_files(explicit, {})
        return files[0] if len(files) == 1 else files[0].parent
    return sources.locate(bench, explicit)


def fetch(
    bench: Benchmark, *, url: str | None = None, force: bool = False, log: Callable[[str], None] = print,
) -> Path:
    """Fetch a benchmark's pinned commit (:func:`.sources.fetch`), or a training set's default
    files from its Hugging Face dataset (``url`` and ``force`` do not apply to those)."""
    if isinstance(bench, TrainingSet):
        return bench.fetch_default(log)
    return sources.fetch(bench, url=url, force=force, log=log)


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
    for bench in BENCHMARKS.values():
        if isinstance(bench, TrainingSet):
            continue
        found = bench.find(path)
        if found is not None:
            return bench, *found
    training = _training_set_for(path)
    return (training, path, ()) if training is not None else None


def _training_set_for(path: Path) -> TrainingSet | None:
    """The training set whose layout the first row of ``path``'s first data file has."""
    files = data_files(path)
    if not files:
        return None
    record = first_row(files[0])
    found = next((s for s in training_sets() if s.matches(record)), None)
    if found is None and files[0].suffix == ".parquet":
        fields = ", ".join(sorted(map(str, record))) if isinstance(record, dict) else "no rows"
        layouts = "; ".join(f"{s.name}: {s.layout}" for s in training_sets())
        raise DatasetError(f"{files[0]}: no training-set layout has these columns ({fields}); known: {layouts}")
    return found


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
        root = None if isinstance(bench, TrainingSet) else locate(bench, benchmark_dir)
        tasks, options = parsed.tasks, dict(parsed.options)
    options = bench.options(options)
    skipped: list[Skipped] = []
    if isinstance(bench, TrainingSet):
        bench.check_tasks(tuple(tasks))
        files = data_files(root) if root is not None else bench.locate_files(benchmark_dir, options)
        problems, skipped = bench.load_files(files, options, lenient=lenient)
    else:
        assert root is not None
        problems = bench.load(root, tuple(tasks), options)
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
