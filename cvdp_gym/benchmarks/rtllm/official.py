"""RTLLM's own ``auto_run.py`` on answers, with Icarus standing in for Synopsys VCS.

Contract: ``RtllmOfficial().run(answers, ...)`` returns one ``BenchmarkVerdict`` per answer,
keyed by ``Answer.index``, with ``reading = {"compiled": bool, "auto_run": bool}``: the
design's ``syntax_success`` and ``func_success`` (each 0 or 1: one answer per design per
run) in the ``result_dic`` the clone's own ``auto_run.py`` prints. A design that
``auto_run.py`` never evaluates (v2.0's list names ``freq_divfrac``, the folder is
``freq_divbyfrac``) gets no verdict (``missing``), nor one whose makefile never compiles
the answer (``freq_div``'s names a file on the authors' machine instead of ``${TEST_DESIGN}``).

How it runs. ``auto_run.py`` expects a flat layout (``<design>/makefile`` under its working
folder), compiles ``{path}/t<N>/<design>.v`` through each design's makefile (it replaces
``${TEST_DESIGN}`` with that path, then runs ``make vcs``, counts ``simv`` as compiled,
runs ``make sim > output.txt`` and counts "Pass"/"pass" in it within 8 s) and hard-codes
``path``. So, per round (the k-th answer of every design), in ``WORK/rtllm/round<k>``:

- ``bench/``: a flat, writable copy of the clone's design folders that have an answer this
  round, and of ``auto_run.py`` with its ``path = "..."`` line set to ``/work/answers/``
  (the only change; its ``design_name`` list is the clone's);
- ``answers/t1/<design>.v``: the answers;
- in the sandbox (the root's Icarus, as our flow uses): ``cd /work/bench && python3 auto_run.py``.

The stand-ins, on ``PATH`` at ``/parity/bin``: ``vcs`` compiles the same files with
``iverilog -g2012`` (plus ``/parity/timescale.v``, `` `timescale 1ns/1ns``, for VCS's
``-timescale=1ns/1ns``), writes its ``-l`` log and, when it compiles, a ``simv`` that runs
``vvp -n`` on the build (bounded at 20 s so a hung design ends: ``auto_run.py`` would wait
for it, and reads its verdict at 8 s). Both keep a copy of their logs in ``keep/`` (the
makefile's ``clean`` deletes them). ``auto_run.py`` imports ``tqdm`` and ``scipy``: the real
packages are provided to the root's ``python3`` (:mod:`.python_packages`).
"""

from __future__ import annotations

import ast
import re
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cvdp_gym.benchmarks.rtllm.data import design_folders
from cvdp_gym.errors import ConfigError
from cvdp_gym.parity.answers import Answer
from cvdp_gym.parity.benchmarks import python_packages
from cvdp_gym.parity.benchmarks.sandboxed import (
    BenchmarkVerdict,
    machine,
    machine_reason,
    missing,
    run_sandboxed,
    verdict,
    write_executable,
)
from cvdp_gym.sandbox.base import Limits, Mount, Sandbox

AUTO_RUN = "auto_run.py"
ANSWERS = "/work/answers/"
_PATH_LINE = re.compile(r"(?m)^path[ \t]*=[ \t]*(['\"]).*\1[ \t]*$")
#: How long the stand-in ``simv`` may run (``auto_run.py`` decides at 8 s).
SIMV_LIMIT_S = 20

