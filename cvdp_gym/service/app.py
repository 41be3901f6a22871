"""The grading service's FastAPI application: ``create_app(ServiceConfig(...))``.

Routes: ``POST /v1/grade``, ``GET /v1/problems``, ``GET /healthz`` (also ``/health``,
``/livez``, ``/readyz``, ``/``), ``GET /metrics``,
FastAPI's ``/docs`` and ``/openapi.json``, and the NeMo-Gym resources-server routes of
:mod:`cvdp_gym.service.nemo` (``/seed_session``, ``/verify``, ``/aggregate_metrics``, and
the agentic sessions' tool ``/execute_bash``).

Safety, in one ASGI middleware (``_Guard``) in front of every route: a bearer token (when
one is set; ``/healthz``, ``/docs`` and ``/openapi.json`` stay open), a body-size limit
(413), a refusal (400) of what Python's JSON parser accepts but is not valid JSON
(``json_problem``), and the request counters of ``/metrics``. An answer the result cache
holds is answered at once; other grading jobs go through a bounded queue:
``workers`` grade at once, ``queue`` more wait, and one beyond that is answered 429 with
``Retry-After``. Every job is graded with a deadline (the request's ``deadline_s``, capped
by and defaulting to the server's ``deadline_s``): a job still running then is cancelled,
its sandbox killed, and scored ``timeout``, never cached (``Grader``'s own deadline
handling). The grader's result cache is shared by every request. On shutdown the grader's
executors are closed, which kills the sandboxes still running.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse

from cvdp_gym.errors import CvdpGymError, UnavailableError, UnknownProblemError
from cvdp_gym.service import nemo
from cvdp_gym.service.core import (
    OPEN_PATHS,
    TOKEN_ENV,
    GradingService,
    ServiceConfig,
    answer_of,
    client_of,
    error,
    reward_refused,
)
from cvdp_gym.service.models import GradeAnswer, GradeRequest, ProblemList, ProblemSummary

__all__ = ["TOKEN_ENV", "ServiceConfig", "create_app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def create_app(config: ServiceConfig) -> FastAPI:
    """The application; serve it with uvicorn (``cvdp-gym serve`` does)."""
    service = GradingService(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        agent_sessions.close_all()
        service.close()

    app = FastAPI(
        title="cvdp-gym grading service",
        summary="Grade answers to CVDP problems with their cocotb harnesses.",
        lifespan=lifespan,
    )
    app.state.service = service

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Any, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own 422, but a body that was not JSON (no JSON content type) is echoed
        # as text: FastAPI's encoder decodes its bytes as strict UTF-8, a 500 on random bytes.
        errors = jsonable_encoder(exc.errors(), custom_encoder={bytes: lambda b: b.decode("utf-8", "replace")})
        return JSONResponse({"detail": errors}, status_code=422)

    @app.exception_handler(UnknownProblemError)
    async def unknown_problem(_request: Any, exc: UnknownProblemError) -> JSONResponse:
        return error(404, str(exc.args[0]) if exc.args else "unknown problem")

    @app.exception_handler(UnavailableError)
    async def unavailable(_request: Any, exc: UnavailableError) -> JSONResponse:
        return error(503, str(exc))

    @app.exception_handler(CvdpGymError)
    async def bad_input(_request: Any, exc: CvdpGymError) -> JSONResponse:
        return error(422, str(exc.args[0]) if exc.args else type(exc).__name__)

    # /health, /livez, /readyz and /: where NeMo-Gym's (and Kubernetes') probes look.
    @app.get("/health", include_in_schema=False)
    @app.get("/livez", include_in_schema=False)
    @app.get("/readyz", include_in_schema=False)
    @app.get("/", include_in_schema=False)
    @app.get("/healthz", summary="Liveness: ok while the server takes requests")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "problems": len(service.problems), "queue_depth": config.metrics.queue_depth}

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus counters")
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(config.metrics.render(), media_type="text/plain; version=0.0.4")

    @app.get("/v1/problems", response_model=ProblemList, summary="The problems this server grades")
    async def problems() -> ProblemList:
        return ProblemList(
            dataset=config.dataset.source, count=len(service.problems),
            problems=[
                ProblemSummary(id=p.id, category=p.category, difficulty=p.difficulty, agentic=p.agentic,
                               scoring=p.scoring, targets=list(p.targets), unsupported=p.unsupported,
                               benchmark=p.benchmark, task=p.task, defect=p.defect)
                for p in service.problems.values()
            ],
        )

    @app.post(
        "/v1/grade", response_model=GradeAnswer, summary="Grade one answer",
        responses={404: {"description": "Unknown problem id"}, 429: {"description": "Queue full (see Retry-After)"},
                   413: {"description": "Body too large"}},
    )
    async def grade(body: GradeRequest, request: Request) -> Any:
        problem = service.problem(body.problem_id)
        refused = reward_refused(config, body.reward or config.reward)
        if refused is not None:
            return refused
        outcome = await service.verdict(
            problem, client=client_of(request), response=body.response, files=body.files,
            deadline_s=body.deadline_s, seed=body.seed, verdict=body.verdict,
        )
        if isinstance(outcome, JSONResponse):
            return outcome
        result, queued, total = outcome
        return answer_of(result, body.reward or config.reward, queued, total, body.verdict or config.grader.verdict)

    agent_sessions = app.state.agent_sessions = nemo.add_routes(app, service)
    app.add_middleware(_Guard, config=config)
    return app


class _Guard:
    """Pure ASGI middleware: token check, body-size limit, request counters."""

    def __init__(self, app: Callable[..., Awaitable[None]], config: ServiceConfig) -> None:
        self.app = app
        self.config = config
        self.expected = f"Bearer {config.token}".encode() if config.token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = [500]

        async def counted_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self._guarded(scope, receive, counted_send)
        finally:
            route = scope.get("route")  # set by the router; unmatched paths are one label, not many
            self.config.metrics.request(scope["method"], getattr(route, "path", None) or "unmatched", status[0])

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        if self.expected is not None and scope["path"] not in OPEN_PATHS:
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await _reply(send, 401, "missing or wrong bearer token", {"www-authenticate": "Bearer"})
                return
        if scope["method"] in ("POST", "PUT", "PATCH"):
            limit = self.config.max_body
            length = headers.get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > limit):
                await _reply(send, 413, f"request body over {limit} bytes")
                return
            chunks: list[bytes] = []
            size = 0
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                size += len(message.get("body", b""))
                if size > limit:
                    await _reply(send, 413, f"request body over {limit} bytes")
                    return
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    break
            body = b"".join(chunks)
            problem = json_problem(body)
            if problem is not None:
                await _reply(send, 400, problem)
                return
            sent = False

            async def replay() -> Message:
                nonlocal sent
                if not sent:
                    sent = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
            return
        await self.app(scope, receive, send)


#: Cheap signs of what ``json_problem`` looks for: a surrogate's escape, a bare constant.
_SUSPECT = re.compile(rb"\\u[dD][89a-fA-F]|NaN|Infinity")


def json_problem(body: bytes) -> str | None:
    """Why a JSON body that Python's parser accepts is still refused (400), or None.

    A lone UTF-16 surrogate (``"\\ud800"``) decodes to a string that cannot be written
    back as UTF-8, and ``NaN``/``Infinity`` are not JSON: either made a 500 of any answer
    that echoes the value (a 422's ``input``, a 404's id). Parsed only when the cheap
    ``_SUSPECT`` pattern is in the body; a body that does not parse is left to FastAPI (400)."""
    if not _SUSPECT.search(body):
        return None

    def constant(name: str) -> float:
        raise _Refused(f"{name} is not JSON")

    try:
        json.dumps(json.loads(body, parse_constant=constant), ensure_ascii=False).encode()
    except _Refused as exc:
        return str(exc)
    except UnicodeEncodeError:
        return "a string holds a lone UTF-16 surrogate escape (not valid Unicode)"
    except (ValueError, RecursionError):
        return None
    return None


class _Refused(Exception):
    pass


async def _reply(send: Send, status: int, message: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"detail": message}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
