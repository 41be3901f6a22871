"""The git repositories that repository-context ("heavy") agentic problems start from.

A heavy problem's record names a repository and a commit (``context: {"repo": NAME,
"commit": SHA}``, :class:`~cvdp_gym.data.problems.RepoRef`) instead of carrying its files.
As the official tool does (``CVDP_HEAVY_REPOS_PATH``), NAME is looked up in a repos folder
as a directory (a git repository, bare or not) or, failing that, as ``NAME.bundle``; the
commit is checked out, and the problem's files are its ``external/`` folder, or the whole
tree for repositories named ``*_ext_*`` (and for names without ``cvdp_``/``cvdp-``), never
``.git``. The official tool decides external/ on the resolved path; here it is decided on
NAME alone, so a repos folder whose own path contains ``cvdp_`` does not change it.

Contract: :class:`RepoStore` resolves and caches, and raises :class:`RepoUnavailable` (a
``CvdpGymError``) with one line saying where it looked when a repository, its commit or
its ``external/`` folder is missing. Everything it builds lives in a cache folder
(``CVDP_GYM_REPO_CACHE``, default ``~/.cache/cvdp-gym/repos``):

- ``mirrors/<hash>.git``: a bundle opened once (``git clone --mirror``), keyed by the
  bundle's content hash, so a changed bundle is read again and an unchanged one never;
- ``trees/<source>/<commit>.<external|all>``: the checked-out files of one commit, once per
  (source, commit). They are read-only by convention: workspaces are copy-on-write layers
  over them (:mod:`cvdp_gym.sandbox.tree_copy`), never the trees themselves.

Builds happen in a temporary folder renamed into place under a file lock, so threads and
processes can share one cache. Git runs with no global or system configuration, so a
user's settings (``core.autocrlf``, filters) cannot change the files.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import posixpath
import shutil
import subprocess
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from cvdp_gym.data.patch import apply_patch
from cvdp_gym.data.problems import Problem, RepoRef
from cvdp_gym.errors import PatchError, RepoUnavailable
from cvdp_gym.user_dirs import cache_dir

__all__ = [
    "CACHE_ENV",
    "REPOS_ENV",
    "RepoStore",
    "RepoUnavailable",
    "default_cache_dir",
    "external_root",
    "repos_folder",
]

#: The environment variable the official tool reads for its repos folder (honoured here too).
REPOS_ENV = "CVDP_HEAVY_REPOS_PATH"
#: Where mirrors and checked-out trees are kept (default ``~/.cache/cvdp-gym/repos``).
CACHE_ENV = "CVDP_GYM_REPO_CACHE"
#: The folder of a CVDP repository that holds the problem's files.
EXTERNAL = "external"
_GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
_GIT_TIMEOUT_S = 1800.0


def repos_folder(option: str | Path | None = None) -> Path | None:
    """The repos folder: ``option`` when given, else ``$CVDP_HEAVY_REPOS_PATH``, else None."""
    value = option if option not in (None, "") else os.environ.get(REPOS_ENV)
    return Path(value).expanduser() if value else None


def default_cache_dir() -> Path:
    """``$CVDP_GYM_REPO_CACHE``, else ``$XDG_CACHE_HOME/cvdp-gym/repos`` (``~/.cache/...``)."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    return cache_dir() / "repos"


def external_root(name: str) -> str | None:
    """``"external"`` when only that folder of repository ``name`` is the problem's, else
    None (the whole tree): CVDP repositories keep it in ``external/``, except ``_ext_`` ones,
    which are the external code itself."""
    return EXTERNAL if ("cvdp_" in name or "cvdp-" in name) and "_ext_" not in name else None


