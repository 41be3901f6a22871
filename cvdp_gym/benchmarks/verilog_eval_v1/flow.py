"""VerilogEval v1's flow: ``verilog_eval/execution.py``'s commands and rule, on Icarus 12.

One file, ``<task_id>.sv``, holds the test bench, the prompt (the module header) and the
completion, in that order; then, as one shell command within 30 s::

    iverilog -Wall -Winfloop -Wno-timescale -g2012 -s tb -o test.vvp <task_id>.sv; vvp -n test.vvp

with standard output and standard error kept apart. The rule: "syntax error" in standard
error fails (``failed: syntax error.``), any standard error fails (``failed: compile
error.``: a warning too), else the first ``Mismatches: N in M samples`` of standard output
passes when N is 0 (``passed``; ``failed: N out of M samples.``), and no such line fails
(``failed: info string not matched.``); past 30 s it is ``timed out``. ``official`` holds
that result over the whole output; the verdict takes the mismatch line only from the test
bench's own lines (:mod:`cvdp_gym.harness.testbench`), and a pass needs positive evidence:
``Mismatches: 0 in 0 samples`` (what a simulation ended at time 0 prints) passes the
benchmark's rule and fails the verdict (``needs_samples``; the reference's own count is not
required: it is known only by simulating the reference, one more run per problem). The run
renames the test bench's modules, scopes and file (``-s`` the renamed ``tb``), and a header
and completion that name them are ``reach_in``, lines counted in the completion
(``testbench.isolated_run``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from cvdp_gym.harness.flows.flow_kit import (
    BUILD_ERROR,
    CALLS_FILE,
    TEST_FAILURE,
    TIMEOUT,
    HarnessResult,
    Isolated,
    Limits,
    Problem,
    Sandbox,
    ServiceResult,
    TestCounts,
    calls_command,
    check,
    compiled_check,
    fed_through_a_pipe,
    instrument,
    isolated_run,
    new_secret,
    read_log,
    run_script,
)

#: ``execution.py``'s default time limit for one check.
TIMEOUT_S = 30.0
COMPILE = "iverilog -Wall -Winfloop -Wno-timescale -g2012"
#: The test bench's root module (``-s tb``).
ROOT = "tb"
_MISMATCHES = re.compile(r"Mismatches: ([0-9]*) in ([0-9]*) samples")
PASSED = "passed"


def judge(out: str, err: str, *, timed_out: bool = False) -> tuple[str, int, int | None]:
    """``execution.py``'s result string, the mismatches and the samples of one check."""
    if timed_out:
        return "timed out", 0, None
    match = _MISMATCHES.search(out)
    if "syntax error" in err:
        return "failed: syntax error.", 0, None
    if len(err) > 0:
        return "failed: compile error.", 0, None
    if match:
        wrong, total = int(match.group(1) or 0), int(match.group(2) or 0)
        if wrong == 0:
            return PASSED, 0, total
        return f"failed: {wrong} out of {total} samples.", wrong, total
    return "failed: info string not matched.", 0, None


def needs_samples(verdict: str, total: int | None) -> str:
    """The verdict's reading of ``judge``'s result: a pass needs positive evidence, a test
    bench that checked at least one sample (``Mismatches: 0 in 0 samples`` passes
    ``execution.py``, and is what a simulation ended at time 0 prints)."""
    if verdict == PASSED and not total:
        return "failed: the test bench checked 0 samples (Mismatches: 0 in 0 samples); a pass needs at least one."
    if verdict == "failed: info string not matched.":
        return "failed: info string not matched (the test bench printed no `Mismatches: N in M samples` line)."
    return verdict


def _script(source: str, root: str) -> str:
    return (
        f"{COMPILE} -s {root} -o test.vvp {source} > out.txt 2> err.txt\n"
        f"{calls_command('test.vvp')}\n"
        f"rm -f {source}\n"
        "if [ -f test.vvp ]; then\n"
        + fed_through_a_pipe("test.vvp", "vvp -n /dev/stdin >> out.txt 2>> err.txt")
        + "if [ $status -gt 128 ]; then echo $status > killed.flag; fi\n"
        + "else\n"
        "  echo 'test.vvp: Unable to open input file.' >> err.txt\n"
        "fi\n"
    )


