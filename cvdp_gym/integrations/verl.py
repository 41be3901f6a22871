"""CVDP for veRL (``verl`` 0.9.1): a reward function, a Parquet dataset, a multi-turn agent loop.

veRL scores a response with a function named in its config
(``reward.custom_reward_function.path`` / ``.name``), called by its reward manager
(``naive``: ``RewardManagerBase.run_single``) on Ray reward workers as
``compute_score(data_source=, solution_str=, ground_truth=, extra_info=, **reward_kwargs)``;
a dict result's ``score`` is the reward and its other keys are logged. Multi-turn rollouts
are an ``AgentLoopBase`` named by a row's ``agent_name`` column::

    from cvdp_gym.integrations.verl import write_agent_loop_config, write_dataset
    write_dataset("train.parquet", "bundled")                   # single-shot rows
    write_dataset("agentic.parquet", "bundled", agentic=True)   # rows for the agent loop
    write_agent_loop_config("agent_loops.yaml")                 # names CVDPAgentLoop

- ``compute_score``: grades in process with the shared grader, or, when ``url`` is given
  (``reward_kwargs``) or ``$CVDP_GYM_VERL_URL`` is set, through ``cvdp-gym serve`` (reward
  workers on machines without the simulators). Either way the same keys come back.
- ``CVDPAgentLoop`` (agent name ``cvdp_gym_agentic``): one ``CVDP-Agentic-v0`` episode per
  trajectory; the model's turns are the actions, the tool results go back as ``tool``
  messages, and the graded workspace's reward is the trajectory's ``reward_score`` (veRL
  then skips its reward manager for it, as for SWE-agent loops).

A row names its problem twice over: ``reward_model.ground_truth`` is
``{"dataset": <spec>, "problem_id": <id>}`` as JSON (what ``compute_score`` grades) and
``extra_info`` carries the same two keys (what the agent loop reads). veRL itself is needed
only for ``CVDPAgentLoop`` (built on first access): this module imports without it.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cvdp_gym.envs.agentic import AgenticEnv
from cvdp_gym.envs.single_shot import SingleShotEnv
from cvdp_gym.errors import ConfigError, UnknownProblemError
from cvdp_gym.grading.quality import QualitySettings
from cvdp_gym.grading.rewards import make_reward_parts, total
from cvdp_gym.grading.settings import GraderSettings
from cvdp_gym.integrations._shared import (
    answer_text,
    grade_metrics,
    problems,
    shared_grader,
)
from cvdp_gym.service.client import GradingClient

#: The variable that sends ``compute_score`` to a grading service (``cvdp-gym serve``).
URL_ENV = "CVDP_GYM_VERL_URL"
#: The service's bearer token, as ``cvdp-gym serve`` reads it.
TOKEN_ENV = "CVDP_GYM_SERVE_TOKEN"
#: The ``reward_kwargs`` (and agent loop ``env_config`` keys) that set the grader's ``GraderSettings``.
GRADER_KEYS = ("sandbox", "toolchain", "timeout_s", "cache", "quality")
#: The ``agent_name`` of agentic rows, under which ``CVDPAgentLoop`` is registered.
AGENT_NAME = "cvdp_gym_agentic"
#: The keys of every ``compute_score`` result: always the same set, because veRL stacks each
#: key across a batch (a string value is logged but not averaged). ``acc`` is what veRL's
#: validation reports as accuracy.
SCORE_KEYS = (
    "score", "acc", "passed", "format_ok", "syntax_ok", "tests_passed", "tests_total",
    "excluded", "infra_failure", "failure_class",
)


def problem_of(ground_truth: Any, data_source: str | None = None, extra_info: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """``(dataset spec, problem id)`` from a row's ground truth (a JSON object, a mapping, or a
    bare problem id whose dataset is ``extra_info["dataset"]``, else ``data_source``)."""
    if isinstance(ground_truth, str) and ground_truth.lstrip().startswith("{"):
        ground_truth = json.loads(ground_truth)
    extra = extra_info or {}
    if isinstance(ground_truth, Mapping):
        problem_id, dataset = ground_truth.get("problem_id"), ground_truth.get("dataset")
    else:
        problem_id, dataset = ground_truth, None
    problem_id = problem_id or extra.get("problem_id")
    dataset = dataset or extra.get("dataset") or data_source or "bundled"
    if not problem_id:
        raise ConfigError("a veRL row needs reward_model.ground_truth naming its problem (see write_dataset)")
    return str(dataset), str(problem_id)


def compute_score(
    data_source: str | None,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    reward: str = "shaped",
    url: str | None = None,
    token: str | None = None,
    **options: Any,
) -> dict[str, Any]:
    """veRL's reward function: grade ``solution_str`` for the row's problem.

    Returns ``score`` (the ``reward``: ``shaped``, ``partial``, ``binary`` or ``quality``,
    which measures a passing answer's design against the reference with ``quality``'s
    settings, ASIC on Nangate45 by default; through ``url``, the service's) and the
    outcome (``SCORE_KEYS``). The keyword options come from veRL's
    ``reward.custom_reward_function.reward_kwargs``: the grader's ``sandbox``, ``toolchain``,
    ``timeout_s``, ``cache`` and ``quality`` (``GraderSettings`` fields, their defaults there);
    keywords veRL adds for reward models are ignored. An unknown problem raises (a wrong
    dataset, not a bad answer).
    """
    dataset, problem_id = problem_of(ground_truth, data_source, extra_info)
    url = url or os.environ.get(URL_ENV)
    if url:
        answer = _client(url, token or os.environ.get(TOKEN_ENV)).grade(problem_id, response=solution_str, reward=reward)
        stages = {s["name"]: s["passed"] for s in answer["stages"]}
        info = {
            "passed": answer["passed"], "stages": {k: {"passed": v} for k, v in stages.items()},
            "tests": answer["tests"], "excluded": answer["excluded"], "infra_failure": answer["infra_failure"],
        }
        return _scored(float(answer["reward"]), info, answer["failure_class"])
    by_id = {p.id: p for p in problems(dataset, agentic=False).problems}
    if problem_id not in by_id:
        raise UnknownProblemError(f"problem_id {problem_id!r} is not a single-shot problem of {dataset!r}")
    chosen = {k: v for k, v in options.items() if k in GRADER_KEYS}
    settings = GraderSettings(**{**chosen, "quality": QualitySettings.of(chosen.get("quality"), reward=reward)})
    result = shared_grader(settings).grade_response(by_id[problem_id], answer_text(solution_str))
    info = {
        "passed": result.passed, "stages": {s.name: {"passed": s.passed} for s in result.stages},
        "tests": vars(result.tests), "excluded": result.excluded, "infra_failure": result.infra_failure,
    }
    return _scored(total(make_reward_parts(reward)(result)), info, result.failure_class)


def _scored(score: float, info: Mapping[str, Any], failure_class: str | None) -> dict[str, Any]:
    metrics = grade_metrics(dict(info))
    return {"score": score, "acc": metrics["passed"], **metrics, "failure_class": failure_class or ""}


@functools.lru_cache(maxsize=4)
def _client(url: str, token: str | None) -> GradingClient:
    return GradingClient(url, token=token, client_id=f"verl-{os.getpid()}")


def dataset_rows(
    dataset: str = "bundled",
    *,
    agentic: bool = False,
    split: str = "train",
    ids: Iterable[str] | None = None,
    categories: Iterable[str] | None = None,
    difficulty: Iterable[str] | str | None = None,
) -> list[dict[str, Any]]:
    """veRL's RL rows, one per problem after the filters: ``data_source`` (``dataset``),
    ``prompt`` (the environment's opening messages), ``ability``, ``reward_model``
    (``{"style": "rule", "ground_truth": ...}``) and ``extra_info`` (``index``, ``split``,
    ``dataset``, ``problem_id``); agentic rows also ``agent_name``."""
    selected = problems(dataset, agentic=agentic, ids=ids, categories=categories, difficulty=difficulty)
    env_cls = AgenticEnv if agentic else SingleShotEnv
    env = env_cls(selected, grader=shared_grader())
    rows = []
    try:
        for index, problem in enumerate(selected.problems):
            _, info = env.reset(options={"problem_id": problem.id})
            target = {"dataset": str(dataset), "problem_id": problem.id}
            row = {
                "data_source": str(dataset),
                "prompt": info["messages"],
                "ability": "rtl",
                "reward_model": {"style": "rule", "ground_truth": json.dumps(target)},
                "extra_info": {"index": index, "split": split, **target},
            }
            if agentic:
                row["agent_name"] = AGENT_NAME
            rows.append(row)
    finally:
        env.close()
    return rows


def write_dataset(path: str | Path, dataset: str = "bundled", **options: Any) -> Path:
    """Write ``dataset_rows(dataset, **options)`` as the Parquet file veRL's
    ``data.train_files`` / ``data.val_files`` read (needs ``pyarrow``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(dataset_rows(dataset, **options)), path)
    return path


def write_agent_loop_config(path: str | Path, env_config: Mapping[str, Any] | None = None) -> Path:
    """Write the file ``actor_rollout_ref.rollout.agent.agent_loop_config_path`` names, so
    that every rollout worker finds ``CVDPAgentLoop`` under ``AGENT_NAME``; ``env_config``
    (``CVDP-Agentic-v0`` and grader keywords) is handed to each instance."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f"- name: {AGENT_NAME}\n  _target_: {__name__}.CVDPAgentLoop\n"
    if env_config:
        text += f"  env_config: {json.dumps(dict(env_config))}\n"  # JSON is YAML's flow style
    path.write_text(text, encoding="utf-8")
    return path


@functools.cache
def _agent_loop_class() -> type:
    """Define ``CVDPAgentLoop`` on veRL's ``AgentLoopBase`` (imports veRL) and register it."""
    from uuid import uuid4

    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
    from verl.utils.profiler import simple_timer

    class CVDPAgentLoop(AgentLoopBase):
        """One ``CVDP-Agentic-v0`` episode per trajectory, graded when it ends.

        ``env_config`` (a key of the agent loop's entry in ``agent_loop_config_path``) holds
        ``AgenticEnv`` keywords (``tool_format``, ``reward``, ``max_turns``, ...) and the
        grader's (``sandbox``, ``toolchain``, ``timeout_s``, ``cache``);
        ``multi_turn.max_assistant_turns``, when set, is ``max_turns``. A turn that leaves no
        room in ``response_length`` ends the episode: the workspace is graded as it is.
        """

        def __init__(self, *args: Any, env_config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.env_config = {str(k): _plain(v) for k, v in (env_config or {}).items()}
            self.response_length = self.rollout_config.response_length
            max_turns = self.rollout_config.multi_turn.max_assistant_turns
            if max_turns:
                self.env_config.setdefault("max_turns", int(max_turns))

        async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
            extra = dict(kwargs.get("extra_info") or {})
            ground_truth = (kwargs.get("reward_model") or {}).get("ground_truth")
            dataset, problem_id = problem_of(ground_truth, kwargs.get("data_source"), extra)
            env = await self.loop.run_in_executor(None, _agentic_env, dataset, dict(self.env_config))
            try:
                return await self._play(env, problem_id, sampling_params, list(kwargs.get("raw_prompt") or []))
            finally:
                env.close()

        async def _play(self, env: AgenticEnv, problem_id: str, sampling_params: dict[str, Any], messages: list) -> AgentLoopOutput:
            _, info = await self.loop.run_in_executor(None, functools.partial(env.reset, options={"problem_id": problem_id}))
            messages = messages or list(info["messages"])
            tools, metrics, request_id = info["tools"], {}, uuid4().hex
            ids = await self.ct_build_initial_tokens(messages, tools=tools)
            mask: list[int] = []
            logprobs: list[float] = []
            reward, turns, done = 0.0, 0, False
            while not done:
                with simple_timer("generate_sequences", metrics):
                    output = await self.server_manager.generate(request_id=request_id, prompt_ids=ids, sampling_params=sampling_params)
                merged, mask, merged_lp = await self.ct_merge_assistant_token(
                    ids, output.token_ids, mask, logprobs if (logprobs or output.log_probs) else None,
                    assistant_logprobs=output.log_probs or None,
                )
                ids, logprobs, turns = merged.token_ids, merged_lp or [], turns + 1
                text = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
                with simple_timer("tool_calls", metrics):
                    observation, step_reward, terminated, truncated, info = await self.loop.run_in_executor(None, env.step, text)
                reward, done = reward + step_reward, terminated or truncated
                if not done:
                    previous = list(messages)
                    messages += [{"role": "assistant", "content": text}, *_observation_messages(info, observation)]
                    merged, new_mask, new_lp = await self.ct_merge_context_msg(
                        previous, messages, ids, mask, logprobs or None, tools=tools
                    )
                    if len(mask) >= self.response_length or len(new_mask) >= self.response_length:
                        # no room for another turn: an empty answer ends the episode and grades
                        _, step_reward, _, _, info = await self.loop.run_in_executor(None, env.step, "")
                        reward, done, info["end_reason"] = reward + step_reward, True, "response_length"
                    else:
                        ids, mask, logprobs = merged.token_ids, new_mask, new_lp or []
            length = self.response_length
            output = AgentLoopOutput(
                prompt_ids=ids[: len(ids) - len(mask)],
                response_ids=ids[len(ids) - len(mask) :][:length],
                response_mask=mask[:length],
                response_logprobs=logprobs[:length] if logprobs else None,
                reward_score=reward,
                num_turns=2 * turns,
                metrics=metrics,
            )
            output.extra_fields.update(
                turn_scores=[], tool_rewards=[], end_reason=info.get("end_reason", ""),
                reward_extra_info=_scored(reward, info, info.get("failure_class")),
            )
            return output

    # veRL's registry and hydra find it by this module's name (``__getattr__`` below).
    CVDPAgentLoop.__module__, CVDPAgentLoop.__qualname__ = __name__, "CVDPAgentLoop"
    return register(AGENT_NAME)(CVDPAgentLoop)


def _agentic_env(dataset: str, options: dict[str, Any]) -> AgenticEnv:
    # ``quality`` stays an environment option: the environment adds it to the shared grader.
    grader = shared_grader(GraderSettings(**{k: options.pop(k) for k in GRADER_KEYS if k in options and k != "quality"}))
    options.setdefault("tool_format", "qwen")
    return AgenticEnv(problems(dataset, agentic=True), grader=grader, **options)


def _observation_messages(info: Mapping[str, Any], observation: str) -> list[dict[str, Any]]:
    """The turn's tool results as ``tool`` messages (the chat template renders them), else
    the observation as a user message (malformed calls are explained there)."""
    tool_messages = [{"role": "tool", "content": m["content"]} for m in info.get("tool_messages") or []]
    return tool_messages or [{"role": "user", "content": observation or "(no tool call ran)"}]


def _plain(value: Any) -> Any:
    """An OmegaConf value as plain Python (hydra hands ``env_config`` over as a DictConfig)."""
    if type(value).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(value, resolve=True)
    return value


def __getattr__(name: str) -> Any:
    """``CVDPAgentLoop`` is built (importing veRL) on first access."""
    if name == "CVDPAgentLoop":
        return _agent_loop_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AGENT_NAME", "SCORE_KEYS", "URL_ENV", "compute_score", "dataset_rows",
    "problem_of", "write_agent_loop_config", "write_dataset",
]
