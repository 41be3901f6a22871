"""What a benchmark's own test-bench flow shares: the run, and a channel answers cannot forge.

VerilogEval and RTLLM grade an answer by compiling it with the benchmark's test bench and
reading what the simulation prints (``Mismatches: 0 in 20 samples``, ``Your Design
Passed``). The answer runs in the same simulation and can print those words too. Each flow
(:mod:`cvdp_gym.harness.flows`) therefore reads every run twice:

- the **official** reading: the whole log, by the benchmark's own rule, which an answer's
  own ``$display`` can sway exactly as it sways the benchmark's script (the official
  figure is computed from this, labelled);
- the **trusted** reading: only the lines the test bench printed, which decides verdicts
  and rewards. Before the run, every printing call of the test bench (``$display``,
  ``$write``, ``$strobe``, ``$monitor`` and their ``$f...`` forms) gets a per-run secret
  as its first argument (``instrument``); a line carries the secret only if the test
  bench printed it. Stripped of the secret, the log is byte for byte the one the
  benchmark's flow writes, so the official reading is unchanged.

The secret never sits where the answer could read it while it runs: the instrumented test
bench is deleted once compiled, the compiled simulation is deleted once opened and fed to
``vvp`` through a pipe, and the secret is in no command line. What is left is the simulator
process's own memory (``/proc/self/mem``), and a design can only reach that by opening a
file: the static check below lets a design read no file but its own, named by a literal, and
use no descriptor it did not open, so that is closed too (as is every file a design might
open to read the test bench's data).

Nothing outside the answer can be named from it either (``isolated_run``): before any run,
:mod:`cvdp_gym.gate.reach_in` checks what the answer names or opens outside its own
design (the test bench's or reference's instances, tasks, modules, ``$root``, ``force``,
``bind``, files, DPI); an answer it flags is ``reach_in``, never a pass. The others run with
fresh names for the test bench's and reference's modules, scopes and files
(:mod:`cvdp_gym.harness.isolation`), mapped back in the logs so the official reading is the
benchmark's own. Where the benchmark's own compilation would differ (a flagged answer, or
one that declares a module of the test bench's or reference's name), the official reading
comes from a second, untouched run.

``run_script`` runs a flow's shell script in the sandbox: the files written into a
fresh ``/work`` (the working directory, writable), the simulator the problem names bound
in (``Toolchain.binds``), no network, the sandbox's limits; it reads back the logs.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from cvdp_gym.gate import Scan
from cvdp_gym.gate.compiled_calls import compiled_findings
from cvdp_gym.harness.isolation import Isolated, isolate
from cvdp_gym.harness.results import REACH_IN, HarnessResult, ServiceResult, TestCounts
from cvdp_gym.sandbox.base import Limits, Mount, Sandbox, SandboxResult
from cvdp_gym.sandbox.paths import write_tree
from cvdp_gym.sandbox.scratch import make_scratch_dir
from cvdp_gym.toolchain import SimEnv

#: Printing system tasks whose every argument is printed, and those whose first is a file.
_PRINTERS = frozenset(
    f"{base}{radix}" for base in ("display", "write", "strobe", "monitor") for radix in ("", "b", "h", "o")
)
_FILE_PRINTERS = frozenset("f" + name for name in _PRINTERS)
_IDENT = re.compile(r"\$([A-Za-z_][A-Za-z0-9_$]*)")
#: Bytes of a log read back (a runaway answer's output beyond this is cut, from the middle).
LOG_READ_BYTES = 8 << 20
#: The working folder of a flow's run inside the sandbox.
WORK = "/work"


def fed_through_a_pipe(exe: str, command: str) -> str:
    """Shell lines that open the compiled simulation ``exe``, delete it, and run ``command``
    (which reads ``/dev/stdin``) on it through a pipe; ``$status`` is then ``command``'s exit
    status. While the design runs, no file holds the simulation (or the secret in it)."""
    return f"exec 3< {exe}; rm -f {exe}\ncat <&3 | {command} 3<&-\nstatus=$?\nexec 3<&-\n"


def new_secret() -> str:
    """A fresh per-run marker: what only the test bench's lines will carry."""
    return f"@@cvdp-{secrets.token_hex(16)}@@"


