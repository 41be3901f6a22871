"""NeMo-Gym resources-server routes: ``/seed_session``, ``/close_session``, ``/verify``,
``/aggregate_metrics``, ``/reverify_mode``.

Shapes written from NeMo-Gym's ``nemo_gym/base_resources_server.py`` (its package needs
Python 3.13, so it is not a dependency; ``tests/cvdp_gym/service/test_nemo_gym_models.py``
validates real traffic with its own models, under the sandbox's Python 3.14): a verify
request is ``BaseVerifyRequest`` (``responses_create_params``, ``response``: an OpenAI
Responses API response) plus the task's metadata, here ``verifier_metadata: {problem_id,
rtl_files?}``; the answer echoes the request and adds ``reward`` and
``BaseVerifyResponse``'s ``mask_sample``, ``failure_kind``, ``failure_reason`` (and
``BaseMultiRewardVerifyResponse``'s ``reward_components``: the reward's parts, which add up
to it), plus this service's verdict fields and NeMo-Gym's CVDP server's (``task_id``,
``category``, ``container_exit_code``, ``container_services``...), which its report reads.
A wrong answer is not a failure in NeMo-Gym's sense (its ``failure_kinds`` name what went
wrong with the machinery): ``failure_kind`` is set only when the grade measures
nothing (``mask_sample``): ``verifier_error`` when grading itself failed, and
``cvdp_gym:<class>`` for an answer this toolchain cannot score (``unsupported``,
``toolchain_gap``). ``/aggregate_metrics`` takes ``{"verify_responses": [...]}`` and answers
``AggregateMetrics`` (``group_level_metrics``, ``agent_metrics``, ``key_metrics``), leaving
out the ``mask_sample`` rows as NeMo-Gym's own aggregation does. Sessions
hold no state (grading is a function of the answer): ``/seed_session`` and
``/close_session`` confirm the caller's ``resources_session_id``, and ``/reverify_mode`` is
``stateless`` (a stored rollout can be verified again). The Responses API objects are kept
as free JSON (only ``response.output``'s text is read).

An agent's seed of a row naming an agentic problem (what verifiers' ``NeMoGymTaskset`` and
NeMo-Gym's agents send: the row itself) is the exception: it opens a workspace session
(:mod:`cvdp_gym.service.sessions`), named by a cookie, that the row's ``execute_bash`` tool
route acts on and whose target files ``/verify`` grades, as ``CVDP-Agentic-v0`` does.
"""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from cvdp_gym.data.problems import Problem, problem_from_record
from cvdp_gym.envs.messages import missing_targets
from cvdp_gym.envs.prompts import agentic_messages, single_shot_messages
from cvdp_gym.errors import ConfigError
from cvdp_gym.grading.result import GradeResult
from cvdp_gym.grading.rewards import make_reward_parts
from cvdp_gym.service.core import GradingService, answer_of, client_of, error, reward_refused
from cvdp_gym.service.models import RewardKind
from cvdp_gym.service.sessions import SESSION_COOKIE, AgentSessions, responses_tools


class VerifierMetadata(BaseModel):
    """The task of a ``/verify``: this service's shape (``problem_id``, ``rtl_files``) or
    NeMo-Gym's own CVDP server's (``task_id``, ``categories``, ``target_files``,
    ``harness_files``, ``context_files``; the agent's files then at the request's top level).
    A task this server's dataset does not hold is graded from the harness it carries."""

    model_config = ConfigDict(extra="allow")

    problem_id: str | None = Field(default=None, min_length=1, max_length=500)
    task_id: str | None = Field(default=None, min_length=1, max_length=500)
    #: Files the agent wrote (path → text): graded instead of the response's text.
    rtl_files: dict[str, str] | None = None
    reward: RewardKind | None = None
    deadline_s: float | None = Field(default=None, gt=0)
    categories: list[str] = Field(default_factory=list, max_length=10)
    target_files: list[str] = Field(default_factory=list, max_length=200)
    harness_files: dict[str, str | None] = Field(default_factory=dict)
    context_files: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _named(self) -> VerifierMetadata:
        if self.problem_id is None and self.task_id is None:
            raise ConfigError("verifier_metadata names no task: give 'problem_id' (or NeMo-Gym's 'task_id')")
        return self

    @property
    def id(self) -> str:
        return self.problem_id or self.task_id or ""

    def embedded_problem(self) -> Problem | None:
        """The task as a problem, from the harness it carries (None: it carries none)."""
        harness = {path: text for path, text in self.harness_files.items() if text is not None}
        if not harness:
            return None
        record = {
            "id": self.id, "categories": list(self.categories),
            "input": {"prompt": "", "context": dict(self.context_files)},
            "output": {"context": {path: "" for path in self.target_files}},
            "harness": {"files": harness},
        }
        return problem_from_record(record, source="verifier_metadata")


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    responses_create_params: dict[str, Any]
    response: dict[str, Any]
    verifier_metadata: VerifierMetadata
    #: NeMo-Gym's CVDP server takes the agent's files here, beside the metadata.
    rtl_files: dict[str, str] | None = None


