"""The OpenAI-compatible endpoint a command asks for answers, and how it retries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer


@dataclass(frozen=True)
class EndpointOptions:
    """``--base-url``, ``--model``, ``--api-key``, ``--retries``, ``--retry-wait``, ``--request-timeout``."""

    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1.")] = None
    model: Annotated[str | None, typer.Option(help="Model name sent to --base-url.")] = None
    api_key: Annotated[str | None, typer.Option(envvar="OPENAI_API_KEY", show_default=False, help="Bearer token for --base-url.")] = None
    retries: Annotated[int, typer.Option(help="Retries of a request after 429/5xx/connection errors.")] = 5
    retry_wait: Annotated[float, typer.Option(help="First backoff wait, seconds (doubles each retry).")] = 1.0
    request_timeout: Annotated[float, typer.Option(help="Timeout of one chat request, seconds.")] = 600.0
