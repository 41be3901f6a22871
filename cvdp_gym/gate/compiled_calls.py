"""What Icarus compiled: every system task and function each source file calls, read from
the compiled simulation itself.

The gate reads the answer's text with slang; Icarus compiles it with its own parser, and
where the two could differ (a construct one recovers from and the other compiles), the
compiled image has the last word. ``vvp``'s text names each call with the file and line it
came from (``%vpi_call 4 3 "$finish_and_return"``, ``%vpi_func``, ``.sfunc`` in nets) and
ends with the table of file names, so the calls of the answer's own files can be checked
against its kind's allowlist (:mod:`.system_tasks`) after the compile, before its result
counts.

Contract: ``CALLS_FILE`` is the name a flow's script writes the image's call lines to
(``calls_command(exe)``: a shell command, run after the compile and before the simulation);
``compiled_findings(text, answer_files, kind)`` reads them back and returns one
:class:`~.findings.Finding` per call outside the allowlist made by one of ``answer_files``
(file names as the compile command named them).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping

from cvdp_gym.gate.findings import Finding
from cvdp_gym.gate.system_tasks import allowed

__all__ = ["CALLS_FILE", "calls_command", "compiled_findings"]

#: Where a flow's script keeps the compiled image's call lines and file table.
CALLS_FILE = "compiled.calls"
_CALL = re.compile(r'(?:%vpi_call(?:/\w+)?|%vpi_func(?:/\w+)?|\.sfunc(?:/\w+)?)\s+(\d+)\s+(\d+)\s+(?:\d+\s*,?\s*)?"(\$[^"]+)"')
_FILE_TABLE = re.compile(r"^:file_names (\d+);", re.M)
_FILE_NAME = re.compile(r'^\s+"(.*)";\s*$')


def calls_command(exe: str) -> str:
    """The shell command that keeps ``exe``'s call lines and file table in :data:`CALLS_FILE`."""
    return f"grep -aE '%vpi_call|%vpi_func|\\.sfunc|^:file_names|^    \"' {exe} > {CALLS_FILE} 2>/dev/null || true"


def compiled_findings(
    text: str, answer_files: Iterable[str], kind: str = "design", *, first_lines: Mapping[str, int] | None = None,
) -> list[Finding]:
    """The calls of ``answer_files`` in a compiled image's call lines that ``kind`` may not make.
    ``first_lines``: where the answer starts in a file that holds more than the answer
    (VerilogEval v1 compiles the test bench and the answer as one file); lines before it are
    not the answer's, and the findings count lines from it."""
    table = _FILE_TABLE.search(text)
    if table is None:
        return []
    names = [m.group(1) for line in text[table.end():].splitlines() if (m := _FILE_NAME.match(line))]
    own = {posixpath.normpath(name) for name in answer_files} | {posixpath.basename(name) for name in answer_files}
    findings = []
    for match in _CALL.finditer(text[: table.start()]):
        index, line, name = int(match.group(1)), int(match.group(2)), match.group(3)
        source = names[index] if index < len(names) else ""
        first = (first_lines or {}).get(source, 1)
        if (posixpath.normpath(source) in own or posixpath.basename(source) in own) and line >= first and not allowed(name, kind):
            findings.append(Finding(
                source, line - first + 1, f"`{name}`: not one of the system tasks a {kind} answer may call (Icarus compiled it)",
            ))
    return sorted(set(findings), key=lambda f: (f.path, f.line, f.what))
