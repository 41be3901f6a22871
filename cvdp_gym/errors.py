"""Every error ``cvdp_gym`` raises on purpose: one root, a class per kind of trouble.

Contract: an error the package raises because of what it was given (a dataset, an option, a
path, a harness, a patch, an action) or because this machine cannot do what was asked (no
sandbox, no toolchain, no hub) is a ``CvdpGymError``, so ``except CvdpGymError`` catches
all of them and nothing else. Each concrete class also subclasses the stdlib error the
package raised before this hierarchy existed (``ValueError``, ``RuntimeError``,
``KeyError``, ``TypeError``, ``ImportError``), so an ``except ValueError`` written against
older code still catches what it caught.

The classes take a message and nothing else (``RequestFailed`` keeps it as ``reason``
too), so they pickle as stdlib exceptions do: errors cross process and Ray boundaries. Add
no ``__init__`` parameter without a ``__reduce__``.

Not here on purpose: ``CheckInterrupted`` (a ``KeyboardInterrupt``: Ctrl-C is not an
error, and ``except Exception`` must not swallow it) and internal invariants (``assert``).
The old homes of these classes (``cvdp_gym.harness.compose.HarnessError``,
``cvdp_gym.data.DatasetError``, ...) keep exporting them.
"""

from __future__ import annotations

import unicodedata
from typing import Any

__all__ = [
    "AgentInstallError",
    "ArgumentTypeError",
    "ConfigError",
    "CvdpGymError",
    "DatasetError",
    "DebugError",
    "GradingError",
    "HarnessError",
    "HubUnavailable",
    "JsonlError",
    "MissingDependencyError",
    "MissingPathError",
    "NodeToolchainError",
    "OneLineError",
    "PatchError",
    "RecordError",
    "RepoUnavailable",
    "RequestFailed",
    "ResponsesFileError",
    "RootBuildError",
    "RunDirError",
    "SandboxDied",
    "SandboxUnavailable",
    "UnavailableError",
    "UnknownProblemError",
    "UnsafePathError",
    "UsageError",
    "WorkerLost",
    "WorkspaceError",
    "one_line",
]

#: Unicode categories escaped in messages: control, format (bidi overrides can reorder
#: what a terminal shows), surrogates, line and paragraph separators.
_ESCAPED = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: Longest error message kept: a message quotes user data (an id could be a megabyte).
MESSAGE_CHARS = 1000


def one_line(text: str) -> str:
    """``text`` with line breaks and control characters escaped, and at most ``MESSAGE_CHARS``.

    Error messages quote user data (ids, paths, patch lines); the CLI prints them as one
    line, and a raw newline or escape sequence in an id must not break that (or the terminal).
    """
    text = "".join(
        c.encode("unicode_escape").decode("ascii") if unicodedata.category(c) in _ESCAPED else c
        for c in text[: MESSAGE_CHARS * 2]
    )
    if len(text) > MESSAGE_CHARS:  # cut after escaping: the result is one_line's own fixed point
        text = text[: MESSAGE_CHARS - 3] + "..."
    return text


class CvdpGymError(Exception):
    """Root of every error ``cvdp_gym`` raises on purpose."""


# -- what the caller gave --------------------------------------------------------------


class ConfigError(CvdpGymError, ValueError):
    """An option or argument value the package does not accept: an unknown sandbox,
    executor, reward, feedback mode, toolchain or tool format, a count below its minimum,
    or a selection that leaves nothing to work on."""


class ArgumentTypeError(CvdpGymError, TypeError):
    """An argument of the wrong type: an action that is not text (or a chat message), a
    command that is not a string, a deadline that is not a number."""


class UnknownProblemError(CvdpGymError, KeyError):
    """A problem id the dataset does not hold."""


class MissingPathError(CvdpGymError, FileNotFoundError):
    """A file or folder the caller named does not exist."""


class RecordError(CvdpGymError, ValueError):
    """A CVDP record of the wrong shape (a reader wraps it in a ``DatasetError`` that
    names the file and line)."""


class UnsafePathError(CvdpGymError, ValueError):
    """A file path that would leave the workspace: absolute, with ``..``, or empty."""


class WorkspaceError(UnsafePathError):
    """A workspace path that would leave it (``..``, absolute, or through a symlink)."""


class HarnessError(CvdpGymError, ValueError):
    """The harness files themselves are malformed (not the candidate's fault)."""


class PatchError(CvdpGymError, ValueError):
    """A diff that cannot be applied to the text it was given."""


class OneLineError(CvdpGymError, ValueError):
    """An error whose message is always one printable line (see ``one_line``): what the
    CLI prints about a file it was given."""

    def __init__(self, message: object = "") -> None:
        super().__init__(one_line(str(message)))


class JsonlError(OneLineError):
    """A JSONL file or line that cannot be read; the message names the file (and line)."""


class DatasetError(OneLineError):
    """A dataset that cannot be read; the message (one line) names the file and line."""


class ResponsesFileError(OneLineError):
    """A responses file that cannot be read; the message (one line) names the file and line."""


class RunDirError(OneLineError):
    """An eval run folder that cannot be read back (``compare``): no results file, a
    malformed line, rows of another format; the message (one line) names the file."""


class DebugError(OneLineError):
    """What ``cvdp-gym debug`` cannot use: an answer file it cannot read or that holds no
    code, a run folder without that problem's answer, a debug folder that is not empty
    (or not one), a shell the machine cannot open; the message (one line) says which."""


class UsageError(CvdpGymError, RuntimeError):
    """An object used out of order: ``step`` before ``reset`` or after the episode ended,
    a closed workspace or executor."""


# -- what this machine cannot do -------------------------------------------------------


class UnavailableError(CvdpGymError, RuntimeError):
    """Something this machine lacks; the message says how to get it."""


class SandboxUnavailable(UnavailableError):
    """bubblewrap is missing or cannot create namespaces here (or no Docker engine answers)."""


class SandboxDied(SandboxUnavailable):
    """The sandbox was killed from outside in the middle of a run (not by its time limit, its
    memory limit or a cancel): the machine failed, so the run says nothing about the answer.
    ``result``: the run's ``SandboxResult`` so far, for a caller that killed it on purpose (the
    agentic workspace's quota watchdog)."""

    result: Any = None


class HubUnavailable(UnavailableError):
    """The hub cannot be reached (or the package is missing); the message says what to do."""


class RootBuildError(UnavailableError):
    """The simulation root could not be built; the message names the step and what to check."""


class NodeToolchainError(UnavailableError):
    """A worker (a Ray node, a process) cannot grade: no toolchain, or a different one."""


class RepoUnavailable(UnavailableError):
    """A repository-context problem's repository, commit or ``external/`` folder cannot be
    found (or git cannot read it); the message says where it looked."""


class AgentInstallError(UnavailableError):
    """A command-line agent could not be installed for the sandbox (the installer's output
    is in the message)."""


class MissingDependencyError(CvdpGymError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


# -- while grading or asking a model ---------------------------------------------------


class GradingError(CvdpGymError, RuntimeError):
    """Grading infrastructure failed (not the answer's fault)."""


class WorkerLost(GradingError):
    """A job's worker died more times than the executor retries."""


class RequestFailed(CvdpGymError):
    """A chat request that failed for good (after retries, or with a non-retryable status)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