class VerifiedRow(BaseModel):
    """One ``/verify`` answer as ``/aggregate_metrics`` reads it (NeMo-Gym strips rows, so
    only ``reward`` is required); typed, so that a wrong type is a 422, not a 500."""

    model_config = ConfigDict(extra="allow")

    reward: float
    passed: bool = False
    #: NeMo-Gym's ``mask_sample``: the reward measures nothing (the grader could not judge the
    #: answer, or this toolchain cannot score it): left out of the metrics.
    mask_sample: bool = False
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
#: NeMo-Gym's registered name for "the verifier failed".
VERIFIER_ERROR = "verifier_error"


def final_answer(response: dict[str, Any]) -> str:
    """The text of a Responses API response's final answer: its last output item when that
    is a message (a turn without tool calls, as ``CVDP-Agentic-v0`` ends), else ``""``."""
    output = [item for item in response.get("output") or [] if isinstance(item, dict)]
    if not output or output[-1].get("type", "message") != "message":
        return ""
    return response_text({"output": output[-1:]})


def failure_kind(result: GradeResult) -> str | None:
    """NeMo-Gym's ``failure_kind`` of a grade: None when it measures the answer (passed or
    not); ``verifier_error`` when grading failed; else the class, namespaced (an
    unregistered bare name is logged as a warning by ``BaseVerifyResponse``), a character
    outside ``[a-z0-9_]`` made ``_``."""
    if result.infra_failure:
        return VERIFIER_ERROR
    if not result.excluded:
        return None
    name = re.sub(r"[^a-z0-9_]", "_", (result.failure_class or "excluded").lower())
    return FAILURE_KIND_PREFIX + (name if name[:1].isalpha() else f"x{name}")


def container_exit_code(result: GradeResult) -> int:
    """NeMo-Gym's CVDP ``container_exit_code``: 0 exactly when the answer passed (its report
    counts a pass by it), else 1, as its server's harness runner ends a failed run."""
    return 0 if result.passed else 1


def container_stderr(result: GradeResult) -> str:
    """NeMo-Gym's CVDP ``container_stderr``: every service's log tail, each line block headed
    ``[service]`` as its server joins them (its report keeps it as a failed rollout's log)."""
    return "\n".join(f"[{run['name']}] {run['log_tail']}" for run in result.services)


def container_services(result: GradeResult) -> list[dict[str, Any]]:
    """NeMo-Gym's CVDP ``container_services``: ``{"service", "exit_code", "stderr"}`` for each
    harness service (``stderr`` the tail of its output), empty when no harness ran (its
    report then reads ``container_exit_code``). A service that failed never exits 0 here:
    its own code, else 1 (a service killed, or failed by a check its exit does not show)."""
    return [
        {"service": run["name"], "exit_code": _service_exit_code(run), "stderr": run["log_tail"]}
        for run in result.services
    ]


def _service_exit_code(run: dict[str, Any]) -> int:
    if run["passed"]:
        return 0
    code = run["returncode"]
    return code if isinstance(code, int) and code != 0 else 1


