"""Training sets as datasets: a specification and a reference design per item, graded by
comparing an answer with the reference (the ``reference`` grader, issue 29).

Contract. A training set is a ``Benchmark`` (``TrainingSet``) whose problems have
``grader="reference"``, ``toolchain="cvdp-sim"``, ``task=""``, no harness and no context,
one target ``<top>.sv`` whose reference is the item's code (``top``: the set's own field,
else the module no other module of the reference instantiates, the last one if several),
``prompt`` = the specification (an interface the set gives, when the specification does not
already hold it, is appended in a ``verilog`` block), ``system_message`` = the set's own
or ``SYSTEM_MESSAGE``, and ``extra`` = {``name``, ``top``, ``set``, ``checked_reference``,
``equivalence``, [``interface``], [``metadata``], layout-specific facts}. Ids are
``<set>.<name>``; a load of several files prefixes each name with its file's stem.

A dataset spec names a set and options: ``reference-set?path=items.jsonl&mode=simulation``.
Options: where the files are (``path``: a file or folder, like ``benchmark_dir``; ``hf``:
a Hugging Face dataset id, bare for the set's default; ``file``: which of its files;
``revision``), ``agentic=1`` (the episode form), and the grader's settings, validated here
and stored in ``extra["equivalence"]`` only when given (absent keys: the grader's
defaults): ``mode=both|simulation|formal|codev-r1|verithoughts``, ``cycles=N``, ``depth=N``, ``min_depth=N``
(at most ``depth``, whose default is 20: a lower ``depth`` alone is refused), ``x=dontcare|strict``,
``simulator=icarus|verilator``, ``formal_timeout=S``, ``seed=N``. Where no file is named the
set's environment variable is read, then it fails with one line saying how to give one.

A row that cannot be an item (no specification, no reference, a reference with no module,
a named top the reference does not define, a repeated id) is a one-line ``DatasetError``
naming the file and row, or with ``lenient`` a ``Skipped`` entry with the reason.

The layouts (the generic one, ``reference-set``, and the published ones) are in
:mod:`.data`; the rows of their files are read by :mod:`.rows`.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from cvdp_gym.benchmarks.training.rows import DATA_SUFFIXES, Row, data_files, first_row, iter_rows
from cvdp_gym.data.benchmark import Benchmark, Pin, agentic_variant, flag
from cvdp_gym.data.problems import CVDP_SIM, REFERENCE_GRADER, Problem, Skipped
from cvdp_gym.errors import CvdpGymError, DatasetError

__all__ = [
    "EQUIVALENCE_OPTIONS",
    "SYSTEM_MESSAGE",
    "TrainingItem",
    "TrainingSet",
    "equivalence_settings",
    "item_name",
    "kind_of",
    "module_bodies",
    "plain_data",
    "text_field",
    "top_module",
    "training_sets",
]

SYSTEM_MESSAGE = (
    "You are a Verilog RTL designer. Write the complete design the specification asks for, with exactly the "
    "module name and ports it gives, and answer with the code in one ```verilog block."
)
#: Options that say where a set's files are, or how its problems are posed (not the grader's).
SOURCE_OPTIONS = ("path", "hf", "file", "revision", "agentic")
#: The grader's settings: options taking one of a few words, whole numbers, and seconds.
_CHOICES = {"mode": ("both", "simulation", "formal", "codev-r1", "verithoughts"), "x": ("dontcare", "strict"), "simulator": ("icarus", "verilator")}
#: (least, most): the bounds the reference grader itself enforces
#: (``cvdp_gym.equivalence.settings``), so a bad value fails at load, not per answer.
_WHOLE = {"cycles": (1, 5_000_000), "depth": (1, 1000), "min_depth": (1, 1000), "seed": (0, 2**63 - 1)}
#: The grader's default ``depth`` and ``min_depth`` (the shallowest bound that counts).
_DEFAULT_DEPTH = _DEFAULT_MIN_DEPTH = 20
_SECONDS = {"formal_timeout": (1.0, 3600.0)}
EQUIVALENCE_OPTIONS = (*_CHOICES, *_WHOLE, *_SECONDS)
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.S)  # an unclosed comment ends the text
_MODULE = re.compile(r"\b(?:module|macromodule)\s+([A-Za-z_]\w*)")
_ENDMODULE = re.compile(r"\bendmodule\b")


def equivalence_settings(options: Mapping[str, str], where: str) -> dict[str, Any]:
    """The grader's settings among ``options``, typed; a bad value is a one-line ``DatasetError``."""
    settings: dict[str, Any] = {}
    for key, words in _CHOICES.items():
        if key in options:
            if options[key] not in words:
                raise DatasetError(f"{where}: option {key}={options[key]!r}: expected {' or '.join(words)}")
            settings[key] = options[key]
    for key, (least, most) in _WHOLE.items():
        if key in options:
            value = options[key].strip()
            if not (value.isascii() and value.isdigit() and len(value) <= 20) or not least <= int(value) <= most:
                expected = f"expected a whole number from {least} to {most}"
                raise DatasetError(f"{where}: option {key}={options[key]!r}: {expected}")
            settings[key] = int(value)
    for key, (low, high) in _SECONDS.items():
        if key in options:
            try:
                seconds = float(options[key])
            except ValueError:
                seconds = float("nan")
            if not low <= seconds <= high:  # nan fails too
                raise DatasetError(f"{where}: option {key}={options[key]!r}: expected seconds from {low:g} to {high:g}")
            settings[key] = seconds
    depth, min_depth = settings.get("depth", _DEFAULT_DEPTH), settings.get("min_depth", _DEFAULT_MIN_DEPTH)
    if min_depth > depth:
        raise DatasetError(
            f"{where}: option min_depth={min_depth} is deeper than depth={depth}: no formal bound could count "
            f"(give min_depth={depth} too to accept bounds of {depth} steps)"
        )
    return settings


