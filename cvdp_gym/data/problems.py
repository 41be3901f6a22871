"""Problems: one typed record for every benchmark, and CVDP's two official JSONL shapes.

A ``Problem`` names its **benchmark** (``cvdp``, ``verilog-eval-v2``, ...) and task, its
**grader** (how answers are scored: a CVDP cocotb ``harness``, ``bleu``, ``judge``, or a
benchmark's own test-bench flow such as ``verilog-eval-v2``) and the **toolchain** its
simulations need (``cvdp-sim``: the official CVDP image's tools; ``icarus12``). The other
benchmarks' files become Problems in :mod:`cvdp_gym.data.benchmarks`; the CVDP records here.

Non-agentic records: ``{id, categories, input: {prompt, context}, output: {response,
context}, harness: {files}}``. Agentic records: ``{id, categories, system_message, prompt,
context, patch, harness}``. Both become a ``Problem`` with the files the model is given
(``context``), the files its answer must provide (``targets``), the harness files, and a
reference solution where the record carries one.

Two variants the harness problems do not have: comprehension problems (cid006/cid008 scored
by BLEU/ROUGE, cid009/cid010 by an LLM judge) carry their reference answer as text in
``output.response`` (``reference_answer``), and repository-context ("heavy") agentic
problems name a git repository and commit (``context: {"repo", "commit"}``, ``repo``)
instead of giving their files.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cvdp_gym.data.patch import PatchError, apply_patch
from cvdp_gym.errors import DatasetError, RecordError, UnknownProblemError
from cvdp_gym.jsonl import JsonlError, iter_json, one_line

#: Categories whose harnesses need Cadence Xcelium (testbench and assertion generation).
COMMERCIAL_CATEGORIES = frozenset({"cid012", "cid013", "cid014"})
#: Markers of harnesses that need a commercial EDA image or a license network.
COMMERCIAL_MARKERS = ("__VERIF_EDA_IMAGE__", "__LICENSE_NETWORK__")
#: Comprehension categories, scored by BLEU/ROUGE or an LLM judge rather than a harness.
COMPREHENSION_CATEGORIES = frozenset({"cid006", "cid008", "cid009", "cid010"})
#: How a problem's answers are scored: a cocotb harness, BLEU/ROUGE against a reference
#: answer (cid006, cid008), or an LLM judge (cid009, cid010).
SCORING_HARNESS, SCORING_BLEU, SCORING_JUDGE = "harness", "bleu", "judge"
SCORING_BY_CATEGORY = {"cid006": SCORING_BLEU, "cid008": SCORING_BLEU, "cid009": SCORING_JUDGE, "cid010": SCORING_JUDGE}
#: The grader that scores an answer by its equivalence with the problem's reference design
#: (the reference flow, :mod:`cvdp_gym.equivalence.flow`): the training sets' grader, the
#: verification tasks' designs' and the verdict option's second check; named once, here.
REFERENCE_GRADER = "reference"
#: The benchmark of CVDP records, and the simulator toolchain its harnesses need (the
#: root as the official ``nvidia/cvdp-sim`` image; ``cvdp_gym.toolchain.SIMULATORS``).
CVDP, CVDP_SIM = "cvdp", "cvdp-sim"
DIFFICULTIES = ("easy", "medium", "hard")


def difficulty_order(name: str) -> tuple[int, str]:
    """Sort key of a difficulty: easy, medium, hard, then anything else by name."""
    return (DIFFICULTIES.index(name) if name in DIFFICULTIES else len(DIFFICULTIES), name)


@dataclass(frozen=True)
class RepoRef:
    """The git repository and commit a repository-context problem starts from."""

    name: str
    commit: str


@dataclass(frozen=True)
class Problem:
    """One CVDP problem, normalised from either record shape."""

    id: str
    categories: tuple[str, ...]
    agentic: bool
    prompt: str
    context: dict[str, str]
    targets: tuple[str, ...]
    harness: dict[str, str]
    system_message: str | None = None
    reference: dict[str, str] | None = None
    patch: dict[str, str] = field(default_factory=dict)
    source: str = ""
    unsupported: str | None = None
    #: The reference answer of a comprehension problem (``output.response``), if any.
    reference_answer: str | None = None
    #: The repository a repository-context problem starts from (its ``context`` is empty).
    repo: RepoRef | None = None
    #: The benchmark it comes from (``cvdp``, ``verilog-eval-v2``, ``verilog-eval-v1``,
    #: ``rtllm-v2``, ``rtllm-v1.1``) and the benchmark's task or subset (``spec-to-rtl``...).
    benchmark: str = CVDP
    task: str = ""
    #: How answers are scored: ``harness`` (CVDP's cocotb services), ``bleu``, ``judge``, or a
    #: benchmark's own test-bench flow (``verilog-eval-v2``, ``verilog-eval-v1``, ``rtllm``;
    #: ``cvdp_gym.harness.flows``). Empty: from the category, as CVDP records say.
    grader: str = ""
    #: The simulator toolchain its runs need (``cvdp-sim`` or ``icarus12``).
    toolchain: str = CVDP_SIM
    #: A defect of the benchmark itself (its own reference fails its own test bench, its
    #: files disagree): answers are still graded and counted in the official figure as the
    #: benchmark's script counts them, but a failure is never the answer's (``excluded``).
    defect: str | None = None
    #: Benchmark-specific facts the grader and reports need (a test bench's top module,
    #: VerilogEval's interface text, RTLLM's data files...): plain JSON-friendly data.
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.grader:
            object.__setattr__(self, "grader", SCORING_BY_CATEGORY.get(self.category, SCORING_HARNESS))

    @property
    def category(self) -> str:
        return self.categories[0] if self.categories else ""

    @property
    def scoring(self) -> str:
        """``harness`` (answers are code, simulated), ``bleu`` (cid006/cid008) or ``judge`` (cid009/cid010)."""
        return self.grader if self.grader in (SCORING_BLEU, SCORING_JUDGE) else SCORING_HARNESS

    @property
    def flow(self) -> str | None:
        """The benchmark test-bench flow that grades it (``harness.flows``), or None for CVDP."""
        return None if self.grader in (SCORING_HARNESS, SCORING_BLEU, SCORING_JUDGE) else self.grader

    @property
    def difficulty(self) -> str | None:
        return next((c for c in self.categories[1:] if c in DIFFICULTIES), None)

    @property
    def has_harness(self) -> bool:
        """It has something to simulate: a CVDP ``docker-compose.yml`` or a test-bench flow's files."""
        return self.flow is not None or any(p.endswith("docker-compose.yml") for p in self.harness)

    def metadata(self) -> dict[str, Any]:
        """A JSON-friendly summary (what environments expose as ``info["problem"]``)."""
        return {
            "id": self.id,
            "category": self.category,
            "difficulty": self.difficulty,
            "agentic": self.agentic,
            "targets": list(self.targets),
            "context_files": sorted(self.context),
            "has_reference": self.reference is not None,
            "unsupported": self.unsupported,
            "scoring": self.scoring,
            "source": self.source,
            "benchmark": self.benchmark,
            "task": self.task,
            "grader": self.grader,
            "toolchain": self.toolchain,
            "defect": self.defect,
        }


