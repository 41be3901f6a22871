"""Reading a pickle that must hold plain data only, without ever running code from it.

Contract: ``plain_loads(data, where)`` returns what ``data`` (a pickle) holds when that is
plain data (dicts, lists, tuples, sets, strings, bytes, numbers, booleans, None) and raises
a one-line ``DatasetError`` naming ``where`` for anything else: a pickle that names a
function or class (``os.system``, a custom object), a persistent id, or bytes that are
not a pickle at all. Nothing the pickle names is imported or called.

Why: CodeV-R1's RL parquet stores each item's ground truth as a Python pickle, and
``pickle.loads`` on a downloaded file runs whatever that file asks for. The unpickler here
refuses every global (``find_class``) except the two container types that pickle
protocols 0-3 can only spell as a call (``set`` and ``frozenset``; protocol 4 and later
have opcodes for them), and refuses persistent ids. Every other opcode only builds
containers and literals, so a pickle that needs anything more fails before anything runs.
(Bytes in a protocol 0-2 pickle are spelled as a call to ``_codecs.encode``, refused too:
CodeV-R1's pickles are protocol 3 or later: sungyubkim/verl's CodeV scorer tells them from
JSON by their first bytes, ``\x80\x03`` or ``\x80\x04``.)
"""

from __future__ import annotations

import io
import pickle
from typing import Any

from cvdp_gym.errors import DatasetError

__all__ = ["PICKLE_MAGIC", "looks_pickled", "plain_loads"]

#: The first byte of a pickle of protocol 2 or later (``PROTO``).
PICKLE_MAGIC = b"\x80"
#: The only globals a plain-data pickle may name: constructors of plain containers.
_CONTAINERS: dict[tuple[str, str], type] = {
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("__builtin__", "set"): set,  # protocol 0-2 pickles written by Python 2
    ("__builtin__", "frozenset"): frozenset,
}


class _PlainDataUnpickler(pickle.Unpickler):
    """An unpickler that loads containers and literals and refuses everything else (the
    refusal is the ``DatasetError`` itself, raised before anything is imported)."""

    def __init__(self, data: bytes, where: str) -> None:
        super().__init__(io.BytesIO(data))
        self.where = where

    def _refusal(self, what: str) -> str:
        return f"{self.where}: refused a pickle that is not plain data: {what}"

    def find_class(self, module: str, name: str) -> Any:
        found = _CONTAINERS.get((module, name))
        if found is None:
            raise DatasetError(self._refusal(f"it names {module}.{name}"))
        return found

    def persistent_load(self, pid: Any) -> Any:
        raise DatasetError(self._refusal("it holds a persistent id"))


def looks_pickled(data: object) -> bool:
    """``data`` is bytes that start as a pickle of protocol 2 or later does."""
    return isinstance(data, bytes | bytearray) and data[:1] == PICKLE_MAGIC


def plain_loads(data: bytes, where: str) -> Any:
    """The plain data a pickle holds (see the module doc), or a one-line ``DatasetError``."""
    try:
        return _PlainDataUnpickler(bytes(data), where).load()
    except DatasetError:
        raise
    except RecursionError:
        raise DatasetError(f"{where}: refused a pickle nested too deeply") from None
    except Exception as exc:  # a truncated or corrupt pickle: EOFError, ValueError, TypeError, KeyError...
        raise DatasetError(f"{where}: not a readable pickle ({type(exc).__name__}: {exc})") from None