class SessionRequest(BaseModel):
    """``ResourcesSeedSessionRequest`` / ``ResourcesCloseSessionRequest``: the caller's id."""

    model_config = ConfigDict(extra="allow")

    resources_session_id: str = Field(min_length=1, max_length=1000)


class ExecuteBashRequest(BaseModel):
    """The ``execute_bash`` tool's arguments (``CVDP-Agentic-v0``'s tool)."""

    command: str


def nemo_gym_row(problem: Problem) -> dict[str, Any]:
    """A NeMo-Gym dataset row for ``problem`` (what ``NeMoGymTaskset`` and ``ng_collect_rollouts``
    read): ``responses_create_params.input`` the messages ``CVDP-SingleShot-v0`` or
    ``CVDP-Agentic-v0`` opens it with, an agentic row's ``tools`` this server's tool routes,
    and ``verifier_metadata.problem_id``."""
    params: dict[str, Any] = {"input": agentic_messages(problem) if problem.agentic else single_shot_messages(problem)}
    if problem.agentic:
        params["tools"] = responses_tools()
    return {"responses_create_params": params, "verifier_metadata": {"problem_id": problem.id}}


def seeded_problem(service: GradingService, body: dict[str, Any] | None) -> Problem | None:
    """The problem of this server's dataset an agent's seed names in its row's
    ``verifier_metadata`` (``problem_id`` or ``task_id``), or None."""
    meta = (body or {}).get("verifier_metadata")
    if not isinstance(meta, dict):
        return None
    name = meta.get("problem_id") or meta.get("task_id")
    return service.problems.get(name) if isinstance(name, str) else None


def _task(service: GradingService, meta: VerifierMetadata) -> Problem:
    """The problem a verify request names: this server's, else the one its metadata carries."""
    if meta.id in service.problems:
        return service.problem(meta.id)
    embedded = meta.embedded_problem()
    return embedded if embedded is not None else service.problem(meta.id)