def _string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecordError(f"{what} must be an object of path -> text, got {type(value).__name__}")
    out: dict[str, str] = {}
    for key, text in value.items():
        if not isinstance(key, str):
            raise RecordError(f"{what} has a non-string path {key!r}")
        if text is not None and not isinstance(text, str):
            # A file's content is text; str() of a number or object would be a made-up file.
            raise RecordError(f"{what}[{key!r}] must be text, got {type(text).__name__}")
        out[key] = "" if text is None else text
    return out


def unsupported_reason(
    categories: Iterable[str], harness: dict[str, str], *, reference_answer: str | None = None, agentic: bool = False
) -> str | None:
    """Why the local open-source toolchain cannot judge this problem, or ``None``.

    A non-agentic comprehension problem is scored against its reference answer (BLEU/ROUGE
    or an LLM judge), so it needs one instead of a harness.
    """
    cats = set(categories)
    if cats & COMMERCIAL_CATEGORIES:
        found = sorted(cats & COMMERCIAL_CATEGORIES)[0]
        return f"needs commercial EDA (category {found} uses Cadence Xcelium)"
    for path, text in harness.items():
        for marker in COMMERCIAL_MARKERS:
            if marker in text:
                return f"needs commercial EDA ({marker} in harness file {path})"
    if not any(p.endswith("docker-compose.yml") for p in harness):
        if cats & COMPREHENSION_CATEGORIES:
            if agentic:
                return "agentic comprehension problem: not supported (the text answer of a workspace)"
            if reference_answer is None:
                return "comprehension problem without a reference answer (output.response) to score against"
            return None
        return "no harness (docker-compose.yml) in the record"
    return None