def instrument(source: str, secret: str) -> str:
    """``source`` with ``secret`` printed first by each of its printing system tasks.

    ``$display(a, b)`` becomes ``$display("<secret>", a, b)``, ``$display;`` and
    ``$display()`` become ``$display("<secret>")``, and ``$fdisplay(fd, a)`` becomes
    ``$fdisplay(fd, "<secret>", a)``. A string literal that is not consumed by a format
    prints itself, so each line prints exactly what it printed before, after the secret.
    Comments and strings are left alone.
    """
    out: list[str] = []
    i, n = 0, len(source)
    literal = f'"{secret}"'
    while i < n:
        ch = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(source[i:j])
            i = j
            continue
        if source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(source[i:j])
            i = j
            continue
        if ch == '"':
            j = _string_end(source, i)
            out.append(source[i:j])
            i = j
            continue
        if ch == "$":
            match = _IDENT.match(source, i)
            if match and match.group(1) in _PRINTERS | _FILE_PRINTERS:
                out.append(match.group(0))
                i = match.end()
                k = _skip_space(source, i)
                if k < n and source[k] == "(":
                    out.append(source[i:k + 1])
                    i = k + 1
                    if match.group(1) in _FILE_PRINTERS:  # after the file argument
                        end = _argument_end(source, i)
                        out.append(source[i:end] + f", {literal}")
                        i = end
                    elif _skip_space(source, i) < n and source[_skip_space(source, i)] == ")":
                        out.append(literal)
                    else:
                        out.append(f"{literal}, ")
                else:
                    out.append(f"({literal})")
                continue
            if match:
                out.append(match.group(0))
                i = match.end()
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _skip_space(text: str, i: int) -> int:
    """The index of the next token at or after ``i`` (white space and comments skipped)."""
    while i < len(text):
        if text[i] in " \t\r\n":
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = len(text) if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = len(text) if j < 0 else j + 2
        else:
            break
    return i


def _string_end(text: str, i: int) -> int:
    """The index just past the string literal opening at ``i``."""
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] in '"\n':
            return j + 1
        j += 1
    return len(text)


def _argument_end(text: str, i: int) -> int:
    """The index of the ``,`` or ``)`` that ends the argument starting at ``i``."""
    depth = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = _string_end(text, i)
            continue
        if text.startswith(("//", "/*"), i):
            i = _skip_space(text, i)
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif ch == "," and depth == 0:
            return i
        i += 1
    return i


@dataclass
class Reading:
    """A log read both ways: ``official`` (the secret removed: the benchmark's own log) and
    ``trusted`` (only the test bench's lines, the secret removed)."""

    official: str
    trusted: list[str]


def read_log(text: str, secret: str) -> Reading:
    """Split a simulation log into its official text and the test bench's own lines."""
    trusted = [line[len(secret):].replace(secret, "") for line in text.splitlines() if line.startswith(secret)]
    return Reading(text.replace(secret, ""), trusted)


@dataclass
class ScriptRun:
    """A flow script's run: the sandbox's result and the logs it left, read back."""

    outcome: SandboxResult
    logs: dict[str, str]
    #: Files present in the working folder afterwards (names only).
    left: frozenset[str]


def isolated_run(
    found: Scan, sources: Mapping[str, str], once: Callable[[Isolated | None, Path | None], HarnessResult],
    keep_dir: Path | None,
) -> HarnessResult:
    """A flow's verdict with nothing outside the answer nameable from it.

    ``found``: the static check of the answer; ``sources``: the test bench's and reference's
    files ({file name: text}); ``once(isolated, keep_dir)``: one run of the flow, with the
    run's names (``None``: untouched, as the benchmark's own scripts run it). A flagged
    answer is graded ``reach_in`` with the untouched run's official reading; the others run
    isolated, and an answer that declares one of the renamed modules (which changes the
    benchmark's own compilation) takes its official reading from an untouched run as well.
    """
    if found.findings:
        return reach_in_result(once(None, keep_dir), found)
    isolated = isolate(sources)
    result = once(isolated, keep_dir)
    if found.definitions & isolated.modules:
        untouched = once(None, None)
        result.official = {**untouched.official, **{k: v for k, v in result.official.items() if k.startswith("verdict_")}}
    return result


