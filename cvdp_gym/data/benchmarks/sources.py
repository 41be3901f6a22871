"""Where a benchmark's files come from: a copy the user names, an environment variable, or
the pinned upstream commit fetched once into the user cache.

The project ships none of the benchmarks' files. ``locate`` looks, in order, at the folder
the caller names (``benchmark_dir``, ``--benchmark-dir``), the benchmark's environment
variable (``CVDP_GYM_VERILOG_EVAL``, ...) and the user cache
(``~/.cache/cvdp-gym/benchmarks/<name>-<commit>``), and otherwise fails with one line that
says how to get the files. ``fetch`` brings the pinned commit into the cache (``git fetch``
of that commit, else the commit's archive), then verifies it: the SHA-256 of the manifest
(every file the benchmark reads, each with its own SHA-256) must equal the pin's, so a copy
is the pinned one file by file however it arrived. Nothing is moved into the cache before
it is verified.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path

from cvdp_gym.data.benchmark import Benchmark
from cvdp_gym.errors import DatasetError
from cvdp_gym.user_dirs import cache_dir

#: The marker a verified fetch leaves in its folder (the manifest's checksum).
VERIFIED = ".cvdp-gym-verified"


def manifest(benchmark: Benchmark, root: Path) -> str:
    """``<sha256>  <path>`` of every file ``benchmark`` reads from ``root``, sorted by path."""
    lines = []
    for path in sorted(benchmark.files(root), key=lambda p: p.relative_to(root).as_posix()):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest}  {path.relative_to(root).as_posix()}\n")
    return "".join(lines)


def checksum(benchmark: Benchmark, root: Path) -> str:
    """The SHA-256 of ``manifest`` (what ``Pin.checksum`` pins)."""
    return hashlib.sha256(manifest(benchmark, root).encode()).hexdigest()


def cache_path(benchmark: Benchmark) -> Path:
    """Where the pinned commit is kept once fetched."""
    return cache_dir() / "benchmarks" / f"{benchmark.name}-{benchmark.pin.commit[:12]}"


def clone_hint(benchmark: Benchmark) -> str:
    """How to use a copy of one's own."""
    pin = benchmark.pin
    return (
        f"clone {pin.url} (commit {pin.commit[:12]}, branch {pin.ref}) and pass --benchmark-dir DIR "
        f"or set {benchmark.env_var}=DIR"
    )


def how_to_get(benchmark: Benchmark) -> str:
    """The one line that says how to make a benchmark's files available."""
    return f"run `cvdp-gym benchmarks fetch {benchmark.name}`, or {clone_hint(benchmark)}"


def locate(benchmark: Benchmark, explicit: str | Path | None = None) -> Path:
    """The folder holding ``benchmark``'s files (see the module doc), or a one-line ``DatasetError``."""
    candidates: list[tuple[str, Path]] = []
    if explicit is not None:
        candidates.append(("--benchmark-dir", Path(explicit).expanduser()))
    elif os.environ.get(benchmark.env_var):
        candidates.append((benchmark.env_var, Path(os.environ[benchmark.env_var]).expanduser()))
    else:
        cached = cache_path(benchmark)
        if (cached / VERIFIED).is_file():
            return cached
        raise DatasetError(f"{benchmark.title} is not on this machine: {how_to_get(benchmark)}")
    where, path = candidates[0]
    if not path.is_dir():
        raise DatasetError(f"{where} {path}: no such folder ({benchmark.title}: {how_to_get(benchmark)})")
    if not benchmark.holds(path):
        raise DatasetError(f"{where} {path} does not hold {benchmark.title} ({how_to_get(benchmark)})")
    return path


def fetch(
    benchmark: Benchmark,
    *,
    url: str | None = None,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> Path:
    """Fetch the pinned commit into the user cache, verified; returns its folder.

    ``url``: another place to fetch the same commit from (a mirror); the checksum still decides.
    """
    target = cache_path(benchmark)
    if (target / VERIFIED).is_file() and not force:
        return target
    pin = benchmark.pin
    source = url or pin.url
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{benchmark.name}-", dir=target.parent))
    try:
        tree = work / "tree"
        errors: list[str] = []
        if not _git_fetch(source, pin.commit, pin.ref, tree, errors):
            shutil.rmtree(tree, ignore_errors=True)
            if not _archive_fetch(url or pin.archive_url, tree, errors):
                raise DatasetError(
                    f"could not fetch {benchmark.title} ({source} at {pin.commit[:12]}): {'; '.join(errors)}; "
                    f"offline, {clone_hint(benchmark)}"
                )
        if not benchmark.holds(tree):
            raise DatasetError(f"{source} at {pin.commit[:12]} does not hold {benchmark.title}")
        found = checksum(benchmark, tree)
        if found != pin.checksum:
            raise DatasetError(
                f"{benchmark.title} from {source} at {pin.commit[:12]} does not match its pinned checksum "
                f"(manifest SHA-256 {found[:16]}..., expected {pin.checksum[:16]}...): not kept"
            )
        shutil.rmtree(tree / ".git", ignore_errors=True)
        (tree / VERIFIED).write_text(found + "\n")
        shutil.rmtree(target, ignore_errors=True)
        tree.rename(target)
        log(f"{benchmark.title}: {pin.commit[:12]} fetched and verified at {target}")
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _git_fetch(url: str, commit: str, ref: str, tree: Path, errors: list[str]) -> bool:
    """Check out ``commit`` of ``url`` into ``tree`` with git (only that commit when the
    server allows it, else ``ref`` and then the commit)."""
    if shutil.which("git") is None:
        errors.append("git is not installed")
        return False
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}

    def git(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True, env=env, timeout=timeout)

    tree.mkdir(parents=True)
    try:
        git("init", "-q")
        if git("fetch", "-q", "--depth", "1", url, commit).returncode != 0:
            fetched = git("fetch", "-q", url, ref)
            if fetched.returncode != 0:
                errors.append(f"git fetch {url}: {_last_line(fetched.stderr)}")
                return False
        checkout = git("-c", "advice.detachedHead=false", "checkout", "-q", commit)
        if checkout.returncode != 0:
            errors.append(f"git checkout {commit[:12]}: {_last_line(checkout.stderr)}")
            return False
    except subprocess.TimeoutExpired:
        errors.append(f"git fetch {url}: timed out")
        return False
    return True


def _archive_fetch(url: str, tree: Path, errors: list[str]) -> bool:
    """Unpack a ``.tar.gz`` archive of the commit (its one top folder) into ``tree``."""
    try:
        with urllib.request.urlopen(url, timeout=120) as answer:
            data = answer.read()
    except (OSError, ValueError) as exc:
        errors.append(f"archive {url}: {exc}")
        return False
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            tree.mkdir(parents=True)
            archive.extractall(tree, filter="data")
    except (tarfile.TarError, OSError) as exc:
        errors.append(f"archive {url}: {exc}")
        return False
    tops = list(tree.iterdir())
    if len(tops) == 1 and tops[0].is_dir():  # GitHub wraps the tree in <repo>-<commit>/
        inner = tops[0]
        for child in inner.iterdir():
            child.rename(tree / child.name)
        inner.rmdir()
    return True


def _last_line(text: str) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1] if lines else "failed"