def repo_ref(context: Any) -> RepoRef | None:
    """The repository an agentic record's ``context`` names (``{"repo": NAME, "commit": SHA}``,
    the repository-context shape), or ``None`` for an ordinary map of files."""
    if isinstance(context, dict) and set(context) == {"repo", "commit"}:
        name, commit = context["repo"], context["commit"]
        if isinstance(name, str) and isinstance(commit, str) and name and commit and "\n" not in name + commit:
            return RepoRef(name, commit)
    return None


def problem_from_record(record: dict[str, Any], source: str = "") -> Problem:
    """Build a ``Problem`` from one parsed JSONL record (either official shape)."""
    if not isinstance(record, dict):
        raise RecordError(f"record must be a JSON object, got {type(record).__name__}")
    pid = record.get("id")
    if not isinstance(pid, str) or not pid:
        raise RecordError("record has no string 'id'")
    categories = record.get("categories") or []
    if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
        raise RecordError(f"{pid}: 'categories' must be a list of strings")

    if "input" in record:  # non-agentic shape
        inp = record["input"]
        if not isinstance(inp, dict) or not isinstance(inp.get("prompt"), str):
            raise RecordError(f"{pid}: 'input.prompt' must be a string")
        output = record.get("output") or {}
        if not isinstance(output, dict):
            raise RecordError(f"{pid}: 'output' must be an object")
        harness_field = record.get("harness") or {}
        if not isinstance(harness_field, dict):
            raise RecordError(f"{pid}: 'harness' must be an object")
        harness = _string_map(harness_field.get("files", {}), f"{pid}: harness.files")
        context = _string_map(inp.get("context"), f"{pid}: input.context")
        out_ctx = _string_map(output.get("context"), f"{pid}: output.context")
        reference = out_ctx if out_ctx and any(t.strip() for t in out_ctx.values()) else None
        answer = output.get("response")
        if answer is not None and not isinstance(answer, str):
            raise RecordError(f"{pid}: 'output.response' must be a string")
        answer = answer if answer and answer.strip() else None
        return Problem(
            id=pid,
            categories=tuple(categories),
            agentic=False,
            prompt=inp["prompt"],
            context=context,
            targets=tuple(out_ctx),
            harness=harness,
            reference=reference,
            source=source,
            unsupported=unsupported_reason(categories, harness, reference_answer=answer),
            reference_answer=answer,
        )

    if "prompt" in record:  # agentic shape
        if not isinstance(record["prompt"], str):
            raise RecordError(f"{pid}: 'prompt' must be a string")
        repo = repo_ref(record.get("context"))
        context = {} if repo is not None else _string_map(record.get("context"), f"{pid}: context")
        patch = _string_map(record.get("patch"), f"{pid}: patch")
        harness = _string_map(record.get("harness"), f"{pid}: harness")
        reference: dict[str, str] | None = None
        # A repository problem's golden patch applies to the repository's files, which the
        # record does not carry: its reference is made when the repository is checked out.
        if repo is None and patch and any(d.strip() for d in patch.values()):
            reference = {}
            for path, diff in patch.items():
                try:
                    reference[path] = apply_patch(context.get(path, ""), diff)
                except PatchError as exc:
                    raise RecordError(f"{pid}: golden patch for {path} does not apply: {exc}") from exc
        system_message = record.get("system_message")
        return Problem(
            id=pid,
            categories=tuple(categories),
            agentic=True,
            prompt=record["prompt"],
            context=context,
            targets=tuple(patch),
            harness=harness,
            system_message=system_message if isinstance(system_message, str) else None,
            reference=reference,
            patch=patch,
            source=source,
            unsupported=unsupported_reason(categories, harness, agentic=True),
            repo=repo,
        )
    raise RecordError(f"{pid}: neither the non-agentic ('input') nor the agentic ('prompt') shape")


