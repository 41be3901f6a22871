"""``TrainConfig.grade_verdict``: the trainer's environments grade with the verdict it names
(``testbench+reference``: a test-bench pass also needs equivalence with the reference), and
an unknown one is a one-line config error."""

from __future__ import annotations

import pytest

from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import ConfigError
from rtl_trainer.loop.envs import make_env_factory
from tests.support import RTLLM_COPY


def test_the_verdict_reaches_the_environments(toolchain) -> None:
    config = TrainConfig(
        mode="rl", student="s", env="RTL-SingleShot-v0", dataset="rtllm-v2", benchmark_dir=str(RTLLM_COPY),
        grade_verdict="testbench+reference", grade_cache=False,
    )
    config.validate()
    env = make_env_factory(config, training=False)()
    assert env.unwrapped.grader.verdict == "testbench+reference"
    env.close()


def test_an_unknown_verdict_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="grade_verdict: unknown verdict 'reference'"):
        TrainConfig(mode="rl", student="s", grade_verdict="reference").validate()
