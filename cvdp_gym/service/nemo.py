"""NeMo-Gym resources-server routes: ``/seed_session``, ``/verify``, ``/aggregate_metrics``.

Shapes written from NeMo-Gym's ``nemo_gym/base_resources_server.py`` (its package needs
Python 3.13, so it is not a dependency; ``tests/cvdp_gym/service/test_nemo_gym_models.py``
validates real traffic with its own models, under the sandbox's Python 3.14): a verify
request is ``BaseVerifyRequest`` (``responses_create_params``, ``response``: an OpenAI
Responses API response) plus the task's metadata, here ``verifier_metadata: {problem_id,
rtl_files?}``; the answer echoes the request and adds ``reward`` and
``BaseVerifyResponse``'s ``mask_sample``, ``failure_kind`` (``cvdp_gym:<failure class>``),
``failure_reason`` (and ``BaseMultiRewardVerifyResponse``'s ``reward_components``), plus
this service's verdict fields. ``/aggregate_metrics`` takes ``{"verify_responses": [...]}``
and answers ``AggregateMetrics`` (``group_level_metrics``, ``agent_metrics``, ``key_metrics``).
The Responses API objects are kept as free JSON (only ``response.output``'s text is read).
"""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from cvdp_gym.service.core import GradingService, answer_of, queue_full, shutting_down
from cvdp_gym.service.models import RewardKind


class VerifierMetadata(BaseModel):
    problem_id: str = Field(min_length=1, max_length=500)
    #: Files the agent wrote (path → text): graded instead of the response's text.
    rtl_files: dict[str, str] | None = None
    reward: RewardKind = "shaped"
    deadline_s: float | None = Field(default=None, gt=0)


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    responses_create_params: dict[str, Any]
    response: dict[str, Any]
    verifier_metadata: VerifierMetadata


class VerifiedRow(BaseModel):
    """One ``/verify`` answer as ``/aggregate_metrics`` reads it (NeMo-Gym strips rows, so
    only ``reward`` is required); typed, so that a wrong type is a 422, not a 500."""

    model_config = ConfigDict(extra="allow")

    reward: float
    passed: bool = False
    verifier_metadata: dict[str, Any] | None = None
    problem_id: str | int | None = None

    @property
    def problem(self) -> str:
        meta = self.verifier_metadata or {}
        return str(meta.get("problem_id", self.problem_id if self.problem_id is not None else ""))


class AggregateMetricsRequest(BaseModel):
    verify_responses: list[VerifiedRow]


def response_text(response: dict[str, Any]) -> str:
    """The text of a Responses API response: its ``output_text``, else every message's
    ``output_text`` parts in order."""
    if isinstance(response.get("output_text"), str) and response["output_text"]:
        return response["output_text"]
    parts: list[str] = []
    for item in response.get("output") or []:
        if isinstance(item, dict) and item.get("type", "message") == "message":
            for content in item.get("content") or []:
                if isinstance(content, dict) and content.get("type") == "output_text":
                    parts.append(str(content.get("text", "")))
    return "\n".join(parts)


#: NeMo-Gym's ``failure_kind`` of a class outside its shared vocabulary: ``<server>:<kind>``.
FAILURE_KIND_PREFIX = "cvdp_gym:"


def failure_kind(failure_class: str | None) -> str:
    """The verdict's failure class in NeMo-Gym's ``failure_kinds`` form: namespaced, since
    none of ours is in its shared vocabulary (an unregistered name is logged as a warning
    by ``BaseVerifyResponse``); a character outside ``[a-z0-9_]`` becomes ``_``."""
    name = re.sub(r"[^a-z0-9_]", "_", (failure_class or "failed").lower())
    return FAILURE_KIND_PREFIX + (name if name[:1].isalpha() else f"x{name}")


def add_routes(app: FastAPI, service: GradingService) -> None:
    @app.post("/seed_session", tags=["nemo-gym"], summary="NeMo-Gym: start a session (nothing to set up)")
    async def seed_session(body: dict[str, Any] | None = None) -> dict[str, Any]:
        return {}

    @app.post("/verify", tags=["nemo-gym"], summary="NeMo-Gym: grade a rollout's response")
    async def verify(body: VerifyRequest) -> Any:
        meta = body.verifier_metadata
        problem = service.problem(meta.problem_id)
        text = None if meta.rtl_files is not None else response_text(body.response)
        result = service.cached(problem, response=text, files=meta.rtl_files)
        if result is not None:
            queued, total = 0.0, result.wall_s
        elif not service.admit():
            return queue_full(service)
        else:
            try:
                result, queued, total = await service.grade(problem, response=text, files=meta.rtl_files, deadline_s=meta.deadline_s)
            except asyncio.CancelledError:  # uvicorn's graceful shutdown ran out of time
                return shutting_down(service)
        answer = answer_of(result, meta.reward, queued, total)
        stages = {s.name: float(bool(s.passed)) for s in answer.stages}
        # Written by json.dumps, which takes whatever depth the parser took: FastAPI's own
        # serialiser stops at a lower one, and a deeply nested extra field was a 500.
        return JSONResponse({
            **body.model_dump(),
            "reward": answer.reward,
            "reward_components": {**stages, "test_fraction": result.test_fraction},
            "mask_sample": result.infra_failure or result.excluded,
            "failure_kind": None if result.passed else failure_kind(result.failure_class),
            "failure_reason": None if result.passed else result.reason,
            "passed": answer.passed,
            "verdict": answer.verdict,
            "tests": answer.tests.model_dump(),
            "cached": answer.cached,
            "grade_s": answer.grade_s,
        })

    @app.post("/aggregate_metrics", tags=["nemo-gym"], summary="NeMo-Gym: reward and pass rate per problem and overall")
    async def aggregate_metrics(body: AggregateMetricsRequest) -> dict[str, Any]:
        by_problem: dict[str, list[VerifiedRow]] = defaultdict(list)
        for row in body.verify_responses:
            by_problem[row.problem].append(row)

        def summary(rows: list[VerifiedRow]) -> dict[str, Any]:
            rewards = [r.reward for r in rows]
            return {
                "count": len(rows),
                "mean/reward": sum(rewards) / len(rewards) if rewards else 0.0,
                "pass_rate": sum(r.passed for r in rows) / len(rows) if rows else 0.0,
            }

        overall = summary(body.verify_responses)
        return {
            "group_level_metrics": [{"problem_id": pid, **summary(rows)} for pid, rows in sorted(by_problem.items())],
            "agent_metrics": overall,
            "key_metrics": {"mean/reward": overall["mean/reward"], "pass_rate": overall["pass_rate"]},
        }
