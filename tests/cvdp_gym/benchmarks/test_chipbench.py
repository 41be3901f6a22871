"""ChipBench as a plug-in: its loader on a made-up copy in its layout (``tests/fixtures/benchmarks/
chipbench``: folders with spaces, an incomplete ``problems.txt``, a submodule given in the prompt),
its flow on real Icarus runs, and its official flow for ``parity`` against VerilogEval v2's
stand-in scripts (upstream's are VerilogEval v2's byte for byte).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.data.benchmarks import BENCHMARKS, detect
from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.parity import AGREE
from cvdp_gym.parity.answers import Answer
from cvdp_gym.parity.benchmarks import run_benchmark_parity
from cvdp_gym.parsers.benchmark_answers import extract_answer
from tests.cvdp_gym.parity.test_benchmark_parity import VE2_ANALYZE, VE2_CONFIGURE, VE2_MAKEFILE_IN

COPY = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks" / "chipbench"
TASK_FOLDER = COPY / "Verilog Gen" / "dataset_not_self_contain"

@pytest.fixture(scope="module")
def problems():
    return load_dataset("chipbench", benchmark_dir=COPY).problems


def test_every_problem_is_found_with_its_task_in_its_id(problems):
    assert sorted(p.id for p in problems) == [
        "chipbench.debug_zero_shot_assignment.Prob001_and3",
        "chipbench.not_self_contain.Prob001_and3_top",  # not in its problems.txt, as upstream's lists only one
        "chipbench.not_self_contain.Prob002_and3_flat",
        "chipbench.not_self_contain.Prob003_and3_shared",
        "chipbench.self_contain.Prob001_and3",
    ]
    for problem in problems:
        assert problem.flow == "chipbench" and problem.toolchain == "icarus12"
        assert "\nQuestion:\n" in problem.prompt and "[BEGIN]" in problem.prompt and "[DONE]" in problem.prompt
        assert BENCHMARKS["chipbench"].specification(problem).strip().startswith("Build a hardware module named TopModule")


def test_the_reference_answer_brings_the_submodule_the_prompt_provides(problems):
    top = next(p for p in problems if p.id.endswith("Prob001_and3_top"))
    reference = top.reference[top.targets[0]]
    assert "module TopModule" in reference and "module and2" in reference and "RefModule" not in reference
    flat = next(p for p in problems if p.id.endswith("Prob002_and3_flat"))
    assert "and2" not in flat.reference[flat.targets[0]] and len(flat.harness) == 2


def test_a_submodule_the_reference_file_also_defines_is_provided_not_hidden(problems):
    shared = next(p for p in problems if p.id.endswith("Prob003_and3_shared"))
    assert set(shared.harness) == {f"Prob003_and3_shared_{s}" for s in ("test.sv", "ref.sv", "provided.sv")}
    assert "module and2" in shared.harness["Prob003_and3_shared_provided.sv"]
    assert "module and2" not in shared.harness["Prob003_and3_shared_ref.sv"]
    assert "and2 first" in shared.harness["Prob003_and3_shared_ref.sv"]
    assert "module and2" not in shared.reference[shared.targets[0]]  # it uses the provided one


def test_a_copy_or_one_task_folder_is_recognised():
    bench, root, tasks = detect(COPY)
    assert (bench.name, root, tasks) == ("chipbench", COPY, ())
    bench, root, tasks = detect(TASK_FOLDER)
    assert (bench.name, root, tasks) == ("chipbench", COPY, ("not_self_contain",))
    assert [p.task for p in load_dataset(str(TASK_FOLDER)).problems] == ["not_self_contain"] * 3


@pytest.mark.sandbox
def test_references_pass_and_the_debug_prompts_buggy_code_fails(runner, problems):
    for problem in problems:
        result = runner.run(problem, problem.reference)
        assert result.passed, (problem.id, result.reason)
        assert result.official["class"] == "."
    debug = next(p for p in problems if p.task.startswith("debug_"))
    buggy = debug.prompt.split("```verilog\n")[1].split("```")[0]
    extracted = extract_answer(debug, f"[BEGIN]\n{buggy}[DONE]")
    result = runner.run(debug, extracted.files)
    assert not result.passed and result.official["class"] == "R"
    shared = next(p for p in problems if p.id.endswith("Prob003_and3_shared"))
    again = shared.reference[shared.targets[0]] + "\nmodule and2 (input x, input y, output z);\n  assign z = x & y;\nendmodule\n"
    result = runner.run(shared, {shared.targets[0]: again})  # defines the provided module again: as the Makefile, no compile
    assert not result.passed and result.official["class"] == "C" and result.official["verdict_class"] == "C"
    shaped = answer_text(debug, debug.reference)  # as the prompt asks: between [BEGIN] and [DONE]
    assert shaped.startswith("[BEGIN]\n") and shaped.endswith("\n[DONE]") and "module TopModule" in shaped


@pytest.mark.sandbox
def test_parity_runs_the_clones_own_scripts_on_the_task_folder_with_spaces(runner, problems, tmp_path):
    clone = tmp_path / "chipbench"
    shutil.copytree(COPY, clone)
    for name, text in {"configure": VE2_CONFIGURE, "Makefile.in": VE2_MAKEFILE_IN, "scripts/sv-iv-analyze": VE2_ANALYZE}.items():
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        (clone / name).write_text(text)
        (clone / name).chmod(0o755)
    answers = [Answer(i, p, "reference", dict(p.reference)) for i, p in enumerate(problems)]
    shared = next(p for p in problems if p.id.endswith("Prob003_and3_shared"))
    again = shared.reference[shared.targets[0]] + "\nmodule and2 (input x, input y, output z);\n  assign z = x & y;\nendmodule\n"
    answers.append(Answer(len(answers), shared, "defines and2 again", {shared.targets[0]: again}))
    rows = run_benchmark_parity(answers, runner=runner, clone=clone, work=tmp_path / "work", jobs=2)
    assert [r.status for r in rows] == [AGREE] * len(answers)
    assert [r.theirs_reading for r in rows] == [{"class": "."}] * len(problems) + [{"class": "C"}]
    assert not rows[-1].verdict_differs  # ours fails it too: the provided module is compiled beside the answer
    for row in rows[:len(problems)]:  # each verdict was read from the answer's own sample, built against the task's folder
        log = Path(row.official.logs[0])
        assert f"/chipbench/{row.answer.problem.task}-n0" in str(log)
