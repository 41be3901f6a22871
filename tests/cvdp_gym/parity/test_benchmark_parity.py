"""Benchmark parity: mutants, and our flows vs stand-ins of the benchmarks' own scripts.

The upstream repositories are not part of CI, and the made-up copies under
``tests/fixtures/benchmarks`` hold data only. So the official side here runs STAND-INS
written for these tests (none is upstream code): a tiny ``configure`` + ``Makefile.in`` +
``scripts/sv-iv-analyze`` for VerilogEval v2, a ``verilog_eval/execution.py`` whose
simulator call sits in a string literal (as upstream's does) for v1, and an ``auto_run.py``
with a hard-coded ``path`` for RTLLM, each placed into a temporary copy of the fixture
clone. They go through exactly the code path the real scripts do (sandbox, shims, build
folders, reading ``summary.csv`` / the result string / ``result_dic``); their rules are
deliberately simpler than upstream's, so some answers must disagree, and the tests check
the plumbing (which verdict belongs to which answer, what agrees) from the stand-ins' own
logs, not from the code under test.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cvdp_gym.benchmarks.verilog_eval_v1.official import enable_execution
from cvdp_gym.cli import app
from cvdp_gym.data import load_dataset
from cvdp_gym.data.mutants import (
    BEHAVIOUR_KINDS,
    HANG,
    KINDS,
    SUFFIX,
    benchmark_mutants,
    mutate,
    problem_mutants,
    reference_answer,
)
from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.parity import AGREE, DISAGREE, LEFT_OUT
from cvdp_gym.parity.answers import Answer
from cvdp_gym.parity.benchmarks import benchmark_answers, run_benchmark_parity
from cvdp_gym.parity.benchmarks.rows import benchmark_summary_json

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"

#: A made-up design with every construct some mutant kind edits.
RICH = """// a comment: a & b + c == d < e ~f 1'b0 ; endmodule
module rich (
  input clk,
  input reset,
  input [3:0] a,
  input [3:0] b,
  output reg [3:0] q,
  output flag
);
  assign flag = (a & b) == 4'd3 && ~a[0] || a < b;
  always @(posedge clk)
    if (reset)
      q <= 1'b0;
    else
      q <= q + 4'd1 - b;
endmodule
"""


def _count(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text))


#: What each kind must visibly do to RICH (derived from the kind's definition).
EFFECTS = {
    "and-or": lambda m: "(a | b)" in m,
    "plus-minus": lambda m: m.count("q + 4'd1 - b") == 0,
    "eq-ne": lambda m: "!= 4'd3" in m,
    "lt-ge": lambda m: "a >= b" in m,
    "not-removed": lambda m: "~a[0]" not in m.split("\n", 1)[1],
    "bit-flip": lambda m: "q <= 1'b1" in m,
    "digit": lambda m: m.split("\n", 1)[0] == RICH.split("\n", 1)[0] and sorted(m) != sorted(RICH),
    "if-inverted": lambda m: "if (!(reset))" in m,
    "reset-polarity": lambda m: "if (!reset)" in m,
    "no-semicolon": lambda m: m.count(";") == RICH.count(";") - 1,
    "no-endmodule": lambda m: m.count("endmodule") == RICH.count("endmodule") - 1,
    "port-renamed": lambda m: SUFFIX in m and m.count(SUFFIX) >= 2,
    "module-renamed": lambda m: f"module rich{SUFFIX}" in m,
    "always-comb-no-inputs": lambda m: "always_comb" in m,
    "wire-in-always": lambda m: "output wire [3:0] q" in m,
    "output-x": lambda m: "'x;" in m,
    HANG: lambda m: "forever begin end" in m,
}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_changes_the_text_as_it_says(kind):
    mutated = mutate(RICH, kind, seed=0, key="rich", top="rich")
    assert mutated is not None and mutated != RICH
    assert EFFECTS[kind](mutated), mutated
    assert mutated.split("\n", 1)[0] == RICH.split("\n", 1)[0], "a comment was edited"


#: A made-up state machine for the behaviour-only kinds parity leaves out.
MACHINE = """module fsm (input clk, input go, output reg [1:0] out);
  localparam IDLE = 2'd0, RUN = 2'd1, DONE = 2'd2;
  reg [1:0] state;
  reg [3:0] count;
  always @(posedge clk) begin
    case (state)
      IDLE: state <= go ? RUN : IDLE;
      RUN: state <= DONE;
      default: state <= IDLE;
    endcase
    count <= count + 4'd1;
  end
  always @(*) out = state;
