"""Posing design problems as the verification tasks: what the prompt holds and hides, which
problems can be posed, the dataset fragment, and posing twice."""

from __future__ import annotations

import dataclasses

import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.data.problems import DatasetError
from cvdp_gym.data.verification_tasks import (
    ASSERTION,
    TESTBENCH,
    TESTBENCH_COCOTB,
    DesignUnderTest,
    task_problem,
    task_problems,
)
from cvdp_gym.errors import ConfigError

BUNDLED = load_dataset("bundled")


@pytest.mark.parametrize("task", [TESTBENCH, TESTBENCH_COCOTB])
def test_a_bench_prompt_has_the_specification_and_header_never_the_design_or_where_to_write_it(task):
    for problem in BUNDLED:
        posed = task_problem(problem, task)
        design = DesignUnderTest.from_dict(posed.extra["design"])
        spec = posed.prompt.split("## The design under test")[0]
        # The benchmark's closing instruction of where to write the design is not the task's.
        assert not any(f"{verb} the" in spec and f"in `{design.target}`" in spec for verb in ("Provide", "Write")), problem.id
        body = design.text.split(");", 1)[1].strip()  # everything after the header
        assert body and body not in posed.prompt, problem.id


def test_the_assertion_prompt_shows_the_header_and_hides_the_body():
    """Properties are written from the specification over the ports: the design's body, which a
    restatement would copy, is never shown (issue 45)."""
    posed = task_problem(BUNDLED["cvdp_gym_gray_converter_0001"], ASSERTION)
    assert "assign gray_o = bin_i ^ (bin_i >> 1);" not in posed.prompt and posed.targets == ("properties.sv",)
    assert "module gray_converter #(" in posed.prompt


def test_only_problems_with_a_reference_are_posed_and_posing_twice_changes_nothing():
    problem = BUNDLED["cvdp_gym_gray_converter_0001"]
    assert task_problem(dataclasses.replace(problem, reference=None), TESTBENCH) is None
    posed = task_problem(problem, TESTBENCH)
    assert task_problem(posed, TESTBENCH) is posed
    with pytest.raises(ConfigError, match="already posed as the testbench task"):
        task_problem(posed, ASSERTION)
    assert [p.id for p in task_problems(BUNDLED, TESTBENCH)] == [f"{p.id}.testbench" for p in BUNDLED]


def test_a_dataset_fragment_poses_the_task():
    posed = load_dataset("bundled#assertion")
    assert posed.source == "bundled#assertion" and all(p.id.endswith(".assertion") for p in posed)
    with pytest.raises(DatasetError, match="unknown task #proof"):
        load_dataset("bundled#proof")