@dataclass
class Skipped:
    """A record left out of a dataset, and why."""

    id: str
    reason: str
    source: str = ""


@dataclass
class Dataset:
    """Problems loaded from one source, plus what was left out."""

    problems: list[Problem]
    skipped: list[Skipped] = field(default_factory=list)
    source: str = ""

    def __len__(self) -> int:
        return len(self.problems)

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.problems)

    def __getitem__(self, problem_id: str) -> Problem:
        for problem in self.problems:
            if problem.id == problem_id:
                return problem
        raise UnknownProblemError(f"no problem {problem_id!r} in {self.source or 'this dataset'}")

    @property
    def ids(self) -> list[str]:
        return [p.id for p in self.problems]


def iter_records(path: Path, lenient: bool = False) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, record)`` for each non-blank JSONL line.

    A malformed line (bad JSON, not UTF-8, binary) raises ``DatasetError`` naming the file
    and line; with ``lenient`` it is skipped with a warning instead.
    """

    def skip(exc: JsonlError) -> None:
        warnings.warn(str(exc), stacklevel=4)

    try:
        yield from iter_json(path, on_error=skip if lenient else None)
    except JsonlError as exc:
        raise DatasetError(str(exc)) from None


def load_records(
    records: Iterable[tuple[str, dict[str, Any]]],
    *,
    ids: Iterable[str] | None = None,
    categories: Iterable[str] | None = None,
    difficulty: Iterable[str] | str | None = None,
    include_unsupported: bool = False,
    lenient: bool = False,
    source: str = "",
) -> Dataset:
    """Turn ``(location, record)`` pairs into a filtered ``Dataset``."""
    want_ids = set(ids) if ids else None
    want_cats = {_normalise_category(c) for c in categories} if categories else None
    if isinstance(difficulty, str):
        difficulty = [difficulty]
    want_diff = set(difficulty) if difficulty else None
    problems: list[Problem] = []
    skipped: list[Skipped] = []
    for location, record in records:
        try:
            problem = problem_from_record(record, source=location)
        except ValueError as exc:
            message = one_line(f"{location}: {exc}")
            if lenient:
                warnings.warn(message, stacklevel=2)
                rid = record.get("id") if isinstance(record, dict) else None
                skipped.append(Skipped(str(rid or "?"), f"malformed: {exc}", location))
                continue
            raise DatasetError(message) from None
        if want_ids is not None and problem.id not in want_ids:
            continue
        if want_cats is not None and problem.category not in want_cats:
            continue
        if want_diff is not None and problem.difficulty not in want_diff:
            continue
        if problem.unsupported and not include_unsupported:
            skipped.append(Skipped(problem.id, problem.unsupported, location))
            continue
        problems.append(problem)
    if want_ids is not None:
        missing = want_ids - {p.id for p in problems} - {s.id for s in skipped}
        if missing:
            raise DatasetError(f"{source}: no problem with id {', '.join(sorted(missing))}")
    return Dataset(problems=problems, skipped=skipped, source=source)


def _normalise_category(value: str | int) -> str:
    text = str(value).strip().lower()
    if text.isdigit():
        return f"cid{int(text):03d}"
    return text


def jsonl_files(path: Path) -> list[Path]:
    """The JSONL files ``path`` names: itself, or every ``*.jsonl`` in a directory."""
    try:
        if path.is_dir():
            files = sorted(path.glob("*.jsonl"))
            if not files:
                raise DatasetError(f"{path}: no .jsonl files in this directory")
            return files
        if path.exists():
            return [path]
    except OSError as exc:  # a name too long, a folder we may not list
        raise DatasetError(f"{path}: cannot read: {exc.strerror or exc}") from None
    raise DatasetError(f"{path}: no such file")


def load_jsonl(path: str | Path, *, lenient: bool = False, **filters: Any) -> Dataset:
    """Load a CVDP JSONL file (either shape; a directory loads every ``*.jsonl`` in it)."""
    path = Path(path)
    files = jsonl_files(path)
    pairs = (
        (f"{file}:{number}", record)
        for file in files
        for number, record in iter_records(file, lenient=lenient)
    )
    return load_records(pairs, lenient=lenient, source=str(path), **filters)
