"""``cvdp-gym serve``: the HTTP grading service (:mod:`cvdp_gym.service`) under uvicorn."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from cvdp_gym.cli._options import DatasetOpt, console, executor_option, fail, grader_of
from cvdp_gym.cli.options import (
    Group,
    HarnessOptions,
    ProblemOptions,
    QualityOptions,
    ServiceOptions,
    grouped,
)


@grouped
def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on; a non-loopback one needs --token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    dataset: DatasetOpt = "bundled",
    *,
    problems: Annotated[ProblemOptions, Group(only=("benchmark_dir", "task"))],
    harness: Annotated[HarnessOptions, Group(only=("sandbox", "toolchain", "executor", "timeout", "verdict"))],
    service: ServiceOptions,
    quality: QualityOptions,
    cache: Annotated[Path | None, typer.Option(help="SQLite grade cache shared by every request (default: the user cache, ~/.cache/cvdp-gym/grades.sqlite).")] = None,
    token: Annotated[str | None, typer.Option(help="Bearer token every request but /healthz and /docs must carry (default: $CVDP_GYM_SERVE_TOKEN).")] = None,
) -> None:
    """Serve grading over HTTP: POST /v1/grade, GET /v1/problems, /healthz, /metrics, /docs (--verdict: the verdict of a request that names none)."""
    try:
        import uvicorn

        from cvdp_gym.service.app import TOKEN_ENV, ServiceConfig, create_app
        from cvdp_gym.service.core import is_loopback
    except ImportError as exc:
        raise fail(f"serve needs FastAPI and uvicorn: pip install 'cvdp-gym[serve]' ({exc})") from None
    from cvdp_gym.errors import ConfigError
    from cvdp_gym.grading.backed import BACKED, check_verdict, require_references

    token = token or os.environ.get(TOKEN_ENV) or None
    if not token and not is_loopback(host):
        raise fail(f"--host {host} is not a loopback address: set --token or ${TOKEN_ENV}")
    try:
        service.validate()
    except ConfigError as exc:
        raise fail(str(exc)) from None
    data = problems.load(dataset)
    try:
        if check_verdict(harness.verdict) == BACKED:
            missing = require_references(data.problems)
            if missing:
                console.print(f"[yellow]note:[/] {len(missing)} problem(s) have no reference: a test-bench pass there is scored no_reference", soft_wrap=True)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    try:
        measured = quality.settings(service.default_reward)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    grader = grader_of(harness.grader_settings(
        cache=cache if cache is not None else True, executor=executor_option(harness.executor, service.workers),
        quality=measured,
    ))
    config = ServiceConfig(
        grader, data, workers=service.workers, queue=service.queue, max_body=service.max_body, deadline_s=service.deadline,
        token=token, reward=service.default_reward, per_client=service.per_client,
    )
    console.print(f"serving {len(data)} problem(s) from {data.source} on http://{host}:{port} (API page: /docs)", soft_wrap=True)
    uvicorn.run(create_app(config), host=host, port=port, log_level="info", timeout_graceful_shutdown=max(0, round(service.shutdown_grace)))
