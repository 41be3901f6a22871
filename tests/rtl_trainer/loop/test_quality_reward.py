"""``TrainConfig.reward = quality``: the trainer's environments measure passing answers with
the library and clock it names and pay the quality part; the reference earns its 0.5 of it
in a real episode (real sandbox, real ASIC flow on the test liberty); bad settings are
one-line config errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.grading.rewards import MAX_SHAPED
from cvdp_gym.toolchain import quality_tools
from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import ConfigError
from rtl_trainer.loop.envs import make_env_factory
from tests.support import RTLLM_COPY, missing

LIBERTY = str(Path(__file__).parents[2] / "fixtures" / "quality" / "tiny.lib")


@pytest.mark.sandbox
def test_the_quality_reward_reaches_the_environments(toolchain) -> None:
    if not quality_tools.ready():
        missing(f"quality tools: {quality_tools.problem()}")
    config = TrainConfig(
        mode="rl", student="s", env="RTL-SingleShot-v0", dataset="rtllm-v2", benchmark_dir=str(RTLLM_COPY),
        reward="quality", quality_liberty=LIBERTY, quality_clock_ns=5.0, grade_cache=False,
    )
    config.validate()
    env = make_env_factory(config, training=False)()
    try:
        stage = env.unwrapped.quality
        assert (stage.settings.flow, stage.settings.clock_ns, stage.liberty.name) == ("asic", 5.0, "tiny")
        problem = env.unwrapped._by_id["rtllm-v2.adder_4bit"]
        env.reset(options={"problem_id": problem.id})
        _, reward, _, _, info = env.step(answer_text(problem, dict(problem.reference)))
    finally:
        env.close()
    assert info["passed"] and info["quality"]["score"] == 0.5
    assert reward == pytest.approx(MAX_SHAPED + 0.5)


@pytest.mark.parametrize(
    ("fields", "message"),
    [({"quality": "sta"}, "quality must be asic or fpga"), ({"quality_clock_ns": 0.0}, "quality_clock_ns must be > 0")],
)
def test_bad_quality_settings_are_config_errors(fields, message) -> None:
    with pytest.raises(ConfigError, match=message):
        TrainConfig(mode="rl", student="s", **fields).validate()
