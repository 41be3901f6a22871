"""The rows of a training set's files: JSON Lines, a JSON array, or Parquet.

Contract: ``data_files(path)`` is the file itself or, for a folder, every ``.jsonl``,
``.json`` and ``.parquet`` file directly in it (sorted). ``iter_rows(path)`` yields one
``Row`` per record with a location that names the file and the line (JSONL) or row
(Parquet, a JSON array); a file or line that cannot be read raises a one-line
``DatasetError`` naming it, or, given ``on_error``, is handed to it and skipped.
``first_row(path)`` is what layout detection reads.

A ``.json`` file is JSON Lines unless its first character is ``[`` (then one array of
records): RTLCoder's ``Resyn27k.json`` is JSON Lines under a ``.json`` name. Parquet needs
pyarrow, imported only when a Parquet file is read; without it the error is a
``MissingDependencyError`` that names the ``parquet`` extra.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvdp_gym.errors import DatasetError, MissingDependencyError
from cvdp_gym.jsonl import JsonlError, decode_line, iter_json, parse_json

__all__ = ["DATA_SUFFIXES", "Row", "data_files", "first_row", "iter_rows"]

DATA_SUFFIXES = (".jsonl", ".json", ".parquet")
#: Rows read from a Parquet file at a time.
_BATCH = 512

OnError = Callable[[DatasetError], None]


@dataclass(frozen=True)
class Row:
    """One record of a file: its value, its 1-based number and where it is (for messages)."""

    path: Path
    number: int
    value: Any
    location: str


def data_files(path: Path) -> list[Path]:
    """The data files ``path`` names (see the module doc); empty when it names none."""
    try:
        if path.is_dir():
            return sorted(p for p in path.iterdir() if p.is_file() and p.suffix in DATA_SUFFIXES)
        return [path] if path.is_file() and path.suffix in DATA_SUFFIXES else []
    except OSError:
        return []


def first_row(path: Path) -> Any | None:
    """The first record of a data file, or None where it has none. A JSON file that cannot be
    read gives None (another loader may own it); a Parquet file raises as ``iter_rows`` does."""
    try:
        for row in iter_rows(path):
            return row.value
    except DatasetError:
        if path.suffix == ".parquet":
            raise
    return None


def iter_rows(path: Path, *, on_error: OnError | None = None) -> Iterator[Row]:
    """Every record of one data file (see the module doc)."""
    if path.suffix == ".parquet":
        yield from _parquet_rows(path, on_error)
    elif path.suffix == ".json" and _starts_with(path, b"["):
        yield from _array_rows(path, on_error)
    else:
        yield from _jsonl_rows(path, on_error)


def _report(error: DatasetError, on_error: OnError | None) -> None:
    if on_error is None:
        raise error
    on_error(error)


def _jsonl_rows(path: Path, on_error: OnError | None) -> Iterator[Row]:
    def skip(exc: JsonlError) -> None:
        _report(DatasetError(str(exc)), on_error)

    try:
        for number, value in iter_json(path, on_error=skip if on_error is not None else None):
            yield Row(path, number, value, f"{path}:{number}")
    except JsonlError as exc:
        _report(DatasetError(str(exc)), on_error)


def _starts_with(path: Path, prefix: bytes) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return False
    return head.startswith(prefix)


def _array_rows(path: Path, on_error: OnError | None) -> Iterator[Row]:
    try:
        value = parse_json(decode_line(path.read_bytes(), str(path), first=True), str(path))
    except OSError as exc:
        _report(DatasetError(f"{path}: cannot read: {exc.strerror or exc}"), on_error)
        return
    except JsonlError as exc:
        _report(DatasetError(str(exc)), on_error)
        return
    if not isinstance(value, list):
        _report(DatasetError(f"{path}: expected a JSON array of records or JSON Lines"), on_error)
        return
    for number, item in enumerate(value, 1):
        yield Row(path, number, item, f"{path}: item {number}")


def parquet_module(path: Path) -> Any:
    """``pyarrow.parquet``, or a ``MissingDependencyError`` naming the extra."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingDependencyError(
            f"{path}: reading Parquet needs pyarrow: pip install 'cvdp-gym[parquet]'"
        ) from None
    return pq


def _parquet_rows(path: Path, on_error: OnError | None) -> Iterator[Row]:
    pq = parquet_module(path)
    number = 0
    try:
        reader = pq.ParquetFile(path)
        for batch in reader.iter_batches(batch_size=_BATCH):
            for value in batch.to_pylist():
                number += 1
                yield Row(path, number, value, f"{path}: row {number}")
    except Exception as exc:  # pyarrow's ArrowInvalid/OSError for a corrupt or truncated file
        where = f"{path}: row {number + 1}" if number else str(path)
        message = " ".join(str(exc).split())[:300]
        _report(DatasetError(f"{where}: not a readable Parquet file ({type(exc).__name__}: {message})"), on_error)
