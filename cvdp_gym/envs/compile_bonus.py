"""The compile bonus's evidence: the ``iverilog`` commands an agent's bash command ran,
compiled again by the environment itself.

Everything inside the sandbox can be forged: the model writes a command's text, its output
and exit status (``echo iverilog is great`` mentions the compiler, a failing compile can hide
its output and exit 0). So the bonus rests on a compile the environment runs: the command is
read as a shell reads it (logical lines, here-document bodies skipped, simple commands, the
command word after assignments and ``time``/``env``/``timeout N``, ``cd`` followed), each
``iverilog`` call that names one of the problem's target files among its sources (or in its
``-c``/``-f`` file) is run again in a sandbox of its own, ``/code`` and ``/tmp`` read-only,
its output to ``/dev/null``, and only a clean exit pays. A call that could run a program of
the model's own instead of Icarus's (``-B``, a ``-t`` other than ``vvp``/``null``) or that
compiles nothing (``-V``, ``-h``, ``-E``) is never replayed.

Contract: ``compiles_a_target(command, cwd, workspace, targets, limits)`` is the bonus's
evidence; its parts: ``iverilog_commands(command, cwd)`` → ``[(cwd, arguments)]``;
``replay_plan(arguments, cwd, workspace)`` → the arguments to replay and the sources they
read (``/code/...``), or None; ``replays_cleanly(workspace, arguments, cwd, limits)``.
"""

from __future__ import annotations

import glob
import posixpath
import re
import shlex
from pathlib import Path

from cvdp_gym.sandbox.base import Limits, Mount
from cvdp_gym.sandbox.scratch import make_scratch_dir, remove_tree
from cvdp_gym.sandbox.workspace import MOUNT_POINT, Workspace, WorkspaceLimits

__all__ = ["ERROR_WORD", "MAX_COMPILE_REPLAYS", "compiles_a_target", "iverilog_commands", "replay_plan", "replays_cleanly"]

ERROR_WORD = re.compile(r"\berror\b", re.IGNORECASE)

