"""VerilogEval v1's own check on answers: the clone's ``verilog_eval/execution.py``'s ``check_correctness``.

Contract: ``VerilogEvalV1Official().run(answers, ...)`` returns one ``BenchmarkVerdict`` per
answer, keyed by ``Answer.index``, with ``reading = {"result": R}``: the ``result`` string
``check_correctness(problem, completion, 30.0)`` returned (``passed``, ``failed: compile
error.``, ``timed out``...). ``problem`` is the record of the clone's own
``data/VerilogEval_<Task>.jsonl`` (the problem's source file), ``completion`` the answer.

Enabling the execution call: in its repository the ``iverilog``/``vvp`` call of
``check_correctness`` sits inside a string literal (lines 79-112 of ``execution.py``),
disabled on purpose, and the README tells users to enable it once they have read the
warning and sandboxed the run. Here that is done at run time in a temporary copy of the
``verilog_eval`` package (the two lines holding only the ``\"\"\"`` that open and close the
block after ``# BEGIN CODE BLOCK`` are removed), never in the user's clone; the copy must
then parse as Python.

Each answer is checked by its own ``python3`` (the root's) in the sandbox, with Icarus 12
bound in, so an answer that hangs (``check_correctness`` kills only the shell, not ``vvp``)
takes nothing with it into the next check. Two details of the run, neither touching a
verdict: the driver sets multiprocessing's start method to ``fork`` (Python 3.14's default
is ``forkserver``, which cannot pickle the nested function ``check_correctness`` runs;
``fork`` was the default of the Pythons the script was written for), and ``iverilog`` and
``vvp`` are reached through wrappers on ``PATH`` that run the real tools and keep a copy
of what they printed (``execution.py`` keeps no log), for the disagreement printout.
"""

from __future__ import annotations

import ast
import json
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cvdp_gym.errors import ConfigError
from cvdp_gym.jsonl import JsonlError, iter_json
from cvdp_gym.parity.answers import Answer
from cvdp_gym.parity.benchmarks.sandboxed import (
    BenchmarkVerdict,
    machine,
    machine_reason,
    run_sandboxed,
    verdict,
    write_executable,
)
from cvdp_gym.sandbox.base import Limits, Sandbox

#: ``evaluate_functional_correctness``'s default time limit for one check.
TIMEOUT_S = 30.0
PASSED = "passed"
EXECUTION = Path("verilog_eval") / "execution.py"

_DRIVER = '''"""Parity driver: one check_correctness call of the clone's own (enabled) execution.py."""
import json, multiprocessing, sys, time
multiprocessing.set_start_method("fork")  # the nested target needs fork (Python 3.14 defaults to forkserver)
sys.path.insert(0, "/parity/ve1")
from verilog_eval.execution import check_correctness
job = json.load(open("/work/job.json"))
start = time.monotonic()
out = check_correctness(job["problem"], job["completion"], job["timeout"])
json.dump({"result": out["result"], "passed": out["passed"], "seconds": time.monotonic() - start}, open("/work/result.json", "w"))
'''

_WRAPPER = '''#!/bin/bash
# Parity: runs the real {tool} and keeps a copy of what it printed (execution.py keeps none).
echo "\\$ {tool} $*" >> /work/{tool}.stdout.log
exec > >(tee -a /work/{tool}.stdout.log) 2> >(tee -a /work/{tool}.stderr.log >&2)
exec /usr/bin/{tool} "$@"
'''