def plain_data(value: Any) -> Any:
    """``value`` as JSON data: sets and tuples as (sorted) lists, bytes as text, other
    non-JSON values (a Parquet timestamp) as their text."""
    if isinstance(value, set | frozenset):
        return sorted((plain_data(v) for v in value), key=repr)
    if isinstance(value, list | tuple):
        return [plain_data(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain_data(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


def module_bodies(code: str) -> dict[str, str]:
    """Each module ``code`` defines (comments ignored), in order, with its text up to ``endmodule``."""
    text = _COMMENTS.sub(" ", code)
    bodies: dict[str, str] = {}
    for match in _MODULE.finditer(text):
        end = _ENDMODULE.search(text, match.end())
        bodies.setdefault(match.group(1), text[match.end() : end.start() if end else len(text)])
    return bodies


def _instantiates(body: str, name: str) -> bool:
    """``body`` has ``name [#(...)] instance[range] (``."""
    pattern = rf"(?<![\w$.`]){re.escape(name)}\s*(?:#\s*\(|[A-Za-z_]\w*\s*(?:\[[^\]]*\]\s*)?\()"
    return re.search(pattern, body) is not None


def top_module(code: str) -> str | None:
    """The module no other module of ``code`` instantiates (the last such one if several;
    the last module if they all are), or None where ``code`` defines none."""
    bodies = module_bodies(code)
    used = {name for name in bodies for other, body in bodies.items() if other != name and _instantiates(body, name)}
    tops = [name for name in bodies if name not in used] or list(bodies)
    return tops[-1] if tops else None


@dataclass
class TrainingItem:
    """One row as a layout reads it, before it becomes a ``Problem``."""

    name: str
    spec: str
    reference: str
    top: str | None = None
    interface: str | None = None
    system_message: str | None = None
    checked_reference: bool = True
    categories: tuple[str, ...] = ()
    metadata: dict[str, Any] | None = None
    #: Layout-specific facts for ``Problem.extra`` (plain JSON data).
    extra: dict[str, Any] = field(default_factory=dict)


def text_field(row: Row, value: Any, what: str) -> str:
    """``value`` as non-blank text, or a ``DatasetError`` naming the row and the field."""
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{row.location}: no {what} (expected text, got {kind_of(value)})")
    return value


def item_name(row: Row, value: Any) -> str:
    """An item's own id as a name: text or a whole number, on one line."""
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise DatasetError(f"{row.location}: no id (expected text or a number, got {kind_of(value)})")
    name = str(value).strip()
    if any(not c.isprintable() for c in name):
        raise DatasetError(f"{row.location}: id {name!r} holds a line break or control character")
    return name


def kind_of(value: Any) -> str:
    """How a message names a value that is not what a field needs."""
    if value is None:
        return "nothing"
    return "blank text" if isinstance(value, str) else f"{type(value).__name__} {value!r}"[:60]


#: Every training set made, in the order made: the built-in ones and a third party's are made
#: when the data catalog reads their plug-ins' ``data`` parts (so no import of the catalog here).
_MADE: list[TrainingSet] = []


def training_sets() -> tuple[TrainingSet, ...]:
    """The training sets the data catalog has read (the built-in ones and a third party's, the
    last made of each name), in the order a file's first row is matched against their layouts."""
    return tuple({s.name: s for s in _MADE}.values())


class TrainingSet(Benchmark):
    """A training set's data plug-in: its layout (``matches``, ``item``) and where its files come from."""

    grader = REFERENCE_GRADER
    toolchain = CVDP_SIM
    tasks = ()
    found_by_first_row = True

    def __init__(self) -> None:
        _MADE.append(self)
    publishes_figures = False
    option_defaults: ClassVar[dict[str, str]] = {
        **{key: "" for key in SOURCE_OPTIONS}, "agentic": "0", **{key: "" for key in EQUIVALENCE_OPTIONS},
    }
    #: The fields a row of this layout has (for messages).
    layout: ClassVar[str]
    #: The Hugging Face dataset ``?hf`` downloads when it names none, and its file.
    hub_repo: ClassVar[str | None] = None
    hub_file: ClassVar[str | None] = None
    #: Where the set is published (and its files may be downloaded by hand).
    home: ClassVar[str]
    #: Why an item's reference may be unchecked (``checked_reference=False``; ``check`` says it).
    unchecked: ClassVar[str] = "the file marks them checked_reference: false"

    @property
    def pin(self) -> Pin:  # type: ignore[override]
        """Where the set is published: its files are the user's, not a pinned commit."""
        return Pin(self.home, "unpinned", "", "main")

    def matches(self, record: Any) -> bool:
        """``record`` (a file's first row) has this layout."""
        raise NotImplementedError

    def item(self, row: Row) -> TrainingItem:
        """The item a row holds, or a one-line ``DatasetError`` naming the row."""
        raise NotImplementedError

    def options(self, given: Mapping[str, str]) -> dict[str, str]:
        """The options given (defaults are the grader's); an unknown one is a ``DatasetError``."""
        unknown = sorted(set(given) - set(self.option_defaults))
        if unknown:
            known = ", ".join(self.option_defaults)
            raise DatasetError(f"{self.name}: unknown option {', '.join(unknown)} (options: {known})")
        equivalence_settings(given, self.name)
        flag(given, "agentic")
        return dict(given)

    def holds(self, path: Path) -> bool:
        files = data_files(path)
        try:
            return bool(files) and self.matches(first_row(files[0]))
        except CvdpGymError:
            return False

    def find(self, path: Path) -> tuple[Path, tuple[str, ...]] | None:
        """``(path, ())`` when the first row of ``path``'s first data file (``path`` a file or a
        folder) has this set's layout. A Parquet file is read by nothing else: one that no
        training set's layout matches, or that cannot be read, is a one-line ``DatasetError``
        (no pyarrow: ``MissingDependencyError``)."""
        files = data_files(path)
        if not files:
            return None
        record = first_row(files[0])
        if self.matches(record):
            return path, ()
        sets = training_sets()
        if files[0].suffix == ".parquet" and not any(s.matches(record) for s in sets):
            fields = ", ".join(sorted(map(str, record))) if isinstance(record, dict) else "no rows"
            layouts = "; ".join(f"{s.name}: {s.layout}" for s in sets)
            raise DatasetError(f"{files[0]}: no training-set layout has these columns ({fields}); known: {layouts}")
        return None

    def files(self, root: Path) -> list[Path]:
        return data_files(root)

    def own_copy(self, explicit: str | Path | None) -> Path:
        """Its first data file's folder, or the file itself when it is the only one, as
        :meth:`locate_files` finds them (no options: ``explicit``, else the environment variable)."""
        files = self.locate_files(explicit, {})
        return files[0] if len(files) == 1 else files[0].parent

    def fetch_own(self, log: Callable[[str], None]) -> Path:
        """Its default files from its Hugging Face dataset (:meth:`fetch_default`)."""
        return self.fetch_default(log)

    def load_problems(
        self, root: Path | None, tasks: tuple[str, ...], options: Mapping[str, str], *,
        explicit: str | Path | None = None, lenient: bool = False,
    ) -> tuple[list[Problem], list[Skipped]]:
        """The rows of ``root``'s data files, or (None) of the files the options or ``explicit``
        name (:meth:`locate_files`), as Problems; ``lenient``: bad rows skipped, with why."""
        self.check_tasks(tasks)
        files = data_files(root) if root is not None else self.locate_files(explicit, options)
        return self.load_files(files, options, lenient=lenient)

    def how_to_get(self) -> str:
        """The one line that says how to give this set's files."""
        hub = f"add ?hf to download {self.hub_repo}" if self.hub_repo else "add ?hf=OWNER/NAME&file=FILE"
        return (
            f"pass --benchmark-dir FILE_OR_FOLDER (or ?path=...), set {self.env_var}, or {hub} "
            f"(published at {self.home})"
        )

    def locate_files(self, explicit: str | Path | None, options: Mapping[str, str]) -> list[Path]:
        """The data files to load: ``?path``, else ``explicit`` (``benchmark_dir``), else a
        download (``?hf``), else the environment variable; a one-line ``DatasetError`` otherwise."""
        given = (("?path", options.get("path")), ("--benchmark-dir", explicit))
        named = [(where, value) for where, value in given if value]
        if named:
            return self._local(*named[0])
        if "hf" in options:
            return self.download(options)
        if os.environ.get(self.env_var):
            return self._local(self.env_var, os.environ[self.env_var])
        raise DatasetError(f"{self.title}: no files given: {self.how_to_get()}")

    def _local(self, where: str, value: str | Path) -> list[Path]:
        path = Path(value).expanduser()
        if not path.exists():
            raise DatasetError(f"{where} {path}: no such file or folder ({self.title}: {self.how_to_get()})")
        files = data_files(path)
        if not files:
            raise DatasetError(f"{where} {path}: no {', '.join(DATA_SUFFIXES)} file there")
        return files

    def download(self, options: Mapping[str, str]) -> list[Path]:
        """The files of the Hugging Face dataset ``?hf`` names (its default when bare), from the hub cache."""
        from cvdp_gym.data import hub

        repo = options.get("hf") or self.hub_repo
        if not repo:
            raise DatasetError(f"{self.name}: ?hf needs a dataset id (hf=OWNER/NAME): {self.title} has no default one")
        if not _HUB_ID.match(repo):
            raise DatasetError(f"{self.name}: option hf={repo!r}: expected a Hugging Face dataset id OWNER/NAME")
        file = options.get("file") or (self.hub_file if repo == self.hub_repo else None) or ""
        return hub.download(file, repo_id=repo, revision=options.get("revision") or None, suffixes=DATA_SUFFIXES)

    def fetch_default(self, log: Callable[[str], None] = print) -> Path:
        """Download the set's default files into the hub cache (``cvdp-gym benchmarks fetch``)."""
        if not self.hub_repo:
            raise DatasetError(f"{self.title} has no download here: {self.how_to_get()}")
        paths = self.download({"hf": self.hub_repo})
        for path in paths:
            log(f"{self.title}: {path} (load it with `{self.name}?hf`, or pass this path)")
        return paths[0]

    def load(self, root: Path, tasks: tuple[str, ...], options: Mapping[str, str]) -> list[Problem]:
        self.check_tasks(tasks)
        return self.load_files(data_files(root), options)[0]

    def load_files(
        self, files: list[Path], options: Mapping[str, str], *, lenient: bool = False,
    ) -> tuple[list[Problem], list[Skipped]]:
        """Every row of ``files`` as a Problem, and (``lenient``) the rows left out with why."""
        settings = equivalence_settings(options, self.name)
        agentic = flag(options, "agentic")
        problems: list[Problem] = []
        skipped: list[Skipped] = []
        seen: dict[str, str] = {}

        def leave_out(error: DatasetError, name: str = "?", where: str = "") -> None:
            if not lenient:
                raise error
            warnings.warn(str(error), stacklevel=3)
            skipped.append(Skipped(name, f"malformed: {error}", where))

        for path in files:
            for row in iter_rows(path, on_error=(lambda e, p=path: leave_out(e, where=str(p))) if lenient else None):
                try:
                    try:
                        problem = self.problem(self.item(row), row, settings, prefixed=len(files) > 1)
                    except RecursionError:
                        raise DatasetError(f"{row.location}: nested too deeply") from None
                    if problem.id in seen:
                        raise DatasetError(f"{row.location}: id {problem.extra['name']!r} repeats {seen[problem.id]}")
                except DatasetError as exc:
                    guess = row.value.get("id") if isinstance(row.value, dict) else None
                    leave_out(exc, str(guess) if isinstance(guess, str | int) else "?", row.location)
                    continue
                seen[problem.id] = row.location
                problems.append(agentic_variant(problem, problem.prompt) if agentic else problem)
        return problems, skipped

    def problem(self, item: TrainingItem, row: Row, settings: Mapping[str, Any], *, prefixed: bool = False) -> Problem:
        """``item`` as a Problem (see the module doc)."""
        modules = module_bodies(item.reference)
        if not modules:
            raise DatasetError(f"{row.location}: the reference holds no module")
        if item.top is not None and item.top not in modules:
            raise DatasetError(
                f"{row.location}: top {item.top!r} is not a module of the reference (it defines {', '.join(modules)})"
            )
        top = item.top or top_module(item.reference)
        assert top is not None
        name = f"{row.path.stem}.{item.name}" if prefixed else item.name
        target = f"{top}.sv"
        prompt = item.spec
        if item.interface and item.interface.strip() not in item.spec:
            prompt = f"{item.spec.rstrip()}\n\nInterface:\n```verilog\n{item.interface.strip()}\n```\n"
        extra: dict[str, Any] = {
            "name": name, "top": top, "set": self.name, "checked_reference": item.checked_reference,
            "equivalence": dict(settings),
        }
        if item.interface:
            extra["interface"] = item.interface
        if item.metadata:
            extra["metadata"] = item.metadata
        extra.update(item.extra)
        return Problem(
            id=f"{self.name}.{name}", categories=item.categories, agentic=False, prompt=prompt, context={},
            targets=(target,), harness={}, system_message=item.system_message or SYSTEM_MESSAGE,
            reference={target: item.reference}, source=row.location, benchmark=self.name, task="",
            grader=REFERENCE_GRADER, toolchain=CVDP_SIM, extra=extra,
        )