def reach_in_result(untouched: HarnessResult, found: Scan) -> HarnessResult:
    """The verdict on an answer the static check flagged: ``reach_in``, its first finding as
    the reason (every finding in the service's notes), the untouched run's official reading
    beside it. Never excused as a problem's defect: the failure is the answer's."""
    reason = found.reason
    official = {k: (REACH_IN if k.startswith("verdict_") else v) for k, v in untouched.official.items()}
    first = untouched.services[0] if untouched.services else ServiceResult("", False, None, "", None)
    service = replace(
        first, passed=False, failure_class=REACH_IN, reason=reason, tests=TestCounts(1, 0, 1),
        notes=[*first.notes, *(str(f) for f in found.findings)], failures=[],
    )
    return HarnessResult(
        problem_id=untouched.problem_id, passed=False, failure_class=REACH_IN, reason=reason, services=[service],
        wall_s=untouched.wall_s, toolchain=dict(untouched.toolchain), official=official,
    )


def compiled_check(
    result: HarnessResult, calls: str, answer_files: Iterable[str], *, first_lines: Mapping[str, int] | None = None,
) -> HarnessResult:
    """``result`` after the compiled image's word (``calls``: what the flow's script kept in
    :data:`~cvdp_gym.gate.compiled_calls.CALLS_FILE`): a system task of the answer's files that
    Icarus compiled and a design may not call makes it ``reach_in``, whatever the text's reading
    said (the two parsers could differ); the official reading is kept."""
    found = compiled_findings(calls, answer_files, first_lines=first_lines)
    if not found or result.failure_class == REACH_IN:
        return result
    return reach_in_result(result, Scan(found))


def run_script(
    sandbox: Sandbox,
    simulator: str,
    script: str,
    files: Mapping[str, str],
    logs: Iterable[str],
    *,
    limits: Limits,
    keep_dir: Path | None = None,
    sim_env: SimEnv | None = None,
) -> ScriptRun:
    """Run ``script`` (``/bin/sh -c``) in ``/work`` holding ``files``, with ``simulator``
    bound in; read back the ``logs`` it wrote (bounded, never following links). ``sim_env``:
    a cocotb environment the script runs (visible in the sandbox; not put on ``PATH``)."""
    run_dir = make_scratch_dir("tb")
    try:
        work = run_dir / "work"
        work.mkdir()
        write_tree(work, files)
        mounts = [Mount(work, WORK, writable=True)]
        mounts += [Mount(source, target) for source, target in sandbox.toolchain.binds(simulator)]
        outcome = sandbox.run(
            ["/bin/sh", "-c", script], mounts=mounts, scratch=run_dir / "scratch", cwd=WORK,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp"}, sim_env=sim_env, limits=limits,
        )
        texts = {name: read_bounded(work / name) for name in logs}
        left = frozenset(p.name for p in work.iterdir())
        if keep_dir is not None:
            shutil.copytree(run_dir, keep_dir, dirs_exist_ok=True, symlinks=True)
        return ScriptRun(outcome, texts, left)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def read_bounded(path: Path, limit: int = LOG_READ_BYTES) -> str:
    """A file's text (head and tail when longer than ``limit``); "" when missing, a link or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    with open(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size <= limit:
            data = handle.read()
        else:
            head = handle.read(limit // 2)
            handle.seek(size - limit // 2)
            data = head + f"\n... {size - limit} bytes cut ...\n".encode() + handle.read()
    return data.decode("utf-8", "replace")