_VCS = r'''#!/bin/bash
# Parity stand-in for Synopsys VCS (not available): compiles the same files with Icarus
# (-g2012; /parity/timescale.v stands for -timescale=1ns/1ns) and, when they compile,
# writes ./simv, which runs the build with `vvp -n`.
log=/dev/null
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    -l) log="$2"; shift 2 ;;
    -*|+*) shift ;;
    *) files+=("$1"); shift ;;
  esac
done
design=$(basename "$PWD")
iverilog -g2012 -o simv.vvp /parity/timescale.v "${files[@]}" > "$log" 2>&1
status=$?
cp "$log" "/work/keep/$design.compile.log" 2>/dev/null
cat "$log"
if [ $status -eq 0 ] && [ -f simv.vvp ]; then
  cp /parity/simv simv
fi
exit $status
'''
_SIMV = r'''#!/bin/bash
# Parity stand-in for VCS's simv: runs the Icarus build, bounded (see rtllm.py).
log=/dev/null
[ "$1" = "-l" ] && log="$2"
design=$(basename "$PWD")
timeout {limit} vvp -n "$(dirname "$0")/simv.vvp" 2> >(tee -a "/work/keep/$design.stderr.log" >&2) | tee "$log" "/work/keep/$design.run.log"
'''


def set_path(source: str, path: str = ANSWERS) -> str:
    """``auto_run.py`` with its hard-coded ``path = "..."`` set to ``path``."""
    found = _PATH_LINE.findall(source)
    if len(found) != 1:
        raise ConfigError(f"{AUTO_RUN}: expected one line `path = \"...\"` to set, found {len(found)}")
    return _PATH_LINE.sub(f'path = "{path}"', source)


def read_result_dic(output: str) -> dict[str, dict[str, Any]] | None:
    """The ``result_dic`` ``auto_run.py`` printed: ``{design: {"syntax_success", "func_success"}}``."""
    for line in reversed(output.splitlines()):
        if not line.startswith("{"):
            continue
        try:
            value = ast.literal_eval(line)
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, dict) and all(isinstance(v, dict) and "func_success" in v for v in value.values()):
            return value
    return None


def compiles_the_answer(design: Path) -> bool:
    """Whether a design's makefile compiles the file ``auto_run.py`` puts in ``${TEST_DESIGN}``
    (freq_div's names a path on the authors' machine instead)."""
    try:
        return "${TEST_DESIGN}" in (design / "makefile").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