class VerilogEvalV1Flow:
    """Checks a VerilogEval v1 completion as ``check_correctness`` does."""

    name = "verilog-eval-v1"

    def run(
        self, sandbox: Sandbox, problem: Problem, files: Mapping[str, str], *, limits: Limits, keep_dir: Path | None = None,
        seed: int | None = None,
    ) -> HarnessResult:
        task_id = str(problem.extra.get("name") or problem.id)
        completion = files.get(problem.targets[0], "")
        test_name, test = next(((p, t) for p, t in problem.harness.items() if p.endswith("_test.sv")), ("test.sv", ""))
        prompt = next((t for p, t in problem.harness.items() if p.endswith("_prompt.sv")), "")
        # The answer is the prompt's module header and the completion; lines counted in the completion.
        found = check({problem.targets[0]: prompt + "\n" + completion}, protected=[*problem.harness, f"{task_id}.sv", CALLS_FILE])
        found.findings = [replace(f, line=max(1, f.line - prompt.count("\n") - 1)) for f in found.findings]

        def once(isolated: Isolated | None, keep: Path | None) -> HarnessResult:
            renamed = isolated.files[isolated.file(test_name)] if isolated is not None else test
            return self._run(sandbox, problem, task_id, renamed, prompt + "\n" + completion, isolated, limits, keep)

        return isolated_run(found, {test_name: test}, once, keep_dir)

    def _run(
        self, sandbox: Sandbox, problem: Problem, task_id: str, test: str, answer: str, isolated: Isolated | None,
        limits: Limits, keep_dir: Path | None,
    ) -> HarnessResult:
        """One check, as ``check_correctness`` runs it (the test bench, then the header and the
        completion, in one file): with the run's names (``isolated``), or untouched."""
        secret = new_secret()
        source = f"{task_id}.sv" if isolated is None else isolated.file(f"{task_id}.sv")
        root, restore = (ROOT, str) if isolated is None else (isolated.module(ROOT), isolated.restore)
        bench = instrument(test, secret)
        run = run_script(
            sandbox, problem.toolchain, _script(source, root), {source: bench + "\n" + answer},
            ("out.txt", "err.txt", CALLS_FILE),
            limits=Limits(**{**limits.__dict__, "wall_s": min(limits.wall_s, TIMEOUT_S)}), keep_dir=keep_dir,
        )
        out = read_log(restore(run.logs["out.txt"]), secret)
        err = restore(run.logs["err.txt"]).replace(secret, "")
        timed_out = run.outcome.timed_out
        official, _, _ = judge(out.official, err, timed_out=timed_out)
        verdict, wrong, total = judge("\n".join(out.trusted), err, timed_out=timed_out)
        verdict = needs_samples(verdict, total)
        passed = verdict == PASSED
        failure = None if passed else (
            TIMEOUT if timed_out else BUILD_ERROR if verdict.startswith(("failed: syntax", "failed: compile")) else TEST_FAILURE
        )
        if run.outcome.out_of_memory or ("killed.flag" in run.left and not timed_out):
            # Cut short, never a pass: whatever the test bench printed before the cut.
            passed, failure = False, "resource_limit"
            verdict = "failed: killed for exceeding the memory limit" if run.outcome.out_of_memory else (
                "failed: the simulation was killed by a signal (a file-size or memory limit)"
            )
        tests = TestCounts(total, total - wrong, wrong) if total else TestCounts(1, int(passed), int(not passed))
        log = (err + out.official)[-4000:]
        service = ServiceResult(
            name=self.name, passed=passed, failure_class=failure, reason=verdict, returncode=run.outcome.returncode,
            tests=tests, wall_s=run.outcome.wall_s, log_tail=log,
        )
        judged = HarnessResult(
            problem_id=problem.id, passed=passed, failure_class=failure, reason=verdict, services=[service],
            wall_s=run.outcome.wall_s, official={"result": official, "passed": official == PASSED, "verdict_result": verdict},
            defect=problem.defect,
        )
        # One file holds the test bench and then the answer: the answer's calls are those after it.
        return compiled_check(judged, run.logs.get(CALLS_FILE, ""), [source], first_lines={source: bench.count("\n") + 2})


#: This plug-in's flows (:mod:`cvdp_gym.plugins`).
FLOWS = (VerilogEvalV1Flow(),)
