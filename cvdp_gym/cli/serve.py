"""``cvdp-gym serve``: the HTTP grading service (:mod:`cvdp_gym.service`) under uvicorn."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from cvdp_gym.cli._options import (
    BenchmarkDirOpt,
    DatasetOpt,
    ExecutorOpt,
    SandboxOpt,
    TimeoutOpt,
    ToolchainOpt,
    VerdictOpt,
    console,
    executor_option,
    fail,
    harness_runner,
    load_problems,
)


def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on; a non-loopback one needs --token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    dataset: DatasetOpt = "bundled",
    benchmark_dir: BenchmarkDirOpt = None,
    sandbox: SandboxOpt = "bubblewrap",
    toolchain: ToolchainOpt = None,
    executor: ExecutorOpt = None,
    workers: Annotated[int, typer.Option(help="Answers graded at once.")] = 2,
    queue: Annotated[int, typer.Option(help="Grading jobs that may wait beyond --workers; one more is answered 429 with Retry-After.")] = 64,
    max_body: Annotated[int, typer.Option(help="Largest request body, bytes (413 beyond).")] = 4 * 1024 * 1024,
    deadline: Annotated[float, typer.Option(help="Longest a grade may take, seconds (a request's deadline_s is capped by it); then it is cancelled and scored timeout.")] = 600.0,
    timeout: TimeoutOpt = 300.0,
    cache: Annotated[Path | None, typer.Option(help="SQLite grade cache shared by every request (default: the user cache, ~/.cache/cvdp-gym/grades.sqlite).")] = None,
    shutdown_grace: Annotated[float, typer.Option(help="On SIGTERM/Ctrl-C, seconds the answers being graded have to finish; those still running then are answered 503 and their sandboxes killed.")] = 30.0,
    per_client: Annotated[int, typer.Option(help="Grading jobs one client (its X-Client-Id header, else its address) may have in at once; 0: no limit beyond --queue.")] = 0,
    default_reward: Annotated[str, typer.Option(help="The reward of a request that names none (NeMo-Gym's rows never do): shaped, partial or binary.")] = "shaped",
    token: Annotated[str | None, typer.Option(help="Bearer token every request but /healthz and /docs must carry (default: $CVDP_GYM_SERVE_TOKEN).")] = None,
    verdict: VerdictOpt = "testbench",
) -> None:
    """Serve grading over HTTP: POST /v1/grade, GET /v1/problems, /healthz, /metrics, /docs (--verdict: the verdict of a request that names none)."""
    try:
        import uvicorn

        from cvdp_gym.service.app import TOKEN_ENV, ServiceConfig, create_app
        from cvdp_gym.service.core import is_loopback
    except ImportError as exc:
        raise fail(f"serve needs FastAPI and uvicorn: pip install 'cvdp-gym[serve]' ({exc})") from None
    from cvdp_gym.errors import ConfigError
    from cvdp_gym.execution.cache import GradeCache
    from cvdp_gym.grading import Grader
    from cvdp_gym.grading.backed import BACKED, check_verdict, require_references

    token = token or os.environ.get(TOKEN_ENV) or None
    if not token and not is_loopback(host):
        raise fail(f"--host {host} is not a loopback address: set --token or ${TOKEN_ENV}")
    if default_reward not in ("shaped", "partial", "binary"):
        raise fail(f"unknown --default-reward {default_reward!r}; expected shaped, partial or binary")
    if per_client < 0:
        raise fail("--per-client must be at least 0")
    if workers < 1 or queue < 0:
        raise fail("--workers must be at least 1 and --queue at least 0")
    data = load_problems(dataset, None, None, None, False, benchmark_dir=benchmark_dir)
    try:
        if check_verdict(verdict) == BACKED:
            missing = require_references(data.problems)
            if missing:
                console.print(f"[yellow]note:[/] {len(missing)} problem(s) have no reference: a test-bench pass there is scored no_reference", soft_wrap=True)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    grader = Grader(
        harness_runner(sandbox, toolchain, timeout),
        cache=GradeCache(cache),
        executor=executor_option(executor, workers),
        verdict=verdict,
    )
    config = ServiceConfig(grader, data, workers=workers, queue=queue, max_body=max_body, deadline_s=deadline, token=token, reward=default_reward, per_client=per_client)
    console.print(f"serving {len(data)} problem(s) from {data.source} on http://{host}:{port} (API page: /docs)", soft_wrap=True)
    uvicorn.run(create_app(config), host=host, port=port, log_level="info", timeout_graceful_shutdown=max(0, round(shutdown_grace)))
