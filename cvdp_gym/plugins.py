"""Benchmark plug-ins: the packages that each hold one benchmark, and their parts by layer.

A benchmark is one package (``cvdp_gym/benchmarks/<name>/`` for the built-in ones, any
importable package for a third party) whose modules are its parts, each read by the layer
that owns the concern; a part a benchmark does not need is simply absent:

=====================  =====================  ==============================================
module                 attribute              read by
=====================  =====================  ==============================================
``<pkg>.data``         ``BENCHMARKS``         datasets (:mod:`cvdp_gym.data.benchmarks`)
``<pkg>.data``         ``DATASET_SOURCES``    its own dataset specs (CVDP's, :mod:`cvdp_gym.data.loading`)
``<pkg>.answers``      ``EXTRACTORS``         answer extraction (:mod:`cvdp_gym.parsers`)
``<pkg>.flow``         ``FLOWS``              one answer's run (:mod:`cvdp_gym.harness.flows`)
``<pkg>.official``     ``OFFICIAL_FLOWS``     ``parity`` (:mod:`cvdp_gym.parity.benchmarks`)
``<pkg>.official``     ``OFFICIAL_RUNNERS``   ``parity``, a whole runner (CVDP's, :mod:`cvdp_gym.parity.cvdp`)
``<pkg>.report``       ``REPORTS``            report arithmetic (:mod:`cvdp_gym.eval`)
``<pkg>.report``       ``OFFICIAL_TABLES``    an official report table (CVDP's, :mod:`cvdp_gym.eval.report`)
``<pkg>.consistency`` ``FINDINGS``           ``check``'s static checks (:mod:`cvdp_gym.check.consistency`)
``published.json``     (a file)               its published figures (:mod:`cvdp_gym.eval.published`)
``<pkg>.stages``      ``STAGES``             grading stages after the built-in ones (:mod:`cvdp_gym.grading.stages`)
=====================  =====================  ==============================================

The built-in packages are listed in :data:`BUILT_IN`; a third party's package is named by a
Python entry point in the ``cvdp_gym.benchmarks`` group (its value: the package)::

    [project.entry-points."cvdp_gym.benchmarks"]
    my-bench = "my_lab.my_bench"

so a lab adds a private benchmark by installing a package, without forking. Parts are
imported when a layer first asks for them, by name: a lower layer never imports a
benchmark's higher parts (the loader of datasets does not import a benchmark's parity
runner), and nothing here imports any of them at import time. A part imports what it is
built with from its layer's kit, never the module whose table loads it (that would be an
import cycle, which ``scripts/import_graph.py`` finds): :mod:`cvdp_gym.data.benchmark`,
:mod:`cvdp_gym.parsers.answer_kit`, :mod:`cvdp_gym.harness.flows.flow_kit` (the ``Flow``
protocol), :mod:`cvdp_gym.parity.benchmarks.sandboxed`, :mod:`cvdp_gym.eval.report_kit`,
:mod:`cvdp_gym.check.consistency_kit`.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from cvdp_gym.errors import ConfigError

__all__ = ["BUILT_IN", "ENTRY_POINT_GROUP", "PluginTable", "packages", "parts"]

#: The benchmark packages that ship with cvdp-gym, in the order their datasets are listed
#: and a folder is matched against their layouts (the training sets, matched by a file's
#: first row, after them). CVDP last: its JSONL files are what a path is when no other
#: layout matched it (VerilogEval v1's ``.jsonl`` files, a training set's first row).
BUILT_IN: tuple[str, ...] = (
    "cvdp_gym.benchmarks.verilog_eval_v2",
    "cvdp_gym.benchmarks.verilog_eval_v1",
    "cvdp_gym.benchmarks.rtllm",
    "cvdp_gym.benchmarks.chipbench",
    "cvdp_gym.benchmarks.training",
    "cvdp_gym.benchmarks.cvdp",
)
#: The entry-point group a third-party benchmark package registers in.
ENTRY_POINT_GROUP = "cvdp_gym.benchmarks"

T = TypeVar("T")


@cache
def packages() -> tuple[str, ...]:
    """The built-in benchmark packages, then every installed third-party one (by entry-point name)."""
    found = list(BUILT_IN)
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        if point.module not in found:
            found.append(point.module)
    return tuple(found)


def parts(part: str, shared: tuple[str, ...] = ()) -> list[Any]:
    """Every benchmark package's ``part`` module (``data``, ``flow``, ...), where it has one.

    ``shared``: the project's own packages that add entries to the same table before the
    benchmarks (the equivalence grader's and the verification tasks' flows), read the same way.

    A built-in part that fails to import is a bug and raises; a third-party one is skipped
    with a warning naming the package and the error, so one broken plug-in cannot stop the
    others (or a long run that does not use it)."""
    modules = []
    for package in (*shared, *packages()):
        name = f"{package}.{part}"
        try:
            if importlib.util.find_spec(name) is None:  # a part this benchmark does not need
                continue
            modules.append(importlib.import_module(name))
        except Exception as exc:  # a third party's code: any error it raises on import
            if package in BUILT_IN or package in shared:
                raise
            warnings.warn(f"benchmark plug-in {package}: cannot import {name}: {exc}", stacklevel=2)
    return modules


class PluginTable(Mapping[str, T], Generic[T]):
    """The entries every plug-in's ``part`` module lists in ``attribute``, by name, read on first use.

    ``attribute`` holds a sequence of objects (keyed by ``key``, their ``name`` by default)
    or a mapping of name to object. Two plug-ins claiming one name is a ``ConfigError`` naming
    both, so a third party cannot silently replace a built-in benchmark. ``shared`` names the
    project's own packages whose ``part`` module adds entries first, read by name like a
    plug-in's (the ``reference`` flow of :mod:`cvdp_gym.equivalence`, the verification tasks'
    flows and their posing of a dataset's ``#TASK`` fragment), so a lower layer never imports a
    higher one to list them. ``optional``: a table only some plug-ins fill (CVDP's official
    report table, its official runner), so a ``part`` module that does not list ``attribute``
    adds nothing instead of being an error."""

    def __init__(
        self, part: str, attribute: str, *, key: Callable[[T], str] = lambda x: x.name,  # type: ignore[attr-defined]
        shared: tuple[str, ...] = (), optional: bool = False,
    ) -> None:
        self._part, self._attribute, self._key, self.shared = part, attribute, key, shared
        self._optional = optional
        self._table: dict[str, T] | None = None

    def _load(self) -> dict[str, T]:
        if self._table is None:
            table: dict[str, T] = {}
            owners: dict[str, str] = {}
            for module in parts(self._part, self.shared):
                listed = getattr(module, self._attribute, None)
                if listed is None and self._optional:
                    continue
                if listed is None:
                    raise ConfigError(f"{module.__name__} has no {self._attribute}")
                items = listed.items() if isinstance(listed, Mapping) else ((self._key(x), x) for x in listed)
                for name, item in items:
                    if name in table:
                        raise ConfigError(f"{self._attribute} {name!r} is claimed by both {owners[name]} and {module.__name__}")
                    table[name], owners[name] = item, module.__name__
            self._table = table
        return self._table

    def __getitem__(self, name: str) -> T:
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self) -> str:
        return f"PluginTable({self._part}.{self._attribute}: {', '.join(self._load())})"