def enable_execution(source: str) -> str:
    """``execution.py`` with its execution block out of the string literal around it."""
    lines = source.split("\n")
    begin = next((i for i, line in enumerate(lines) if line.strip() == "# BEGIN CODE BLOCK"), None)
    end = next((i for i, line in enumerate(lines) if line.strip() == "# END CODE BLOCK"), None)
    if begin is None or end is None or end <= begin:
        raise ConfigError("verilog_eval/execution.py: no '# BEGIN CODE BLOCK' ... '# END CODE BLOCK' to enable")
    opening = next((i for i in range(begin + 1, end) if lines[i].strip()), None)
    closing = next((i for i in range(end - 1, begin, -1) if lines[i].strip()), None)
    if opening is not None and closing is not None and opening < closing and lines[opening].strip() == lines[closing].strip() == '"""':
        lines = lines[:opening] + lines[opening + 1:closing] + lines[closing + 1:]
    enabled = "\n".join(lines)
    try:
        ast.parse(enabled)
    except SyntaxError as exc:
        raise ConfigError(f"verilog_eval/execution.py does not parse once its execution block is enabled: {exc}") from None
    return enabled


def _records(path: Path) -> dict[str, dict[str, Any]]:
    try:
        return {str(r["task_id"]): r for _, r in iter_json(path) if isinstance(r, dict) and "task_id" in r}
    except (JsonlError, OSError):
        return {}


class VerilogEvalV1Official:
    """VerilogEval v1's ``check_correctness``, run from a user's clone."""

    benchmark = "verilog-eval-v1"
    reading_keys = ("result",)

    def reading_passed(self, reading: dict[str, Any]) -> bool:
        """``check_correctness``'s ``passed``."""
        return reading.get("result") == "passed"

    def check(self, clone: Path) -> None:
        if not (clone / EXECUTION).is_file():
            raise ConfigError(f"{clone} is not a clone of NVlabs/verilog-eval (release/1.0.0): no {EXECUTION}")

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
        parity = work / "shims-v1"
        package = parity / "ve1" / "verilog_eval"
        shutil.rmtree(package, ignore_errors=True)
        shutil.copytree(clone / "verilog_eval", package, ignore=shutil.ignore_patterns("__pycache__"))
        (package / "execution.py").write_text(enable_execution((clone / EXECUTION).read_text(encoding="utf-8")), encoding="utf-8")
        (parity / "driver.py").write_text(_DRIVER, encoding="utf-8")
        for tool in ("iverilog", "vvp"):
            write_executable(parity / "bin" / tool, _WRAPPER.format(tool=tool))
        sources = {p: _records(Path(p)) for p in {a.problem.source for a in answers}}

        def one(answer: Answer) -> tuple[int, BenchmarkVerdict]:
            problem = answer.problem
            task_id = str(problem.extra.get("name") or problem.id)
            record = sources[problem.source].get(task_id) or {
                "task_id": task_id,
                "prompt": next((t for p, t in problem.harness.items() if p.endswith("_prompt.sv")), ""),
                "test": next((t for p, t in problem.harness.items() if p.endswith("_test.sv")), ""),
            }
            folder = work / "verilog-eval-v1" / f"a{answer.index:05d}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            completion = answer.files.get(problem.targets[0], "")
            job = {"problem": {k: record[k] for k in ("task_id", "prompt", "test")}, "completion": completion, "timeout": TIMEOUT_S}
            (folder / "job.json").write_text(json.dumps(job), encoding="utf-8")
            result = run_sandboxed(
                sandbox, "exec python3 /parity/driver.py", clone=clone, parity=parity, work=folder, simulator="icarus12",
                limits=Limits(wall_s=TIMEOUT_S + 60.0), env={"PYTHONDONTWRITEBYTECODE": "1"},
            )
            (folder / "sandbox.log").write_text(result.output, encoding="utf-8")
            key = f"{task_id}#a{answer.index}"
            try:
                out = json.loads((folder / "result.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                on_done(answer)
                return answer.index, machine(key, machine_reason(result, "check_correctness"), result.output)
            logs = [folder / f"{tool}.{stream}.log" for tool in ("iverilog", "vvp") for stream in ("stderr", "stdout")]
            text = str(out["result"])
            on_done(answer)
            return answer.index, verdict(key, text == PASSED, {"result": text}, reason=text, logs=logs, seconds=float(out["seconds"]))

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return dict(pool.map(one, answers))



#: This plug-in's official flow (:mod:`cvdp_gym.plugins`).
OFFICIAL_FLOWS = (VerilogEvalV1Official(),)
