"""CVDP for SkyRL (``skyrl-gym`` 0.4.0): a ``BaseTextEnv`` over the Gymnasium environments.

SkyRL's generator makes one environment per rollout with
``skyrl_gym.make(row["env_class"], env_config=cfg.environment.skyrl_gym[env_class],
extras=<the row's other columns>)``, calls ``init(prompt)``, then ``step(text)`` until
``done``. Three env classes, one per Gymnasium environment::

    from cvdp_gym.integrations.skyrl import register, write_dataset
    register()                                   # in every process that makes envs
    write_dataset("train.parquet", "bundled")    # rows for env_class "cvdp_gym"

- ``cvdp_gym``: ``CVDP-SingleShot-v0``, one graded step.
- ``cvdp_gym_refine``: ``CVDP-Refine-v0``; the grader's feedback is the next user message.
- ``cvdp_gym_agentic``: ``CVDP-Agentic-v0``; the model's tool calls (``execute_bash``,
  ``finish``, in ``tool_format``) run in the sandbox and their results are the next user
  message.

A row's extras name the problem (``problem_id``) and the dataset it comes from
(``data_source``: any spec ``cvdp_gym.data.load_dataset`` reads). SkyRL's
``generator.max_turns`` (put into the extras by the generator) bounds Refine's answers and
Agentic's turns. ``env_config`` holds ``gymnasium.make`` keywords (``reward``,
``timeout_s``, ``feedback``, ``tool_format``, ...). The reward is the Gymnasium step's and
``metadata`` carries the documented grade keys of its ``info``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from cvdp_gym.errors import ConfigError
from cvdp_gym.grading.settings import GraderSettings
from cvdp_gym.integrations._shared import grade_metrics, problems, shared_grader

#: SkyRL env class -> the Gymnasium environment it plays.
ENV_CLASSES = {
    "cvdp_gym": "CVDP-SingleShot-v0",
    "cvdp_gym_refine": "CVDP-Refine-v0",
    "cvdp_gym_agentic": "CVDP-Agentic-v0",
}
#: ``info`` keys of a graded step that ``step`` returns in ``metadata``.
METADATA_KEYS = (
    "passed", "failure_class", "reason", "stages", "tests", "official",
    "excluded", "late", "infra_failure", "reward", "end_reason",
)
#: ``env_config`` keys that build the (shared) grader rather than the environment.
_GRADER_KEYS = ("sandbox", "toolchain", "timeout_s", "cache")
#: The keyword each multi-turn environment takes its turn limit by.
_TURN_LIMITS = {"CVDP-Refine-v0": "max_attempts", "CVDP-Agentic-v0": "max_turns"}


class CVDPTextEnv(BaseTextEnv):
    """One CVDP episode for SkyRL: ``extras`` name the problem, ``env_config`` the options."""

    def __init__(
        self,
        env_config: Mapping[str, Any] | None = None,
        extras: Mapping[str, Any] | None = None,
        *,
        gym_id: str = "CVDP-SingleShot-v0",
    ) -> None:
        super().__init__()
        extras = dict(extras or {})
        if "problem_id" not in extras:
            raise ConfigError("a CVDP row needs a problem_id column (see write_dataset)")
        self.problem_id = str(extras["problem_id"])
        options = dict(env_config or {})
        grader = shared_grader(GraderSettings(**{k: options.pop(k) for k in _GRADER_KEYS if k in options}))
        limit = _TURN_LIMITS.get(gym_id)
        if limit and extras.get("max_turns"):
            self.max_turns = int(extras["max_turns"])
            options[limit] = self.max_turns
        agentic = gym_id == ENV_CLASSES["cvdp_gym_agentic"]
        selected = problems(str(extras.get("data_source") or "bundled"), agentic=agentic)
        self.env = gym.make(gym_id, dataset=selected, grader=grader, **options)
        self.info: dict[str, Any] = {}

    def init(self, prompt: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        """Start the episode; the row's prompt (else the environment's own messages)."""
        _, info = self.env.reset(options={"problem_id": self.problem_id})
        return (prompt or info["messages"]), {"problem": info["problem"]}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One assistant turn: graded (and the episode over), or the next user message."""
        self.turns += 1
        observation, reward, terminated, truncated, info = self.env.step(action)
        done = terminated or truncated
        self.info = info
        messages = [] if done or not observation else [{"role": "user", "content": observation}]
        metadata = {k: info[k] for k in METADATA_KEYS if k in info}
        return BaseTextEnvStepOutput(observations=messages, reward=float(reward), done=done, metadata=metadata)

    def get_metrics(self) -> dict[str, Any]:
        """The episode's numeric grade metrics (``passed``, ``tests_passed``, ...)."""
        return {**grade_metrics(self.info), "turns": self.turns} if "passed" in self.info else {"turns": self.turns}

    def close(self) -> None:
        self.env.close()


def register() -> None:
    """Register ``cvdp_gym``, ``cvdp_gym_refine`` and ``cvdp_gym_agentic`` with
    ``skyrl_gym`` (once per process; again is a no-op)."""
    for env_class, gym_id in ENV_CLASSES.items():
        if env_class not in skyrl_gym.registry:
            skyrl_gym.register(
                id=env_class, entry_point=f"{__name__}:CVDPTextEnv", kwargs={"gym_id": gym_id}
            )


def dataset_rows(
    dataset: str = "bundled",
    *,
    env_class: str = "cvdp_gym",
    ids: Iterable[str] | None = None,
    categories: Iterable[str] | None = None,
    difficulty: Iterable[str] | str | None = None,
) -> list[dict[str, Any]]:
    """SkyRL prompt rows: ``prompt`` (the environment's opening messages), ``env_class``,
    ``problem_id`` and ``data_source`` (``dataset``), one per problem after the filters."""
    if env_class not in ENV_CLASSES:
        raise ConfigError(f"env_class must be one of {', '.join(ENV_CLASSES)}, got {env_class!r}")
    agentic = env_class == "cvdp_gym_agentic"
    selected = problems(dataset, agentic=agentic, ids=ids, categories=categories, difficulty=difficulty)
    env = gym.make(ENV_CLASSES[env_class], dataset=selected, grader=shared_grader())
    rows = []
    try:
        for problem in selected.problems:
            _, info = env.reset(options={"problem_id": problem.id})
            rows.append({
                "prompt": info["messages"],
                "env_class": env_class,
                "problem_id": problem.id,
                "data_source": str(dataset),
            })
    finally:
        env.close()
    return rows


def write_dataset(path: str | Path, dataset: str = "bundled", **filters: Any) -> Path:
    """Write ``dataset_rows(dataset, **filters)`` as SkyRL's ``data.train_data`` reads it:
    Parquet for a ``.parquet`` path (needs ``pyarrow``), else JSON lines."""
    path = Path(path)
    rows = dataset_rows(dataset, **filters)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        import pandas as pd

        pd.DataFrame(rows).to_parquet(path, index=False)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


register()

__all__ = ["ENV_CLASSES", "METADATA_KEYS", "CVDPTextEnv", "dataset_rows", "register", "write_dataset"]
