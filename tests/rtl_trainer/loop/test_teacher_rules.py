"""Teacher rules (several teachers in one run): which problem each rule sends to which
teacher, on the bundled problems' real ids, categories and difficulties."""

from __future__ import annotations

import pytest
import yaml

from cvdp_gym.data import load_dataset
from rtl_trainer.config import TrainConfig, parse_field_value
from rtl_trainer.errors import ConfigError
from rtl_trainer.teacher_rules import assign_teachers, parse_rules, unused_rules


@pytest.fixture(scope="module")
def problems():
    return [p for p in load_dataset("bundled").problems if not p.agentic]


def teacher_of(problems, rules, default=None) -> dict[str, str]:
    return {pid: name for pid, (name, _, _) in assign_teachers(problems, parse_rules(rules), default).items()}


def test_first_matching_rule_names_the_teacher_and_the_default_takes_the_rest(problems):
    rules = [
        {"name": "fifo", "model": "m-fifo", "problems": "*sync_fifo*"},
        {"name": "easy-cid3", "model": "m-a", "categories": [3], "difficulty": "easy"},
        {"name": "cid2", "model": "m-b", "categories": ["cid002"]},
    ]
    chosen = teacher_of(problems, rules, default="m-default")
    assert chosen["cvdp_gym_sync_fifo_0001"] == "fifo"  # also cid002: the first rule wins
    assert chosen["cvdp_gym_gray_converter_0001"] == "easy-cid3"
    assert chosen["cvdp_gym_uart_tx_0001"] == "default"  # cid003 but hard
    assert chosen["cvdp_gym_edge_detector_0001"] == "cid2"
    assert chosen["cvdp_gym_alu_flags_0001"] == "default"
    models = assign_teachers(problems, parse_rules(rules), "m-default")
    assert models["cvdp_gym_alu_flags_0001"][1] == "m-default"
    assert models["cvdp_gym_edge_detector_0001"][1] == "m-b"


def test_a_problem_without_a_teacher_is_an_error_that_names_it(problems):
    rules = [{"model": "runs/teacher-sft/state/step00159", "categories": ["cid002"]}]
    with pytest.raises(ConfigError, match=r"no teacher for \d+ problem\(s\): cvdp_gym_alu_flags_0001"):
        assign_teachers(problems, parse_rules(rules), None)
    assert parse_rules(rules)[0].name == "teacher-sft"  # named after the saved state's run
    only = [p for p in problems if p.category == "cid002"]
    assert set(teacher_of(only, rules).values()) == {"teacher-sft"}


def test_rules_that_teach_nothing_are_reported(problems):
    rules = parse_rules([
        {"name": "all", "model": "m"},
        {"name": "shadowed", "model": "n", "problems": ["*fifo*"]},
        {"name": "typo", "model": "o", "problems": ["*fifoo*"]},
    ])
    assert unused_rules(problems, rules) == ["shadowed", "typo"]


@pytest.mark.parametrize(("rules", "message"), [
    ([{"problems": "*"}], r"teachers\[0\] needs a model"),
    ([{"model": "m", "problem": "*"}], r"unknown keys \['problem'\]"),
    ([{"model": "m", "categories": {"a": 1}}], r"categories must be a string or a list"),
    ([{"model": "a/m"}, {"model": "b/m"}], r"names must be unique.*\['m'\]"),
    ([{"model": "m", "name": "default"}], r"not 'default'"),
    (["m"], r"must be a mapping"),
])
def test_bad_rules_are_config_errors(rules, message):
    with pytest.raises(ConfigError, match=message):
        TrainConfig(mode="distill", student="s", teachers=rules).validate()


def test_rules_from_a_config_file_and_from_set(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"mode": "distill", "student": "s", "teachers": [
        {"name": "a", "model": "ma", "problems": ["*gray*"]}, {"name": "b", "model": "mb"},
    ]}))
    config = TrainConfig.from_file(path)
    config.validate()  # no --teacher needed: the rules teach every problem
    assert [r.name for r in parse_rules(config.teachers)] == ["a", "b"]
    value = parse_field_value("teachers", "[{model: ma, problems: '*gray*'}, {model: mb, renderer: qwen3}]")
    assert value == [{"model": "ma", "problems": "*gray*"}, {"model": "mb", "renderer": "qwen3"}]
    with pytest.raises(ConfigError, match="teachers: expected a list of mappings"):
        parse_field_value("teachers", "ma")
    with pytest.raises(ConfigError, match="needs a teacher"):
        TrainConfig(mode="distill", student="s").validate()
