"""Posing design problems as the verification tasks: what the prompt holds and hides, which
problems can be posed, the dataset fragment, posing twice, and the one posing path that
``task=``, ``--task`` and the ``#TASK`` fragment share (the same problems for the same options,
each entry point's own defaults as they were)."""

from __future__ import annotations

import dataclasses

import gymnasium
import pytest

import cvdp_gym  # noqa: F401  (registers the environments)
from cvdp_gym.cli._options import load_problems
from cvdp_gym.data import load_dataset
from cvdp_gym.data.problems import DatasetError
from cvdp_gym.errors import ConfigError
from cvdp_gym.tasks.design import DesignUnderTest
from cvdp_gym.tasks.names import ASSERTION, TESTBENCH, TESTBENCH_COCOTB
from cvdp_gym.tasks.posing import TaskOptions, pose, task_problem

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
    assert [p.id for p in pose(BUNDLED, TaskOptions(TESTBENCH))] == [f"{p.id}.testbench" for p in BUNDLED]


def test_a_dataset_fragment_poses_the_task():
    posed = load_dataset("bundled#assertion")
    assert posed.source == "bundled#assertion" and all(p.id.endswith(".assertion") for p in posed)
    with pytest.raises(DatasetError, match="unknown task #proof"):
        load_dataset("bundled#proof")


@pytest.mark.parametrize(
    ("text", "env_id"),
    [
        ("testbench?coverage=1&agentic=0", "RTL-Testbench-v0"),
        ("testbench-cocotb?coverage=0&agentic=1", "RTL-Agentic-v0"),
        ("assertion?agentic=0&coverage=0", "RTL-Assertion-v0"),
    ],
)
def test_the_fragment_the_option_and_the_environment_pose_the_same_problems(text, env_id, sandbox):
    """One text, ``TASK?options``, through each entry point gives the very problems ``pose`` does."""
    options = TaskOptions.parse(text)
    direct = pose(BUNDLED.problems, options)
    assert direct and all(p.agentic == options.agentic for p in direct)
    assert all(("testbench" in p.extra) == (options.coverage and options.task == TESTBENCH) for p in direct)
    fragment = load_dataset(f"bundled#{text}")
    command = load_problems("bundled", None, None, None, False, task=text)
    env = gymnasium.make(env_id, task=text, sandbox=sandbox, cache=False)
    try:
        environment = env.unwrapped.problems
    finally:
        env.close()
    assert fragment.problems == command.problems == environment == direct
    assert fragment.source == f"bundled#{text}"


def test_each_entry_point_keeps_its_own_defaults(sandbox):
    """Left unsaid, a test bench's coverage is off for the fragment and ``task=``, on for
    ``--task`` (``eval``), as it always was; agentic follows the environment's kind."""
    def coverage(problems):
        return {bool(p.extra.get("testbench", {}).get("coverage")) for p in problems}

    assert coverage(load_dataset("bundled#testbench")) == {False}
    assert coverage(load_problems("bundled", None, None, None, False, task=TESTBENCH).problems) == {True}
    for env_id, agentic in (("RTL-Testbench-v0", False), ("RTL-Agentic-v0", True)):
        env = gymnasium.make(env_id, task=TESTBENCH, sandbox=sandbox, cache=False)
        try:
            assert coverage(env.unwrapped.problems) == {False}
            assert {p.agentic for p in env.unwrapped.problems} == {agentic}
        finally:
            env.close()
    assert load_dataset("bundled#design").source == "bundled"


def test_a_task_option_spelled_wrong_is_one_error():
    with pytest.raises(DatasetError, match="unknown option 'cover'"):
        load_dataset("bundled#testbench?cover=1")
    with pytest.raises(ConfigError, match="unknown task 'proof'"):
        TaskOptions.parse("proof?coverage=1")
    with pytest.raises(DatasetError, match="expected 0 or 1"):
        TaskOptions.parse("testbench?coverage=maybe")
