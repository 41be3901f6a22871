"""The answer gate: one check every flow runs before an answer earns anything.

It reads the answer as the tools that compile it read it: every Verilog file of the answer
and every file its includes reach (:mod:`.directives`: one view for every tool, includes
resolved inside the answer, no tool's pragma), then the preprocessed text with slang
(:mod:`.reach_in`: each system task on its kind's allowlist (:mod:`.system_tasks`), names
and files that stay inside the answer). A finding makes the answer ``reach_in``, never a
pass, whichever flow grades it: :class:`~cvdp_gym.harness.runner.HarnessRunner` runs
:func:`check` itself on every answer, so a third-party flow cannot leave it out, and the
built-in flows pass it what they know of the run (the files they compile beside the answer,
the names they protect) for the stricter ``FULL`` rules.

Contract: ``check(files, kind=, supplied=, readable=, protected=, rules=, workspace=)`` →
:class:`~cvdp_gym.gate.findings.Scan`. ``files``: the answer's files (``{path: text}``; under
``FULL`` each is Verilog, as a benchmark flow compiles it; under ``NEVER`` those whose names end
in :data:`~cvdp_gym.gate.reach_in.RTL_SUFFIXES`, the others read only when an include names
them); ``workspace``: an agent's folder, whose files an include may also
name, and whose Verilog files count as the answer's (an agent may edit any of them; those equal
to a ``supplied`` file are the problem's). Results are memoised on the inputs (the runner and a
flow ask about the same answer), except with a workspace.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from pathlib import Path

from cvdp_gym.gate.directives import read_directives
from cvdp_gym.gate.findings import Finding, Scan
from cvdp_gym.gate.reach_in import FULL, NEVER, RTL_SUFFIXES, scan

__all__ = ["FULL", "NEVER", "check"]

_MEMO: OrderedDict[str, Scan] = OrderedDict()
_MEMO_LOCK = threading.Lock()
_MEMO_SIZE = 256
#: The largest file of a workspace the gate reads (an included one, or one of its Verilog files).
_MAX_INCLUDED_BYTES = 4_000_000
#: The most Verilog files of a workspace the gate reads.
MAX_WORKSPACE_RTL = 2000


def check(
    files: Mapping[str, str],
    *,
    kind: str = "design",
    supplied: Mapping[str, str] | None = None,
    readable: Iterable[str] = (),
    protected: Iterable[str] = (),
    rules: str = FULL,
    workspace: Path | None = None,
    baseline: Path | None = None,
    directives_only: bool = False,
) -> Scan:
    """Gate the answer's ``files`` (see the module's contract); a clean answer's ``Scan`` has
    no findings. ``directives_only``: read the directives alone (an answer whose flow applies
    its own rules to the rest: the verification tasks' benches and properties); ``baseline``:
    the tree a repository problem's workspace started from (its files, unchanged, are the
    problem's own, not the answer's)."""
    own = {path: text for path, text in files.items() if rules == FULL or path.endswith(RTL_SUFFIXES)}
    unread: list[Finding] = []
    if workspace is not None:
        texts, unread = _workspace_rtl(workspace, baseline)
        for path, text in texts.items():
            if path not in own and (supplied or {}).get(path) != text:
                own[path] = text
    if unread:  # what the gate cannot read is never passed
        return Scan(unread)
    if not own:
        return Scan()
    others = {path: text for path, text in files.items() if path not in own}
    supplied = {path: text for path, text in (supplied or {}).items() if path not in own and path.endswith(RTL_SUFFIXES)}
    readable, protected = tuple(readable), tuple(protected)
    key = _key(own, others, supplied, readable, protected, rules, kind, directives_only) if workspace is None else ""
    with _MEMO_LOCK:
        memoised = _MEMO.get(key) if key else None
        if memoised is not None:
            _MEMO.move_to_end(key)
            return memoised

    def read(path: str) -> str | None:
        if path in others:
            return others[path]
        return _workspace_text(workspace, path) if workspace is not None else None

    directives = read_directives(own, supplied=supplied, readable=read)
    if directives.findings or directives_only:  # includes outside the answer, or tools reading it differently
        found = Scan(sorted(set(directives.findings), key=lambda f: (f.path, f.line, f.what)))
    else:
        found = scan(
            own, supplied=supplied, readable=readable, protected=protected, rules=rules, kind=kind,
            included=directives.included,
        )
    if key:  # a workspace can change under the same path: never memoised
        with _MEMO_LOCK:  # graders call from several threads
            _MEMO[key] = found
            if len(_MEMO) > _MEMO_SIZE:
                _MEMO.popitem(last=False)
    return found


def _workspace_rtl(workspace: Path, baseline: Path | None) -> tuple[dict[str, str], list[Finding]]:
    """The Verilog files of an agent's workspace (``{relative path: text}``) that differ from
    ``baseline``'s, and a finding for each one the gate cannot read as the answer's own: a link
    (a simulator follows it), one too large, or more files than :data:`MAX_WORKSPACE_RTL`
    (none of them is then read)."""
    limit = MAX_WORKSPACE_RTL
    out: dict[str, str] = {}
    unread: list[Finding] = []
    for path in sorted(workspace.rglob("*")):
        if path.suffix not in RTL_SUFFIXES or not (path.is_symlink() or path.is_file()):
            continue
        relative = path.relative_to(workspace).as_posix()
        if baseline is not None and _unchanged(path, baseline / relative):
            continue
        if len(out) >= limit:
            return {}, [Finding(relative, 1, f"more than {limit} Verilog files in the workspace: the gate reads at most that many")]
        text = _workspace_text(workspace, relative)
        if text is None:
            unread.append(Finding(relative, 1, "a link, or a file too large to read: the answer's Verilog files are plain files of its own"))
        else:
            out[relative] = text
    return out, unread


def _unchanged(path: Path, original: Path) -> bool:
    """Whether a workspace's file is its starting tree's, as it was (a link to the same place)."""
    try:
        if path.is_symlink() or original.is_symlink():
            return path.is_symlink() and original.is_symlink() and os.readlink(path) == os.readlink(original)
        return original.is_file() and path.stat().st_size == original.stat().st_size and path.read_bytes() == original.read_bytes()
    except OSError:
        return False


def _workspace_text(workspace: Path, path: str) -> str | None:
    """A file of the agent's workspace, by its relative path; never a link, never outside."""
    target = workspace / path
    try:
        if target.is_symlink() or not target.is_file() or target.stat().st_size > _MAX_INCLUDED_BYTES:
            return None
        if not target.resolve().is_relative_to(workspace.resolve()):
            return None
        return target.read_text(errors="replace")
    except OSError:
        return None


def _key(*parts: object) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(sorted(part.items()) if isinstance(part, Mapping) else part).encode())
        digest.update(b"\0")
    return digest.hexdigest()
