"""CVDP served as an OpenEnv environment (openenv-core 0.3.0): server app, types, client.

Serve one environment id over OpenEnv's HTTP + WebSocket app, then play it with the client::

    import uvicorn
    from cvdp_gym.integrations.openenv import make_app
    uvicorn.run(make_app("CVDP-Refine-v0", max_attempts=3), port=8000)

    from cvdp_gym.integrations.openenv import CVDPAction, CVDPEnvClient
    with CVDPEnvClient("http://127.0.0.1:8000").sync() as client:
        result = client.reset(problem_id="cvdp_gym_traffic_light_0001")
        result = client.step(CVDPAction(text=answer))
        result.reward, result.observation.info["failure_class"]

Each WebSocket session gets its own environment (``gymnasium.make(env_id, ...)``); all of an
app's environments share one problem list and one ``Grader``. OpenEnv's HTTP ``/reset`` and
``/step`` build a fresh environment per request, so over plain HTTP only one-step episodes
work: put the problem in the action (``CVDPAction(text=..., problem_id=...)``) and the step
starts that problem's episode first. OpenEnv does not send an observation's ``metadata``
over the wire, so the step's ``info`` travels in ``CVDPObservation.info`` (the client copies
it to ``metadata``).
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable
from typing import Any

import gymnasium
from fastapi import FastAPI
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from cvdp_gym.data import Dataset
from cvdp_gym.errors import UsageError

#: Environment arguments that choose the problems; the app applies them once.
_SELECTION_KEYS = ("dataset", "benchmark_dir", "ids", "categories", "difficulty")


class CVDPAction(Action):
    """The model's reply: an answer (single-shot, Refine) or a turn with a tool call in the
    environment's ``tool_format`` (Agentic)."""

    text: str = Field(description="The model's reply text.")
    problem_id: str | None = Field(
        default=None,
        description="Start this problem's episode first unless one is running (one-step HTTP use).",
    )


class CVDPObservation(Observation):
    """What the environment says back: its text, chat messages and the step's ``info``."""

    text: str = Field(default="", description="The Gymnasium observation: the prompt, then feedback ('' at the end).")
    messages: list[dict[str, str]] = Field(
        default_factory=list,
        description="reset: the system and user messages; step: the messages to append (info['tool_messages']).",
    )
    info: dict[str, Any] = Field(
        default_factory=dict,
        description="The step's documented info keys (passed, failure_class, reason, tests, stages, ...).",
    )


class CVDPState(State):
    """The session's episode: its id, environment, problem, steps and whether it ended."""

    env_id: str = ""
    problem_id: str | None = None
    done: bool = True


def _json_safe(info: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(info, default=str))


class CVDPEnvironment(Environment[CVDPAction, CVDPObservation, CVDPState]):
    """One CVDP Gymnasium environment (``gymnasium.make(env_id, **env_kwargs)``) behind
    OpenEnv's ``reset``/``step``/``state``."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session its own env; the shared Grader is thread-safe

    def __init__(self, env_id: str = "CVDP-SingleShot-v0", **env_kwargs: Any) -> None:
        super().__init__()
        self.env_id = env_id
        self.env = gymnasium.make(env_id, **env_kwargs)
        self._state = CVDPState(env_id=env_id)

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        problem_id: str | None = None,
        options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> CVDPObservation:
        """Start an episode: ``problem_id`` names the problem, else ``seed`` draws one;
        ``options`` go to the Gymnasium ``reset`` (e.g. ``grading_deadline``)."""
        if kwargs:
            raise UsageError(f"unknown reset arguments: {', '.join(sorted(kwargs))}")
        options = dict(options or {})
        if problem_id is not None:
            options["problem_id"] = problem_id
        observation, info = self.env.reset(seed=seed, options=options or None)
        self._state = CVDPState(
            episode_id=episode_id or uuid.uuid4().hex, env_id=self.env_id, problem_id=info["problem"]["id"], done=False
        )
        info = _json_safe(info)
        return CVDPObservation(text=observation, messages=info.get("messages", []), info=info, metadata=info)

    def step(self, action: CVDPAction, timeout_s: float | None = None, **kwargs: Any) -> CVDPObservation:
        """One Gymnasium step with ``action.text`` (``timeout_s`` is not used: the grader's
        own ``timeout_s`` bounds each harness run)."""
        wanted = action.problem_id
        if wanted is not None and (self._state.done or self._state.problem_id != wanted):
            self.reset(problem_id=wanted)
        if self._state.done:
            raise UsageError("reset() first (or name the problem in the action): no episode is running")
        observation, reward, terminated, truncated, info = self.env.step(action.text)
        done = bool(terminated or truncated)
        self._state.step_count += 1
        self._state.done = done
        info = _json_safe(info)
        # An answer the grader could not judge (the sandbox died) has no reward: OpenEnv's
        # ``reward`` None, and ``info["infra_failure"]`` says why; never a reward of 0.
        judged = not info.get("infra_failure")
        return CVDPObservation(
            text=observation, messages=info.get("tool_messages", []), info=info, metadata=info,
            reward=float(reward) if judged else None, done=done,
        )

    @property
    def state(self) -> CVDPState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=self.env_id,
            description=f"{self.env_id}: Verilog RTL problems graded by their harnesses in a sandbox (cvdp_gym).",
        )

    def close(self) -> None:
        self.env.close()


def environment_factory(env_id: str = "CVDP-SingleShot-v0", **env_kwargs: Any) -> Callable[[], CVDPEnvironment]:
    """A factory of ``CVDPEnvironment``s that share one problem list and one grader (both
    built now, from ``env_kwargs``), so a session or an HTTP request costs no dataset parse."""
    first = gymnasium.make(env_id, **env_kwargs).unwrapped
    try:
        shared = {k: v for k, v in env_kwargs.items() if k not in _SELECTION_KEYS}
        shared.update(dataset=Dataset(list(first.problems), source=env_id), grader=first.grader)
    finally:
        first.close()
    return functools.partial(CVDPEnvironment, env_id, **shared)


def make_app(env_id: str = "CVDP-SingleShot-v0", *, max_concurrent_envs: int = 8, **env_kwargs: Any) -> FastAPI:
    """OpenEnv's FastAPI app (``/reset``, ``/step``, ``/state``, ``/schema``, ``/ws``...) for
    ``env_id``, at most ``max_concurrent_envs`` WebSocket sessions at once; ``env_kwargs``
    are the environment's arguments (``dataset``, ``ids``, ``reward``, ``max_attempts``...)."""
    return create_app(
        environment_factory(env_id, **env_kwargs), CVDPAction, CVDPObservation,
        env_name=env_id, max_concurrent_envs=max_concurrent_envs,
    )


class CVDPEnvClient(EnvClient[CVDPAction, CVDPObservation, CVDPState]):
    """OpenEnv's WebSocket client typed for this environment (``async with``, or ``.sync()``).

    ``message_timeout_s`` defaults to 600 s: one step grades an answer with the simulator.
    """

    def __init__(self, base_url: str, *, message_timeout_s: float = 600.0, **kwargs: Any) -> None:
        super().__init__(base_url, message_timeout_s=message_timeout_s, **kwargs)

    def _step_payload(self, action: CVDPAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CVDPObservation]:
        observation = CVDPObservation.model_validate(
            {**payload.get("observation", {}), "reward": payload.get("reward"), "done": payload.get("done", False)}
        )
        observation.metadata = observation.info
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> CVDPState:
        return CVDPState.model_validate(payload)
