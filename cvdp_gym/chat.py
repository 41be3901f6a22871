"""The one OpenAI-compatible chat client: ``eval`` asks models through it, the grading layer's
LLM judge asks its judge through it.

It sits at the bottom of the package (it needs only ``httpx`` and the error types), so the
grading layer can use it without importing ``eval``. ``httpx`` (and the rich and click it
brings, about half a second) is imported when a client opens, not when an environment is
imported. It is deliberately forgiving of
servers: it asks for the samples still missing when a server returns fewer choices than
``n`` (some hosted APIs ignore ``n``), and it retries rate limits, server errors and dropped
connections with exponential backoff (honouring ``Retry-After``), so one bad minute of a
server does not sink a long evaluation.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cvdp_gym.errors import RequestFailed

if TYPE_CHECKING:
    import httpx

#: HTTP statuses worth retrying: request timeout, rate limit, and any server error.
RETRY_STATUSES = frozenset({408, 429})
BODY_CHARS = 300


@dataclass(frozen=True)
class ChatSettings:
    """How to reach an OpenAI-compatible ``/chat/completions`` endpoint and what to ask
    (``temperature``, ``top_p`` or ``max_tokens`` None: left out of the request, for models that
    refuse them)."""

    base_url: str
    model: str
    api_key: str | None = None
    temperature: float | None = 0.2
    max_tokens: int | None = 4096
    top_p: float | None = None
    concurrency: int = 8
    timeout_s: float = 600.0
    retries: int = 5
    retry_wait_s: float = 1.0
    max_wait_s: float = 60.0

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


@dataclass(frozen=True)
class Completion:
    """One choice of a chat completion (``tool_calls``: the message's native function calls)."""

    text: str
    finish_reason: str | None = None
    tool_calls: tuple[dict[str, Any], ...] = ()
    reasoning: str = ""


def _content_text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _completion(choice: dict[str, Any]) -> Completion:
    message = choice.get("message") or {}
    calls = message.get("tool_calls") or []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return Completion(
        _content_text(message.get("content")),
        choice.get("finish_reason"),
        tuple(c for c in calls if isinstance(c, dict)) if isinstance(calls, list) else (),
        reasoning if isinstance(reasoning, str) else "",
    )


def parse_choices(data: Any) -> list[Completion]:
    """The choices of a chat-completions response body, in index order."""
    choices = data["choices"]
    if not isinstance(choices, list):
        raise TypeError("'choices' is not a list")
    return [_completion(c) for c in sorted(choices, key=lambda c: c.get("index", 0))]


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


class ChatClient:
    """Async client with bounded concurrency and retries; use as ``async with``."""

    def __init__(self, settings: ChatSettings, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.settings = settings
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._semaphore = asyncio.Semaphore(max(1, settings.concurrency))

    async def __aenter__(self) -> ChatClient:
        import httpx

        headers = {"Authorization": f"Bearer {self.settings.api_key}"} if self.settings.api_key else {}
        limits = httpx.Limits(max_connections=max(1, self.settings.concurrency))
        self._client = httpx.AsyncClient(
            headers=headers, timeout=self.settings.timeout_s, limits=limits, transport=self._transport
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()

    def payload(self, messages: list[dict[str, Any]], n: int, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        s = self.settings
        body: dict[str, Any] = {"model": s.model, "messages": messages, "n": n}
        if s.temperature is not None:
            body["temperature"] = s.temperature
        if s.max_tokens is not None:
            body["max_tokens"] = s.max_tokens
        if s.top_p is not None:
            body["top_p"] = s.top_p
        if tools:
            body["tools"] = tools
        return body

    async def completions(self, messages: list[dict[str, str]], count: int) -> AsyncIterator[list[Completion]]:
        """Yield batches of completions until ``count`` arrived; asks again for what is missing."""
        left = count
        while left > 0:
            batch = (await self.request(messages, left))[:left]
            if not batch:
                raise RequestFailed("the server returned no choices")
            left -= len(batch)
            yield batch

    async def request(self, messages: list[dict[str, Any]], n: int, *, tools: list[dict[str, Any]] | None = None) -> list[Completion]:
        """One chat request for ``n`` choices (offering ``tools`` for native function calls),
        retried on 429/5xx/connection errors."""
        last, wait = "", 0.0
        for attempt in range(self.settings.retries + 1):
            if attempt:
                await asyncio.sleep(wait)
            try:
                return await self._post_once(messages, n, tools)
            except _Retryable as exc:
                last = exc.reason
                wait = min(self.settings.max_wait_s, exc.wait) if exc.wait is not None else self._backoff(attempt)
        raise RequestFailed(f"gave up after {self.settings.retries + 1} attempts: {last}")

    def _backoff(self, attempt: int) -> float:
        base = self.settings.retry_wait_s * 2**attempt
        return min(self.settings.max_wait_s, base * random.uniform(0.5, 1.0))

    async def _post_once(self, messages: list[dict[str, Any]], n: int, tools: list[dict[str, Any]] | None) -> list[Completion]:
        assert self._client is not None, "use ChatClient as 'async with'"
        import httpx

        try:
            async with self._semaphore:
                response = await self._client.post(self.settings.url, json=self.payload(messages, n, tools))
        except httpx.TransportError as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}".rstrip(": ")) from None
        status = response.status_code
        if status in RETRY_STATUSES or status >= 500:
            raise _Retryable(f"HTTP {status}: {response.text[:BODY_CHARS]}", _retry_after(response))
        if status >= 400:
            raise RequestFailed(f"HTTP {status}: {response.text[:BODY_CHARS]}")
        try:
            return parse_choices(response.json())
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RequestFailed(f"malformed chat response ({exc}): {response.text[:BODY_CHARS]}") from None


class _Retryable(Exception):
    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait = wait