def add_routes(app: FastAPI, service: GradingService) -> AgentSessions:
    """The NeMo-Gym routes on ``app``; the agentic sessions they keep (closed by the caller
    when the server stops)."""
    sessions = AgentSessions(service.grader)

    @app.post("/seed_session", tags=["nemo-gym"], summary="NeMo-Gym: start a session (an agentic row: its workspace)")
    async def seed_session(request: Request, response: Response, body: dict[str, Any] | None = None) -> dict[str, Any]:
        session = (body or {}).get("resources_session_id")
        if session is None:  # an agent's seed: an empty answer, and an agentic row's workspace
            problem = seeded_problem(service, body)
            if problem is not None and sessions.takes(problem):
                sessions.close(request.cookies.get(SESSION_COOKIE))
                opened = await asyncio.to_thread(sessions.open, problem)
                response.set_cookie(SESSION_COOKIE, opened, httponly=True, samesite="lax")
            return {}
        return {"resources_session_id": SessionRequest(resources_session_id=session).resources_session_id}

    @app.post("/close_session", tags=["nemo-gym"], summary="NeMo-Gym: end a session (an agentic one's workspace)")
    async def close_session(body: SessionRequest, request: Request) -> dict[str, Any]:
        sessions.close(request.cookies.get(SESSION_COOKIE))
        return {"resources_session_id": body.resources_session_id}

    @app.post(
        "/execute_bash", tags=["nemo-gym"], response_class=PlainTextResponse,
        summary="NeMo-Gym tool: run a bash command in the agentic session's workspace",
        responses={404: {"description": "No agentic session (seed one with an agentic problem's row)"}},
    )
    async def execute_bash(body: ExecuteBashRequest, request: Request) -> Any:
        session = sessions.get(request.cookies.get(SESSION_COOKIE))
        if session is None:
            return error(404, "no agentic session: seed one (POST /seed_session with an agentic problem's row) and send its cookie")
        result = await asyncio.to_thread(session.run, body.command)
        return PlainTextResponse(result.observation)

    @app.get("/reverify_mode", tags=["nemo-gym"], summary="NeMo-Gym: stored rollouts can be verified again")
    async def reverify_mode() -> str:
        return "stateless"

    @app.post("/verify", tags=["nemo-gym"], summary="NeMo-Gym: grade a rollout's response")
    async def verify(body: VerifyRequest, request: Request) -> Any:
        meta = body.verifier_metadata
        problem = _task(service, meta)
        refused = reward_refused(service.config, meta.reward or service.config.reward)
        if refused is not None:
            return refused
        files = body.rtl_files if body.rtl_files is not None else meta.rtl_files
        session_id = request.cookies.get(SESSION_COOKIE)
        session = sessions.get(session_id) if files is None else None
        if session is not None and session.problem.id != problem.id:
            session = None
        workspace = None
        if session is not None:  # an agentic session: what the environment's last step grades
            files, workspace = await asyncio.to_thread(session.final_files, final_answer(body.response))
        text = None if files is not None else response_text(body.response)
        if session is not None and problem.targets and not files:
            outcome: tuple[GradeResult, float, float] | JSONResponse = (
                missing_targets(problem.id, [t for t in problem.targets if t not in (files or {})]), 0.0, 0.0)
        else:
            outcome = await service.verdict(
                problem, client=client_of(request), response=text, files=files, deadline_s=meta.deadline_s, workspace=workspace,
            )
        if isinstance(outcome, JSONResponse):
            return outcome
        if session is not None:  # graded: the rollout is over
            sessions.close(session_id)
        result, queued, total = outcome
        reward = meta.reward or service.config.reward
        answer = answer_of(result, reward, queued, total)
        kind = failure_kind(result)
        # Written by json.dumps, which takes whatever depth the parser took: FastAPI's own
        # serialiser stops at a lower one, and a deeply nested extra field was a 500.
        return JSONResponse({
            **body.model_dump(),
            "reward": answer.reward,
            "reward_components": make_reward_parts(reward)(result),
            "mask_sample": result.infra_failure or result.excluded,
            "failure_kind": kind,
            "failure_reason": result.reason if kind else None,
            "passed": answer.passed,
            "verdict": answer.verdict,
            "tests": answer.tests.model_dump(),
            "cached": answer.cached,
            "grade_s": answer.grade_s,
            # NeMo-Gym's CVDP server's fields, so its reports read these rows too.
            "task_id": problem.id,
            "category": problem.category or None,
            "difficulty": problem.difficulty,
            "extracted_rtl": dict(result.files) or None,
            "execution_time": answer.grade_s,
            "parse_failed": text is not None and not result.format_ok,
            "container_exit_code": container_exit_code(result),
            "container_services": container_services(result),
            "container_stderr": container_stderr(result),
        })

    @app.post("/aggregate_metrics", tags=["nemo-gym"], summary="NeMo-Gym: reward and pass rate per problem and overall")
    async def aggregate_metrics(body: AggregateMetricsRequest) -> dict[str, Any]:
        # NeMo-Gym's rule (``reward_profile.select_measured``): a masked row's reward is not a
        # measurement, so it is left out of every mean and rate, and only counted.
        measured = [row for row in body.verify_responses if not row.mask_sample]
        masked = len(body.verify_responses) - len(measured)
        by_problem: dict[str, list[VerifiedRow]] = defaultdict(list)
        for row in measured:
            by_problem[row.problem].append(row)

        def summary(rows: list[VerifiedRow]) -> dict[str, Any]:
            rewards = [r.reward for r in rows]
            return {
                "count": len(rows),
                "mean/reward": sum(rewards) / len(rewards) if rewards else 0.0,
                "pass_rate": sum(r.passed for r in rows) / len(rows) if rows else 0.0,
            }

        overall = summary(measured)
        if masked:  # NeMo-Gym's coverage keys, present only when something was masked
            overall |= {"coverage/measured_rollouts": len(measured), "coverage/masked_rollouts": masked}
        return {
            "group_level_metrics": [{"problem_id": pid, **summary(rows)} for pid, rows in sorted(by_problem.items())],
            "agent_metrics": overall,
            "key_metrics": {"mean/reward": overall["mean/reward"], "pass_rate": overall["pass_rate"]},
        }

    return sessions