class RtllmOfficial:
    """RTLLM's ``auto_run.py`` from a user's clone, VCS stood in for by Icarus."""

    benchmark = "rtllm"
    reading_keys = ("compiled", "auto_run")

    def reading_passed(self, reading: dict[str, Any]) -> bool:
        """``auto_run.py``'s rule: "Pass" or "pass" in the output."""
        return bool(reading.get("auto_run"))

    def check(self, clone: Path) -> None:
        if not (clone / AUTO_RUN).is_file() or not design_folders(clone):
            raise ConfigError(f"{clone} is not a clone of hkust-zhiyao/RTLLM: no {AUTO_RUN} and design folders")

    def run(
        self,
        answers: Sequence[Answer],
        *,
        sandbox: Sandbox,
        clone: Path,
        work: Path,
        jobs: int = 1,
        on_done: Callable[[Answer], None] = lambda _: None,
    ) -> dict[int, BenchmarkVerdict]:
        self.check(clone)
        source = (clone / AUTO_RUN).read_text(encoding="utf-8")
        auto_run = set_path(source)
        parity = work / "shims-rtllm"
        write_executable(parity / "bin" / "vcs", _VCS)
        write_executable(parity / "simv", _SIMV.replace("{limit}", str(SIMV_LIMIT_S)))
        (parity / "timescale.v").write_text("`timescale 1ns/1ns\n", encoding="utf-8")
        version, absent = python_packages.missing_modules(sandbox, python_packages.top_level_imports(source))
        pylib = python_packages.provide(absent, version) if absent else None
        folders = {f.name: f for f in design_folders(clone)}
        rounds: dict[int, list[Answer]] = defaultdict(list)
        seen: dict[str, int] = defaultdict(int)
        for answer in answers:
            design = str(answer.problem.extra.get("name") or answer.problem.id)
            rounds[seen[design]].append(answer)
            seen[design] += 1

        def one(item: tuple[int, list[Answer]]) -> dict[int, BenchmarkVerdict]:
            number, batch = item
            out = self._round(
                batch, folders, auto_run, sandbox=sandbox, clone=clone, parity=parity, pylib=pylib,
                folder=work / "rtllm" / f"round{number}", simulator=batch[0].problem.toolchain,
            )
            for answer in batch:
                on_done(answer)
            return out

        verdicts: dict[int, BenchmarkVerdict] = {}
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for part in pool.map(one, sorted(rounds.items())):
                verdicts.update(part)
        return verdicts

    def _round(
        self, batch: list[Answer], folders: dict[str, Path], auto_run: str, *, sandbox: Sandbox, clone: Path,
        parity: Path, pylib: Path | None, folder: Path, simulator: str,
    ) -> dict[int, BenchmarkVerdict]:
        shutil.rmtree(folder, ignore_errors=True)
        bench, given, keep = folder / "bench", folder / "answers" / "t1", folder / "keep"
        for path in (bench, given, keep):
            path.mkdir(parents=True)
        (bench / AUTO_RUN).write_text(auto_run, encoding="utf-8")
        out: dict[int, BenchmarkVerdict] = {}
        designs: dict[str, Answer] = {}
        for answer in batch:
            design = str(answer.problem.extra.get("name") or answer.problem.id)
            if design not in folders:
                out[answer.index] = machine(design, f"the clone has no design folder {design}")
                continue
            shutil.copytree(folders[design], bench / design)
            (given / f"{design}.v").write_text(answer.files.get(answer.problem.targets[0], ""), encoding="utf-8")
            designs[design] = answer
        if not designs:
            return out
        mounts = [Mount(pylib, "/pylib")] if pylib is not None else []
        start = time.monotonic()
        result = run_sandboxed(
            sandbox, "cd /work/bench && python3 auto_run.py > /work/auto_run.out 2> /work/auto_run.err",
            clone=clone, parity=parity, work=folder, simulator=simulator, extra_mounts=mounts,
            limits=Limits(wall_s=60.0 + (SIMV_LIMIT_S + 10.0) * len(designs), processes=1024),
            env={"PYTHONPATH": "/pylib", "PYTHONDONTWRITEBYTECODE": "1"} if pylib is not None else {"PYTHONDONTWRITEBYTECODE": "1"},
        )
        seconds = (time.monotonic() - start) / len(designs)
        (folder / "sandbox.log").write_text(result.output, encoding="utf-8")
        printed = (folder / "auto_run.out").read_text(encoding="utf-8", errors="replace") if (folder / "auto_run.out").exists() else ""
        table = read_result_dic(printed)
        for design, answer in designs.items():
            if table is None:
                err = (folder / "auto_run.err").read_text(encoding="utf-8", errors="replace")[-2000:] if (folder / "auto_run.err").exists() else ""
                out[answer.index] = machine(design, machine_reason(result, f"{AUTO_RUN} printed no result_dic"), err or result.output)
            elif design not in table:
                out[answer.index] = missing(design, f"{AUTO_RUN} never evaluates {design}: its design_name list does not name it")
            elif not compiles_the_answer(folders[design]):
                out[answer.index] = missing(
                    design, f"{design}'s makefile never compiles the answer (its vcs recipe names a fixed file, not "
                    "${TEST_DESIGN}): auto_run.py's verdict is not on this answer",
                )
            else:
                compiled = int(table[design].get("syntax_success", 0)) > 0
                passed = int(table[design].get("func_success", 0)) > 0
                logs = [keep / f"{design}.{name}.log" for name in ("compile", "run", "stderr")]
                reason = "pass" if passed else ("compiled, no pass" if compiled else "did not compile")
                out[answer.index] = verdict(
                    design, passed, {"compiled": compiled, "auto_run": passed}, reason=reason, logs=logs, seconds=seconds,
                )
        return out


#: This plug-in's official flow (:mod:`cvdp_gym.plugins`).
OFFICIAL_FLOWS = (RtllmOfficial(),)