endmodule
"""


@pytest.mark.parametrize(("kind", "effect"), [
    ("width", lambda m: "reg [0:0] state;" in m or "reg [2:0] count;" in m),
    ("case-item", lambda m: "RUN: state <= go ? RUN : IDLE;" in m and "IDLE: state <= DONE;" in m),
    ("state-transition", lambda m: m.count("IDLE") != MACHINE.count("IDLE") or m.count("DONE") != MACHINE.count("DONE")),
])
def test_behaviour_kinds_keep_the_ports_and_change_the_design(kind, effect):
    assert kind in BEHAVIOUR_KINDS and kind not in KINDS
    mutated = mutate(MACHINE, kind, seed=0, key="fsm")
    assert mutated is not None and effect(mutated), mutated
    assert mutated.split("\n", 1)[0] == MACHINE.split("\n", 1)[0], "a port changed"


def test_kinds_that_do_not_apply_give_none():
    plain = "module m (input a, output y);\n  assign y = a;\nendmodule\n"
    assert mutate(plain, "reset-polarity") is None
    assert mutate(plain, "if-inverted") is None
    assert mutate(plain, "module-renamed", top="other") is None
    with pytest.raises(ValueError):
        mutate(plain, "no-such-kind")


@pytest.fixture(scope="module")
def ve2_problems():
    return load_dataset("verilog-eval-v2", benchmark_dir=FIXTURES / "verilog-eval").problems


def test_mutants_are_seeded_named_and_distinct(ve2_problems):
    first = [(p.id, m) for p in ve2_problems for m in problem_mutants(p, 5, seed=0)]
    again = [(p.id, m) for p in ve2_problems for m in problem_mutants(p, 5, seed=0)]
    other = [(p.id, m) for p in ve2_problems for m in problem_mutants(p, 5, seed=1)]
    assert first == again and first != other
    for problem in ve2_problems:
        mutants = [m for pid, m in first if pid == problem.id]
        reference = problem.reference[problem.targets[0]]
        assert len(mutants) == 5 and len({m.kind for m in mutants}) == 5
        assert all(m.kind in KINDS and m.kind != HANG for m in mutants)
        assert reference not in {m.text for m in mutants} and len({m.text for m in mutants}) == 5


def test_only_a_handful_of_problems_get_the_hang(ve2_problems):
    chosen = benchmark_mutants(ve2_problems, 2, seed=3, hangs=1)
    assert sum(m.kind == HANG for _, m in chosen) == 1
    assert sum(m.kind != HANG for _, m in chosen) == 2 * len(ve2_problems)


def _mutated(problem, kind) -> str | None:
    text, top, header = reference_answer(problem)
    return mutate(text, kind, key=problem.id, top=top, header=header)


def _mutant(problem, kind):
    mutated = _mutated(problem, kind)
    assert mutated is not None, kind
    return {problem.targets[0]: mutated}


def test_mutant_kinds_fail_as_they_should_in_our_flows(runner, ve2_problems):
    """The failure each kind is made for, by each benchmark's rule (class letters:
    sv-iv-analyze's; v1 result strings: execution.py's)."""
    count4 = next(p for p in ve2_problems if p.id.endswith("spec-to-rtl.Prob002_count4"))
    expected = {"no-semicolon": "S", "module-renamed": "m", "always-comb-no-inputs": "n", "wire-in-always": "w", "port-renamed": "C"}
    for kind, cls in expected.items():
        result = runner.run(count4, _mutant(count4, kind))
        assert result.official["class"] == cls and not result.passed, (kind, result.reason)
    assert runner.run(count4, _mutant(count4, "port-renamed")).failure_class == "interface_error"
    v1 = load_dataset("verilog-eval-v1:human", benchmark_dir=FIXTURES / "verilog-eval-v1", ids=["and3"]).problems[0]
    assert runner.run(v1, _mutant(v1, "no-semicolon")).official["result"] == "failed: syntax error."
    assert runner.run(v1, _mutant(v1, "always-comb-no-inputs")).official["result"] == "failed: compile error."
    adder = load_dataset("rtllm-v2", benchmark_dir=FIXTURES / "rtllm", ids=["adder_4bit"]).problems[0]
    broken = runner.run(adder, _mutant(adder, "no-endmodule"))
    assert broken.official["compiled"] is False
    undriven = runner.run(adder, _mutant(adder, "output-x"))
    assert undriven.official["compiled"] is True and undriven.official["auto_run"] is False


# ----------------------------------------------------------------- the stand-ins

VE2_CONFIGURE = r"""#!/bin/bash
# STAND-IN for VerilogEval v2's configure (made up for this test): reads the options
# parity passes and writes ./Makefile from Makefile.in beside this script (the dataset folder:
# --with-dataset, else dataset_<task> beside it, as upstream's).
srcdir=$(cd "$(dirname "$0")" && pwd)
for arg in "$@"; do
  case "$arg" in
    --with-task=*) task=${arg#*=} ;;
    --with-dataset=*) dataset=${arg#*=} ;;
    --with-samples=*) samples=${arg#*=} ;;
    --with-problems=*) problems=${arg#*=} ;;
  esac
done
sed -e "s|@srcdir@|$srcdir|g" -e "s|@dataset@|${dataset:-$srcdir/dataset_$task}|g" -e "s|@samples@|$samples|g" \
  -e "s|@problems@|$problems|g" "$srcdir/Makefile.in" > Makefile
"""
VE2_MAKEFILE_IN = """# STAND-IN for VerilogEval v2's Makefile.in (made up for this test); bash-only recipes.
src_dir := @srcdir@
dataset := @dataset@
problems := $(shell cat @problems@)
numbers := $(shell seq -f %02g 1 @samples@)
logs := $(foreach p,$(problems),$(foreach n,$(numbers),$(p)/$(p)_sample$(n)-sv-iv-test.log))
problem = $(patsubst %/,%,$(dir $(1)))

all: $(logs)
\tpython $(src_dir)/scripts/sv-iv-analyze --csv=summary.csv $(problems)

%-sv-iv-test.log: %.sv
\t-iverilog -Wall -Winfloop -Wno-timescale -g2012 -s tb -o $* $< $(dataset)/$(call problem,$*)_test.sv \
\t  $(dataset)/$(call problem,$*)_ref.sv &> $@
\t-timeout 30 ./$* &>> $@; if [[ $${PIPESTATUS[0]} == 124 ]]; then echo TIMEOUT &>> $@; fi
"""
VE2_ANALYZE = '''#!/usr/bin/env python
"""STAND-IN for VerilogEval v2's scripts/sv-iv-analyze (made up for this test): one class per
sample log, to --csv as problem,npass,nsamples,rate,class,... It knows fewer classes than
the real script (no n, w, p, r). The langchain import proves parity's shim."""
import argparse
import glob
import re

from langchain.schema import HumanMessage, SystemMessage  # noqa: F401


def classify(text):
    for needle, cls in (("syntax error", "S"), ("Unknown module type", "m"), ("TIMEOUT", "T"), ("error", "C")):
        if needle in text:
            return cls
    return "." if re.search(r"^Mismatches: 0 in \\d+ samples$", text, re.M) else "R"


parser = argparse.ArgumentParser()
parser.add_argument("--csv")
parser.add_argument("problems", nargs="*")
options = parser.parse_args()
with open(options.csv, "w") as out:
    for problem in options.problems:
        logs = sorted(glob.glob(f"{problem}/{problem}_sample*-sv-iv-test.log"))
        classes = [classify(open(log).read()) for log in logs]
        passed = classes.count(".")
        out.write(f"{problem},{passed},{len(classes)},{passed / len(classes)},{','.join(classes)}\\n")
'''
VE1_EXECUTION = '''"""STAND-IN for VerilogEval v1's verilog_eval/execution.py (made up for this test): the same
entry point, its simulator call inside a string literal between BEGIN and END markers (so
the file does not even parse until parity enables it), a nested function run in a child
process (which needs the fork start method)."""
import multiprocessing
import os
import re
import subprocess
import tempfile


def check_correctness(problem, completion, timeout, completion_id=None):
    def work(result):
        with tempfile.TemporaryDirectory() as folder:
            name = problem["task_id"] + ".sv"
            with open(os.path.join(folder, name), "w") as handle:
                handle.write(problem["test"] + "\\n" + problem["prompt"] + "\\n" + completion)
            try:
# BEGIN CODE BLOCK
"""
                command = f"iverilog -Wall -Winfloop -Wno-timescale -g2012 -s tb -o t.vvp {name}; vvp -n t.vvp"
                run = subprocess.run(command, shell=True, cwd=folder, capture_output=True, text=True, timeout=timeout)
                found = re.search(r"Mismatches: ([0-9]*) in ([0-9]*) samples", run.stdout)
                if "syntax error" in run.stderr:
                    result.append("failed: syntax error.")
                elif run.stderr:
                    result.append("failed: compile error.")
                elif found:
                    wrong, total = found.groups()
                    result.append("passed" if wrong == "0" else f"failed: {wrong} out of {total} samples.")
                else:
                    result.append("failed: info string not matched.")
"""
# END CODE BLOCK
            except subprocess.TimeoutExpired:
                result.append("timed out")

    result = multiprocessing.Manager().list()
    child = multiprocessing.Process(target=work, args=(result,))
    child.start()
    child.join(timeout + 1)
    text = result[0] if result else "timed out"
    return {"task_id": problem["task_id"], "passed": text == "passed", "result": text, "completion_id": completion_id}
'''
RTLLM_AUTO_RUN = '''"""STAND-IN for RTLLM's auto_run.py (made up for this test): for each listed design with a
makefile here, point the makefile at {path}/t1/<design>, `make vcs`, count simv as compiled,
`make sim > output.txt`, count "Pass"/"pass" in it as a pass; print the counts. gray_code is
not listed, so parity must report it as not evaluated."""
import os

path = "/home/someone/answers/"
design_name = ["adder_4bit", "counter_mod6"]
result_dic = {design: {"syntax_success": 0, "func_success": 0} for design in design_name}
for design in design_name:
    if not os.path.exists(f"{design}/makefile"):
        continue
    with open(f"{design}/makefile") as handle:
        original = handle.read()
    with open(f"{design}/makefile", "w") as handle:
        handle.write(original.replace("${TEST_DESIGN}", f"{path}/t1/{design}"))
    os.chdir(design)
    os.system("make vcs")
    if os.path.exists("simv"):
        result_dic[design]["syntax_success"] += 1
        os.system("make sim > output.txt")
        with open("output.txt") as handle:
            text = handle.read()
        if "Pass" in text or "pass" in text:
            result_dic[design]["func_success"] += 1
    with open("makefile", "w") as handle:
        handle.write(original)
    os.system("make clean")
    os.chdir("..")
print(result_dic)
'''


def _clone(tmp_path: Path, fixture: str, files: dict[str, str]) -> Path:
    clone = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, clone)
    for name, text in files.items():
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        (clone / name).write_text(text)
        (clone / name).chmod(0o755)
    return clone


def _answers(problems, kinds) -> list[Answer]:
    answers: list[Answer] = []
    for problem in problems:
        answers.append(Answer(len(answers), problem, "reference", dict(problem.reference)))
        for kind in kinds:
            if _mutated(problem, kind) is not None:
                answers.append(Answer(len(answers), problem, f"mutant:{kind}", _mutant(problem, kind)))
    return answers


def _check_rows(rows) -> None:
    """Each row's status follows from the two readings; every compared row has its own log."""
    for row in rows:
        if row.status == LEFT_OUT:
            continue
        assert row.status == (AGREE if row.ours_reading == row.theirs_reading else DISAGREE)
        assert row.official.logs and row.official.seconds > 0


def test_verilog_eval_v2_stand_in_flow(runner, tmp_path):
    clone = _clone(tmp_path, "verilog-eval", {
        "configure": VE2_CONFIGURE, "Makefile.in": VE2_MAKEFILE_IN, "scripts/sv-iv-analyze": VE2_ANALYZE,
    })
    problems = load_dataset("verilog-eval-v2", benchmark_dir=clone, ids=["Prob001_and3", "Prob002_count4"]).problems
    answers = _answers(problems, ["no-semicolon", "always-comb-no-inputs", "digit", "and-or"])
    rows = run_benchmark_parity(answers, runner=runner, clone=clone, work=tmp_path / "work", jobs=2)
    _check_rows(rows)
    assert {r.status for r in rows} == {AGREE, DISAGREE}
    for row in rows:  # the verdict read for an answer is its own sample's
        log = Path(row.official.logs[0])
        sample = log.with_name(log.name.replace("-sv-iv-test.log", ".sv"))
        assert sample.read_text() == row.answer.files[row.answer.problem.targets[0]]
        assert row.theirs_reading["class"] == _stand_in_class(log.read_text())
    comb = [r for r in rows if r.answer.name == "mutant:always-comb-no-inputs"]
    assert comb and all(r.ours_reading == {"class": "n"} and r.theirs_reading == {"class": "."} for r in comb)
    assert all(r.status == DISAGREE and r.pass_agrees is False and r.verdict_differs for r in comb)
    summary = benchmark_summary_json(rows, {})
    assert summary["agreement"]["all"]["answers"] == len(answers)
    assert summary["pass_fail"]["all"]["compared"] == len(answers)


def _stand_in_class(text: str) -> str:
    for needle, cls in (("syntax error", "S"), ("Unknown module type", "m"), ("TIMEOUT", "T"), ("error", "C")):
        if needle in text:
            return cls
    return "." if re.search(r"^Mismatches: 0 in \d+ samples$", text, re.M) else "R"


def test_a_flow_that_cannot_run_is_left_out(runner, tmp_path):
    clone = _clone(tmp_path, "verilog-eval", {
        "configure": "#!/bin/bash\necho 'STAND-IN configure: cannot configure' >&2\nexit 1\n",
        "Makefile.in": VE2_MAKEFILE_IN, "scripts/sv-iv-analyze": VE2_ANALYZE,
    })
    problems = load_dataset("verilog-eval-v2:spec-to-rtl", benchmark_dir=clone, ids=["Prob001_and3"]).problems
    rows = run_benchmark_parity(_answers(problems, []), runner=runner, clone=clone, work=tmp_path / "work")
    assert [r.status for r in rows] == [LEFT_OUT]
    assert "configure" in rows[0].why_left_out


def test_verilog_eval_v1_stand_in_is_enabled_in_a_copy_only(runner, tmp_path):
    clone = _clone(tmp_path, "verilog-eval-v1", {"verilog_eval/__init__.py": "", "verilog_eval/execution.py": VE1_EXECUTION})
    with pytest.raises(SyntaxError):
        compile(VE1_EXECUTION, "execution.py", "exec")
    compile(enable_execution(VE1_EXECUTION), "execution.py", "exec")
    problems = load_dataset("verilog-eval-v1:human", benchmark_dir=clone, ids=["and3", "count4"]).problems
    answers = _answers(problems, ["no-semicolon", "digit", "port-renamed"])
    rows = run_benchmark_parity(answers, runner=runner, clone=clone, work=tmp_path / "work", jobs=2)
    _check_rows(rows)
    assert (clone / "verilog_eval" / "execution.py").read_text() == VE1_EXECUTION
    assert all(r.status == AGREE for r in rows if r.answer.name in ("reference", "mutant:no-semicolon"))
    assert all(r.theirs_reading["result"] == r.official.reason for r in rows)
    compiled = next(r for r in rows if r.answer.name == "mutant:no-semicolon")
    assert "syntax error" in Path(next(p for p in compiled.official.logs if "iverilog.stderr" in p)).read_text()


def test_rtllm_stand_in_auto_run_on_a_flat_copy(runner, tmp_path):
    clone = _clone(tmp_path, "rtllm", {"auto_run.py": RTLLM_AUTO_RUN})
    problems = load_dataset("rtllm-v2", benchmark_dir=clone).problems
    answers = _answers(problems, ["no-endmodule", "output-x"])
    rows = run_benchmark_parity(answers, runner=runner, clone=clone, work=tmp_path / "work", jobs=2)
    _check_rows(rows)
    assert "/home/someone/" in (clone / "auto_run.py").read_text()
    for row in rows:
        if row.answer.problem.extra["name"] == "gray_code":
            assert row.status == LEFT_OUT and "never evaluates gray_code" in row.why_left_out
        else:
            assert row.status == AGREE, (row.answer.name, row.ours_reading, row.theirs_reading)
    assert any(r.theirs_reading == {"compiled": True, "auto_run": True} for r in rows)
    assert any(r.theirs_reading == {"compiled": False, "auto_run": False} for r in rows)


def test_cli_compares_a_file_of_answers_and_exits_1_on_a_disagreement(tmp_path):
    clone = _clone(tmp_path, "verilog-eval", {
        "configure": VE2_CONFIGURE, "Makefile.in": VE2_MAKEFILE_IN, "scripts/sv-iv-analyze": VE2_ANALYZE,
    })
    dataset = clone / "dataset_spec-to-rtl"
    problem = load_dataset(str(dataset), ids=["Prob002_count4"]).problems[0]
    lines = [
        {"id": "Prob002_count4", "name": "as a response", "response": answer_text(problem, problem.reference)},
        {"id": problem.id, "name": "comb", "files": _mutant(problem, "always-comb-no-inputs")},
    ]
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "summary.json"
    done = CliRunner().invoke(
        app, ["parity", str(path), "--dataset", str(dataset), "--work", str(tmp_path / "work"), "--json", str(out)],
        env={"COLUMNS": "200"},
    )
    assert done.exit_code == 1, done.output
    summary = json.loads(out.read_text())
    assert summary["agreement"]["all"] == {"answers": 2, AGREE: 1, DISAGREE: 1, LEFT_OUT: 0}
    assert summary["benchmark_dir"] == str(clone.resolve())
    assert "disagree" in done.output and "comb" in done.output


def test_references_and_mutants_as_answers(ve2_problems):
    references, _ = benchmark_answers("references", ve2_problems)
    assert [a.name for a in references] == ["reference"] * len(ve2_problems)
    chosen, _ = benchmark_answers("mutants:2", ve2_problems, hangs=0)
    assert len(chosen) == 3 * len(ve2_problems) and {a.name.split(":")[0] for a in chosen} == {"reference", "mutant"}


def test_answers_spec_and_auto_run_edits_are_checked(ve2_problems):
    from cvdp_gym.benchmarks.rtllm.official import read_result_dic, set_path
    from cvdp_gym.errors import ConfigError

    with pytest.raises(ConfigError):
        benchmark_answers("mutants:many", ve2_problems)
    assert set_path('x = 1\npath = "/home/a/"\n') == 'x = 1\npath = "/work/answers/"\n'
    for bad in ("x = 1\n", 'path = "/a/"\npath = "/b/"\n'):
        with pytest.raises(ConfigError):
            set_path(bad)
    printed = "make: vcs\n{'a': {'syntax_success': 1, 'func_success': 0}}\nsyntax pass@1: 0.5\n"
    assert read_result_dic(printed) == {"a": {"syntax_success": 1, "func_success": 0}}
    assert read_result_dic("{not a dict\n") is None


def test_the_root_python_is_asked_what_it_lacks(sandbox):
    from cvdp_gym.parity.benchmarks.python_packages import missing_modules, top_level_imports

    source = "import os, json\nfrom scipy.special import comb\nimport tqdm.auto\nfrom . import sibling\n"
    assert top_level_imports(source) == ["json", "os", "scipy", "tqdm"]
    version, absent = missing_modules(sandbox, ["json", "os", "no_such_module_here"])
    assert re.fullmatch(r"3\.\d+", version) and absent == ["no_such_module_here"]