class RepoStore:
    """Finds heavy problems' repositories in a repos folder and caches their checkouts.

    ``folder``: the repos folder (default: ``$CVDP_HEAVY_REPOS_PATH``); ``cache_dir``: where
    mirrors and trees go (default: :func:`default_cache_dir`). ``stats`` counts the bundles
    opened and the trees checked out by this object (a warm cache opens none).
    """

    def __init__(self, folder: str | Path | None = None, cache_dir: str | Path | None = None) -> None:
        self.folder = repos_folder(folder)
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.stats: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self._digests: dict[tuple[str, int, int, int], str] = {}  # source stamp -> cache key
        self._trees: dict[tuple[str, str, str], Path] = {}

    def __repr__(self) -> str:
        return f"RepoStore(folder={str(self.folder) if self.folder else None!r}, cache_dir={str(self.cache_dir)!r})"

    # -- where a repository is -----------------------------------------------------------

    def where(self) -> str:
        """Where this store looks, in words (for messages and ``check``)."""
        if self.folder is None:
            return f"no repos folder (give --repos DIR, repos=DIR, or set {REPOS_ENV})"
        return f"repos folder {self.folder}"

    def locate(self, name: str) -> Path:
        """The directory or ``NAME.bundle`` that repository ``name`` resolves to.

        A directory wins over a bundle of the same name, as in the official tool. An
        absolute path is used as it is; remote URLs are never fetched.
        """
        if "://" in name or "@" in name:
            raise RepoUnavailable(f"repository {name!r} is remote; this tool never fetches: clone or bundle it into the repos folder")
        if os.path.isabs(name):
            candidates = [Path(name)]
        else:
            parts = posixpath.normpath(name).split("/")
            if not name.strip() or ".." in parts:
                raise RepoUnavailable(f"repository name {name!r} is not a name inside the repos folder")
            if self.folder is None:
                raise RepoUnavailable(f"repository {name!r} not found: {self.where()}")
            candidates = [self.folder / name]
        path = candidates[0]
        if path.is_dir():
            return path
        if path.suffix != ".bundle":
            bundle = path.with_name(path.name + ".bundle")
            if bundle.is_file():
                return bundle
            candidates.append(bundle)
        elif path.is_file():
            return path
        looked = " or ".join(str(c) for c in candidates)
        raise RepoUnavailable(f"repository {name!r} not found: looked for {looked} ({self.where()})")

    def missing(self, problem: Problem) -> str | None:
        """Why ``problem``'s repository cannot be found (a cheap check, no git), or None
        (also for problems without a repository)."""
        if problem.repo is None:
            return None
        try:
            self.locate(problem.repo.name)
        except RepoUnavailable as exc:
            return str(exc)
        return None

    # -- checked-out trees ---------------------------------------------------------------

    def tree(self, ref: RepoRef) -> Path:
        """The problem's files at ``ref.commit`` (``external/`` or the whole tree, no
        ``.git``), checked out once and cached; treat it as read-only."""
        source = self.locate(ref.name)
        root = external_root(ref.name)
        key = self._source_key(source)
        memo = (key, ref.commit, root or "")
        with self._lock:
            known = self._trees.get(memo)
        if known is not None and known.is_dir():
            return known
        target = self.cache_dir / "trees" / key / f"{_safe(ref.commit)}.{root or 'all'}"
        if not target.is_dir():
            with self._exclusive(f"tree-{key}-{target.name}"):
                if not target.is_dir():
                    git_dir = self._git_dir(source, key)
                    self._export(git_dir, ref, root, target)
                    self.stats["trees_exported"] += 1
        with self._lock:
            self._trees[memo] = target
        return target

    def problem_tree(self, problem: Problem) -> Path:
        """:meth:`tree` of ``problem.repo`` (``RepoUnavailable`` for a problem without one)."""
        if problem.repo is None:
            raise RepoUnavailable(f"{problem.id} names no repository")
        return self.tree(problem.repo)

    def reference(self, problem: Problem) -> dict[str, str]:
        """The golden answer: each file of ``problem.patch`` after applying its diff to the
        checked-out file (a file the tree lacks starts empty). ``PatchError`` if one does not apply."""
        tree = self.problem_tree(problem)
        files: dict[str, str] = {}
        for path, diff in problem.patch.items():
            original = tree / path
            text = original.read_text(encoding="utf-8", errors="replace") if original.is_file() else ""
            try:
                files[path] = apply_patch(text, diff)
            except PatchError as exc:
                raise PatchError(f"golden patch for {path} does not apply to {problem.repo.name}@{problem.repo.commit[:12]}: {exc}") from exc  # type: ignore[union-attr]
        return files

    # -- internals -----------------------------------------------------------------------

    def _source_key(self, source: Path) -> str:
        """A cache key of a source: a bundle's content hash, a directory's git folder path."""
        if source.is_dir():
            stamp = (str(source.resolve()), 0, 0, 0)
            with self._lock:
                key = self._digests.get(stamp)
            if key is None:
                git_dir = self._git_dir(source, "")
                key = "dir-" + hashlib.sha256(str(git_dir).encode()).hexdigest()[:20]
                with self._lock:
                    self._digests[stamp] = key
            return key
        info = source.stat()
        stamp = (str(source.resolve()), info.st_size, info.st_mtime_ns, info.st_ino)
        with self._lock:
            digest = self._digests.get(stamp)
        if digest is None:
            sha = hashlib.sha256()
            with open(source, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    sha.update(chunk)
            digest = sha.hexdigest()[:20]
            with self._lock:
                self._digests[stamp] = digest
        return "bundle-" + digest

    def _git_dir(self, source: Path, key: str) -> Path:
        """The git folder to read ``source`` from: the directory's own, or the bundle's mirror."""
        if source.is_dir():
            return Path(_git(["rev-parse", "--absolute-git-dir"], cwd=source, what=f"{source} is not a git repository").strip())
        mirror = self.cache_dir / "mirrors" / f"{key}.git"
        if (mirror / "HEAD").is_file():
            return mirror
        with self._exclusive(f"mirror-{key}"):
            if not (mirror / "HEAD").is_file():
                mirror.parent.mkdir(parents=True, exist_ok=True)
                staging = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=mirror.parent))
                try:
                    _git(["clone", "--mirror", "--quiet", str(source.resolve()), str(staging / "m.git")],
                         what=f"cannot open bundle {source}")
                    os.replace(staging / "m.git", mirror)
                finally:
                    shutil.rmtree(staging, ignore_errors=True)
                self.stats["bundles_opened"] += 1
        return mirror

    def _export(self, git_dir: Path, ref: RepoRef, root: str | None, target: Path) -> None:
        """Check out ``ref.commit`` from ``git_dir`` into ``target`` (its ``root`` folder only)."""
        where = f"{ref.name}@{ref.commit}"
        try:
            _git(["cat-file", "-e", f"{ref.commit}^{{commit}}"], git_dir=git_dir, what="")
        except RepoUnavailable:
            raise RepoUnavailable(f"repository {ref.name!r} has no commit {ref.commit} ({self.where()})") from None
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            env = {"GIT_INDEX_FILE": str(staging / "index")}
            _git(["read-tree", ref.commit], git_dir=git_dir, env=env, what=f"cannot read {where}")
            work = staging / "tree"
            work.mkdir()
            _git(["--work-tree", str(work), "checkout-index", "--all", "--force"], git_dir=git_dir, env=env,
                 what=f"cannot check out {where}")
            files = work / root if root else work
            if not files.is_dir():
                raise RepoUnavailable(f"{where} has no {root}/ folder (CVDP repositories keep the problem's files there)")
            os.replace(files, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    @contextlib.contextmanager
    def _exclusive(self, name: str) -> Iterator[None]:
        """Held by one thread of this process and one process on this machine at a time."""
        with self._lock:
            lock = self._key_locks.setdefault(name, threading.Lock())
        locks = self.cache_dir / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        with lock, open(locks / f"{name}.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _safe(text: str) -> str:
    """A file-name-safe form of a commit name (normally already 40 hex digits)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)[:100] or "_"


def _git(
    args: list[str],
    *,
    cwd: Path | None = None,
    git_dir: Path | None = None,
    env: dict[str, str] | None = None,
    what: str,
) -> str:
    """Run git quietly with no user configuration; ``RepoUnavailable`` (``what``: git's
    last line) when it fails or is missing."""
    argv = ["git", "-c", "safe.directory=*", "-c", "core.autocrlf=false"]
    if git_dir is not None:
        argv += ["--git-dir", str(git_dir)]
    try:
        done = subprocess.run(
            [*argv, *args], cwd=cwd, env={**os.environ, **_GIT_ENV, **(env or {})},
            capture_output=True, text=True, timeout=_GIT_TIMEOUT_S, check=False,
        )
    except FileNotFoundError:
        raise RepoUnavailable("git is not installed; repository problems need it (apt-get install git)") from None
    except subprocess.TimeoutExpired:
        raise RepoUnavailable(f"{what}: git took longer than {_GIT_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise RepoUnavailable(f"{what}: {last}" if what else last)
    return done.stdout