#: Words that may stand before a command's own word (``time iverilog ...``), and variable assignments.
_PREFIX_WORDS = frozenset({"time", "command", "exec", "nice", "nohup", "env", "builtin"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_DURATION = re.compile(r"^\d+(\.\d+)?[smhd]?$")
#: A here-document's opening (``<<EOF``, ``<<-'EOF'``; not a here-string ``<<<``).
_HEREDOC = re.compile(r"(?<!<)<<-?(?!<)\s*(['\"]?)([A-Za-z0-9_.-]+)\1")
#: iverilog's options that take a value (getopt: attached, ``-g2012``, or the next word); of
#: those, the ones whose file a replay must not write (``-o`` becomes ``/dev/null``), and the
#: command files it reads sources from.
_IVERILOG_VALUE_OPTIONS = frozenset("BcDdfglILMmNoPpsTtWyY")
_IVERILOG_WRITES = frozenset("oMN")
_IVERILOG_LISTS = frozenset("cf")
#: Options that make an iverilog run no compile: version, help, preprocessing only.
_NOT_A_COMPILE = frozenset("VhE")
#: The code generators a replay may name (``-t``); ``-B`` (where the compiler's own parts
#: are) is never replayed: both could run a program of the model's own instead of Icarus's.
_TARGETS = frozenset({"vvp", "null"})
#: iverilog commands of one bash command the environment compiles again, at most.
MAX_COMPILE_REPLAYS = 4

def compiles_a_target(command: str, cwd: str, workspace: Workspace, targets: set[str], limits: WorkspaceLimits) -> bool:
    """Whether one of ``command``'s ``iverilog`` calls (started in ``cwd``) that reads one of
    ``targets`` (``/code/...``) compiles cleanly when run again here (at most
    :data:`MAX_COMPILE_REPLAYS` of them)."""
    replays = 0
    for where, arguments in iverilog_commands(command, cwd):
        plan = replay_plan(arguments, where, workspace)
        if plan is None or not targets & plan[1]:
            continue
        replays += 1
        if replays_cleanly(workspace, plan[0], where, limits):
            return True
        if replays >= MAX_COMPILE_REPLAYS:
            break
    return False


def replays_cleanly(workspace: Workspace, arguments: list[str], cwd: str, limits: WorkspaceLimits) -> bool:
    """Run ``iverilog arguments`` in ``cwd`` in a sandbox of its own, the workspace's ``/code``
    and ``/tmp`` read-only: exit 0 and no "error" in its output."""
    scratch = make_scratch_dir("lint")
    try:
        temp = scratch / "var_tmp"
        temp.mkdir()
        outcome = workspace.sandbox.run(
            ["iverilog", *arguments],
            mounts=[
                Mount(workspace.path, MOUNT_POINT),
                Mount(workspace.scratch / "tmp", "/tmp"),
                Mount(temp, "/var/tmp", writable=True),  # iverilog's own temporary files
            ],
            scratch=scratch / "sandbox",
            cwd=cwd,
            env={"HOME": MOUNT_POINT, "LANG": "C.UTF-8", "TMPDIR": "/var/tmp"},
            limits=Limits(
                wall_s=limits.command_timeout_s, memory_mb=limits.memory_mb, processes=64, file_size_mb=64,
                output_bytes=65_536,
            ),
        )
    finally:
        remove_tree(scratch)
    return outcome.returncode == 0 and not outcome.timed_out and not ERROR_WORD.search(outcome.output)


def iverilog_commands(command: str, cwd: str) -> list[tuple[str, list[str]]]:
    """Each ``iverilog`` simple command of a bash ``command`` started in ``cwd``: the folder it
    runs in and its arguments (as the shell splits them, unexpanded). Here-document bodies are
    skipped, ``cd`` to a literal folder is followed (a ``cd`` it cannot follow ends the list),
    a line the shell's quoting cannot split is skipped; assignments and ``time``, ``env``,
    ``timeout N``... before the command word are passed over."""
    found: list[tuple[str, list[str]]] = []
    where: str | None = cwd
    for line in _logical_lines(command):
        for words in _simple_commands(line):
            if where is None:
                return found
            head = _command_word(words)
            if head is None:
                continue
            name, arguments = words[head], words[head + 1:]
            if name == "cd":
                target = arguments[0] if arguments else MOUNT_POINT
                where = None if any(c in target for c in "$`~") or target == "-" else posixpath.normpath(posixpath.join(where, target))
            elif posixpath.basename(name) == "iverilog":
                found.append((where, arguments))
    return found


def _logical_lines(command: str) -> list[str]:
    """``command``'s lines, ``\\``-continued lines joined and here-document bodies left out."""
    lines: list[str] = []
    pending: list[str] = []
    for line in command.replace("\\\n", " ").split("\n"):
        if pending:
            if line.strip() == pending[0]:
                pending.pop(0)
            continue
        lines.append(line)
        pending = [match.group(2) for match in _HEREDOC.finditer(line)]
    return lines


def _simple_commands(line: str) -> list[list[str]]:
    """One line's simple commands, split at control operators (``;``, ``&&``, ``|``, ``(``...),
    each its words (redirections kept as words); none when the line cannot be split."""
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return []
    commands: list[list[str]] = []
    current: list[str] = []
    for token in tokens:
        if token and set(token) <= set(";&|()"):
            if current:
                commands.append(current)
            current = []
        else:
            current.append(token)
    if current:
        commands.append(current)
    return commands


def _command_word(words: list[str]) -> int | None:
    """The index of a simple command's own word (after assignments and prefix commands)."""
    index = 0
    while index < len(words):
        word = words[index]
        if _ASSIGNMENT.match(word) or word in _PREFIX_WORDS:
            index += 1
        elif word == "timeout":  # timeout [options] DURATION COMMAND...
            index += 1
            while index < len(words) and not _DURATION.match(words[index]):
                index += 1
            index += 1
        else:
            return index
    return None


def _is_redirection(word: str) -> bool:
    return bool(word) and set(word) <= set("<>&") and ("<" in word or ">" in word)


def replay_plan(arguments: list[str], cwd: str, workspace: Workspace) -> tuple[list[str], set[str]] | None:
    """The arguments to compile ``arguments`` again (output to ``/dev/null``, no other file
    written; globs expanded in the workspace) and the source files it reads (absolute, with
    those its ``-c``/``-f`` command files name); None for a run that is no compile (``-V``,
    ``-h``, ``-E``), that cannot be replayed exactly (an argument with ``$`` or a backquote) or
    that could run parts of the model's own (``-B``, a ``-t`` other than ``vvp``/``null``)."""
    replay: list[str] = []
    sources: set[str] = set()
    index = 0
    while index < len(arguments):
        word = arguments[index]
        if "$" in word or "`" in word:
            return None
        if _is_redirection(word):  # a redirection and its target (``> log``, ``2>&1``): the shell's
            index += 2
            continue
        if word.isdigit() and index + 1 < len(arguments) and _is_redirection(arguments[index + 1]):
            index += 1  # the descriptor of ``2> log``
            continue
        if word.startswith("-") and len(word) > 1:
            # As getopt reads it: flags may be grouped (``-vE``); a value option takes the rest
            # of the word, or the next word.
            flags = ""
            for at, option in enumerate(word[1:], start=2):
                if option in _NOT_A_COMPILE:
                    return None
                if option not in _IVERILOG_VALUE_OPTIONS:
                    flags += option
                    continue
                attached = at < len(word)
                if not attached and index + 1 >= len(arguments):
                    return None
                value = word[at:] if attached else arguments[index + 1]
                if option == "B" or (option == "t" and value not in _TARGETS):
                    return None  # the compiler's own parts, or a code generator, from elsewhere
                if option not in _IVERILOG_WRITES:
                    replay += [f"-{option}{value}"]
                if option in _IVERILOG_LISTS:
                    sources |= _listed_sources(value, cwd, workspace)
                if option == "l":  # a library file: a source too
                    sources.add(posixpath.normpath(posixpath.join(cwd, value)))
                index += 0 if attached else 1
                break
            if flags:
                replay.append(f"-{flags}")
            index += 1
            continue
        expanded = _expand(word, cwd, workspace)
        replay += expanded
        sources |= {posixpath.normpath(posixpath.join(cwd, path)) for path in expanded}
        index += 1
    return [*replay, "-o", "/dev/null"], sources


def _host_path(path: str, workspace: Workspace) -> Path | None:
    """Where a sandbox path under ``/code`` or ``/tmp`` lies on the host (None elsewhere)."""
    for mount, host in ((MOUNT_POINT, workspace.path), ("/tmp", workspace.scratch / "tmp")):
        if path == mount:
            return host
        if path.startswith(mount + "/"):
            return host / path[len(mount) + 1:]
    return None


def _expand(word: str, cwd: str, workspace: Workspace) -> list[str]:
    """``word`` as the shell expands a glob in the workspace: the matching sandbox paths,
    sorted, or the word itself when it has no glob or matches nothing."""
    if not any(c in word for c in "*?["):
        return [word]
    absolute = posixpath.normpath(posixpath.join(cwd, word))
    host = _host_path(absolute, workspace)
    root = _host_path(MOUNT_POINT if absolute.startswith(MOUNT_POINT) else "/tmp", workspace)
    if host is None or root is None:
        return [word]
    mount = MOUNT_POINT if absolute.startswith(MOUNT_POINT) else "/tmp"
    matches = sorted(glob.glob(str(host)))
    return [posixpath.join(mount, Path(match).relative_to(root).as_posix()) for match in matches] or [word]


def _listed_sources(name: str, cwd: str, workspace: Workspace) -> set[str]:
    """The files an iverilog command file names (its words that are no ``+`` or ``-`` option)."""
    host = _host_path(posixpath.normpath(posixpath.join(cwd, name)), workspace)
    if host is None or not host.is_file() or host.is_symlink():
        return set()
    try:
        text = host.read_text(errors="replace")[:65_536]
    except OSError:
        return set()
    words = [line.split("//", 1)[0].split("#", 1)[0].split() for line in text.splitlines()]
    return {
        posixpath.normpath(posixpath.join(cwd, word))
        for line in words for word in line if not word.startswith(("+", "-"))
    }
