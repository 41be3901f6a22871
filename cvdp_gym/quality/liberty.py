"""Standard-cell libraries for the ASIC flow: three pinned open ones, or a user's own file.

No standard-cell liberty is on PyPI or in Debian. OpenSTA's repository carries small
example liberties of open libraries under ``examples/``; two are pinned here by the
repository's commit and each file's SHA-256, fetched once into the user's cache
(``cvdp-gym quality fetch NAME``) and kept uncompressed there (Yosys reads plain text):

- ``nangate45``: the Nangate 45 nm Open Cell Library, typical corner (1.1 V, 25 °C);
  time in ns, area in µm², leakage in nW. ChipSeek and the Hardware Quality Index use it.
- ``sky130hd``: SkyWater 130 nm high density, typical corner (1.8 V, 25 °C); TuRTLe's PDK.

OpenSTA's ASAP7 example (``asap7_small_*``) is not pinned: it holds a buffer, an AND2 and a
flip-flop, no inverter, so ABC maps almost nothing to it. The full ASAP7 liberties (time in ps,
which the flow converts) work as a user's file (``--liberty PATH``).

``resolve_liberty(spec)`` takes one of those names or the path of a ``.lib`` / ``.lib.gz``
file (``--liberty``), and returns a ``Liberty``: its uncompressed file on this machine and the
SHA-256 of that text (part of every quality cache key, so another library never reuses a
measurement). An unknown name, a missing file or a file that is not a liberty is a one-line
``ConfigError``.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from cvdp_gym.errors import ConfigError
from cvdp_gym.user_dirs import cache_dir

__all__ = ["LIBERTIES", "OPENSTA_COMMIT", "Liberty", "PinnedLiberty", "fetch_liberty", "liberty_dir", "resolve_liberty"]

#: The OpenSTA commit whose ``examples/`` the pinned files come from.
OPENSTA_COMMIT = "d1b2b3962cd47539c748bb163da5de2bd5d2f85f"
_URL = "https://raw.githubusercontent.com/The-OpenROAD-Project/OpenSTA/{commit}/{path}"
#: A liberty's first statement (``library (NAME) {``).
_LIBRARY = re.compile(r"^\s*library\s*\(\s*\"?([^\s\")]+)\"?\s*\)\s*\{", re.MULTILINE)


@dataclass(frozen=True)
class PinnedLiberty:
    """One open library pinned by its path in OpenSTA's repository and its bytes' SHA-256."""

    name: str
    path: str
    sha256: str
    description: str


LIBERTIES = {
    lib.name: lib
    for lib in (
        PinnedLiberty(
            "nangate45", "examples/nangate45_typ.lib.gz",
            "7ee6c11d0c8964f9971ba28b879a6cad28e178f86911adda71ac0672ce00f7ef",
            "Nangate 45 nm Open Cell Library, typical corner (1.1 V, 25 °C)",
        ),
        PinnedLiberty(
            "sky130hd", "examples/sky130hd_tt.lib.gz",
            "210e56be3a3a0907b5241a34d277f664cf4b4d91dcb49a27ff813df4406a5889",
            "SkyWater 130 nm high density, typical corner (1.8 V, 25 °C)",
        ),
    )
}


@dataclass(frozen=True)
class Liberty:
    """A liberty ready for the flows: its name, uncompressed file and text's SHA-256."""

    name: str
    path: Path
    sha256: str


def liberty_dir() -> Path:
    """Where fetched and uncompressed liberties live (``$CVDP_GYM_LIBERTY_DIR`` overrides)."""
    override = os.environ.get("CVDP_GYM_LIBERTY_DIR")
    return Path(override) if override else cache_dir() / "liberty"


def _text_of(data: bytes, origin: str) -> str:
    """A liberty's text from its bytes (gzip or plain); ``ConfigError`` when it is not one."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise ConfigError(f"liberty {origin}: not a readable gzip file ({exc})") from None
    text = data.decode("utf-8", errors="replace")
    if not _LIBRARY.search(text[:200_000]):
        raise ConfigError(f"liberty {origin}: not a liberty file (no 'library (NAME) {{' statement)")
    return text


def _keep(name: str, text: str) -> Liberty:
    """Write ``text`` uncompressed under ``liberty_dir()`` (once per content)."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    target = liberty_dir() / f"{name}-{digest[:12]}.lib"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.part")
        partial.write_text(text)
        partial.replace(target)
    return Liberty(name, target, digest)


def fetch_liberty(name: str, source: str | None = None) -> Liberty:
    """Fetch pinned library ``name`` (from OpenSTA's repository at the pinned commit, or from
    ``source``: a URL or a local copy of the same file) and keep it uncompressed.
    The bytes must match the pin; anything else is a ``ConfigError`` saying what came."""
    pinned = LIBERTIES.get(name)
    if pinned is None:
        raise ConfigError(f"unknown liberty {name!r}; pinned: {', '.join(LIBERTIES)} (or give a .lib path)")
    where = source or _URL.format(commit=OPENSTA_COMMIT, path=pinned.path)
    try:
        if Path(where).exists():
            data = Path(where).read_bytes()
        else:
            with urllib.request.urlopen(where, timeout=120) as answer:
                data = answer.read()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"could not fetch liberty {name} from {where}: {exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != pinned.sha256:
        raise ConfigError(f"liberty {name} from {where}: SHA-256 {digest}, pinned {pinned.sha256}")
    liberty = _keep(name, _text_of(data, where))
    (liberty_dir() / f"{name}.pinned").write_text(f"{pinned.sha256} {liberty.path.name}\n")
    return liberty


def fetched(name: str) -> Liberty | None:
    """Pinned library ``name`` if it was fetched on this machine, else None."""
    try:
        marker = (liberty_dir() / f"{name}.pinned").read_text().split()
        path = liberty_dir() / marker[1]
        return Liberty(name, path, path.stem.rsplit("-", 1)[1]) if path.exists() else None
    except (OSError, IndexError):
        return None


def resolve_liberty(spec: str | Path) -> Liberty:
    """A pinned library's name (fetched before) or a liberty file's path, ready for the flows."""
    text = str(spec)
    if text in LIBERTIES:
        found = fetched(text)
        if found is None:
            raise ConfigError(f"liberty {text} is not fetched yet: run `cvdp-gym quality fetch {text}`")
        return Liberty(text, found.path, hashlib.sha256(found.path.read_bytes()).hexdigest())
    path = Path(text).expanduser()
    if not path.is_file():
        raise ConfigError(f"unknown liberty {text!r}: not a pinned name ({', '.join(LIBERTIES)}) nor a file")
    name = path.name.removesuffix(".gz").removesuffix(".lib")
    return _keep(name, _text_of(path.read_bytes(), str(path)))
