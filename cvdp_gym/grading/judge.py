"""The LLM judge of cid009/cid010 answers, through any OpenAI-compatible chat endpoint.

It follows the official judge (``src/llm_lib/subjective_score_model.py``) in everything that
sets a score, in its own words: a system message that makes the model a strict grader of a
candidate answer against a reference *with respect to the original question* (relevance,
meaning, completeness, correctness, style) and asks for JSON ``{"score": 0.0-1.0,
"reasoning": ...}``; a user message that quotes the question, the reference and the
candidate in fenced blocks and shows an example reply. Its default model is the official
default, ``o4-mini``; the request sends only the model and the two messages (no temperature,
no token limit: reasoning models refuse them), as the official request does.

The reply is read as the official code reads it (:func:`parse_judge_reply`): the inside of a
```` ```json ```` block (else of the first fenced block, else the whole text) is loaded as
JSON and must have a numeric ``score``; failing that, the first ``{...}`` without nested
braces that has a ``"score":`` is tried; the score is clamped to [0, 1] (NaN and infinities
included, as Python's ``min``/``max`` order them); a reply with neither, or whose
``reasoning`` is not text, gives no score (official credit 0).

Every judgement with a score is cached by content (model, messages) in a SQLite
``GradeCache``, so a resumed run never asks twice; requests are retried (429, 5xx, dropped
connections) and run concurrently, up to ``concurrency`` at once, from any thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cvdp_gym.chat import ChatClient, ChatSettings
from cvdp_gym.errors import RequestFailed
from cvdp_gym.execution.cache import GradeCache, content_key

if TYPE_CHECKING:
    import httpx

#: The official judge's default model (``DEFAULT_MODEL`` in its configuration).
DEFAULT_JUDGE_MODEL = "o4-mini"
#: Environment variables read for the judge's API key, first found wins.
JUDGE_KEY_ENV = ("CVDP_JUDGE_API_KEY", "OPENAI_API_KEY")
#: Bumped when the prompt or the parsing changes, so cached judgements are not reused.
JUDGE_VERSION = 1
REASONING_CHARS = 2000

SYSTEM_PROMPT = """You grade answers. You are given a question, a reference answer and a candidate answer, and you rate how well the candidate matches the reference on a scale from 0.0 to 1.0: 0.0 when it does not match at all, 1.0 when it matches perfectly.

Judge both answers only against the question that was asked: what matters is how well each one meets the specific needs of that question.

Consider:
1. Relevance: does the candidate address the question that was asked?
2. Semantic similarity: does it mean the same as the reference, for this question?
3. Completeness: does it contain everything the question requires?
4. Correctness: is what it says accurate for what was asked?
5. Style and format: does it follow the reference's style?

Be strict and objective. The score is a floating point number.

Reply with a JSON object of this form:
{
    "score": <float>,
    "reasoning": <string>
}
"""

USER_TEMPLATE = """Rate the candidate answer below against the reference answer, from 0.0 (no match) to 1.0 (a perfect match).

The question:
```
{question}
```

The reference answer:
```
{reference}
```

The candidate answer:
```
{answer}
```

Rate the candidate only on how well it answers the question compared with the reference; leave out anything the question does not ask about.

Give the score as one number from 0.0 to 1.0, for example:
{{
    "score": 0.6,
    "reasoning": "The candidate names the right cause but misses the second condition the reference gives."
}}
"""

_SCORE_OBJECT = re.compile(r'\{[^{}]*"score"\s*:[^{}]*\}', re.DOTALL)


def judge_messages(question: str, reference: str, answer: str) -> list[dict[str, str]]:
    """The system and user messages sent to the judge."""
    user = USER_TEMPLATE.format(question=question, reference=reference, answer=answer)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _score_object(text: str) -> dict[str, Any]:
    """JSON with a numeric ``score`` (the official check); ValueError otherwise."""
    result = json.loads(text)
    if "score" in result and isinstance(result["score"], (int, float)):
        return result
    raise ValueError("missing or non-numeric 'score'")


def parse_judge_reply(text: str | None) -> tuple[float | None, str]:
    """``(score in [0, 1], reasoning)``, or ``(None, why)``: the official parsing, fallback
    and clamping, corner cases included (see the module docstring)."""
    if text is None:
        return None, "the judge returned no content"
    try:
        if "```json" in text:
            candidate = text.split("```json")[1].rsplit("```", 1)[0].strip()
        elif "```" in text:
            candidate = text.split("```")[1].rsplit("```", 1)[0].strip()
        else:
            candidate = text
        try:
            result = _score_object(candidate)
        except ValueError:  # JSONDecodeError included: look for a score object anywhere
            match = _SCORE_OBJECT.search(text)
            if match is None:
                return None, f"no JSON score in the reply: {text[:300]}"
            result = _score_object(match.group())
        score = max(0.0, min(1.0, float(result["score"])))
        reasoning = result.get("reasoning", "No reasoning provided")
        if not isinstance(reasoning, (str, list)):  # the official code slices it, which fails
            raise TypeError(f"'reasoning' is a {type(reasoning).__name__}")
    except Exception as exc:  # the official code turns every failure into "no score"
        return None, f"unusable judge reply ({type(exc).__name__}: {exc}): {text[:300]}"
    return score, str(reasoning)[:REASONING_CHARS]


def judge_api_key() -> str | None:
    """The judge's key: ``CVDP_JUDGE_API_KEY``, else ``OPENAI_API_KEY``, else None."""
    return next((os.environ[name] for name in JUDGE_KEY_ENV if os.environ.get(name)), None)


@dataclass(frozen=True)
class JudgeSettings:
    """Where the judge is and how hard to push it (``api_key`` None: :func:`judge_api_key`)."""

    base_url: str
    model: str = DEFAULT_JUDGE_MODEL
    api_key: str | None = None
    concurrency: int = 16
    retries: int = 5
    retry_wait_s: float = 1.0
    timeout_s: float = 300.0

    def chat_settings(self) -> ChatSettings:
        return ChatSettings(
            base_url=self.base_url, model=self.model, api_key=self.api_key or judge_api_key(),
            temperature=None, max_tokens=None, concurrency=self.concurrency,
            timeout_s=self.timeout_s, retries=self.retries, retry_wait_s=self.retry_wait_s,
        )


class LLMJudge:
    """Scores answers with a chat model; thread-safe; ``score`` blocks, ``ascore`` awaits.

    One event loop thread owns the HTTP client (started on first use, ``close()`` ends it),
    so graders in any number of threads share its connections and its concurrency bound.
    ``cache``: a ``GradeCache`` or a path for one; None: no cache.
    """

    def __init__(
        self,
        settings: JudgeSettings,
        *,
        cache: GradeCache | str | Path | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self.cache = GradeCache(cache) if isinstance(cache, (str, Path)) else cache
        self._transport = transport
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: ChatClient | None = None
        self.requests = 0  # judge requests sent (cache misses), for reports and benchmarks

    def with_cache(self, cache: GradeCache | str | Path | None) -> LLMJudge:
        """The same judge settings with another cache."""
        return LLMJudge(replace(self.settings), cache=cache, transport=self._transport)

    def _key(self, messages: list[dict[str, str]]) -> str:
        return content_key("judge", JUDGE_VERSION, self.settings.model, messages)

    def score(self, question: str, reference: str, answer: str) -> tuple[float | None, str, bool]:
        """``(score or None, reasoning, cached)`` of ``answer``; a request that fails for good
        gives ``(None, why, False)`` (never raises for the endpoint's sake)."""
        future: Future[tuple[float | None, str, bool]] = asyncio.run_coroutine_threadsafe(
            self.ascore(question, reference, answer), self._running_loop()
        )
        return future.result()

    async def ascore(self, question: str, reference: str, answer: str) -> tuple[float | None, str, bool]:
        """``score`` for code already on this judge's loop (or any loop, without a shared client)."""
        messages = judge_messages(question, reference, answer)
        key = self._key(messages)
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            return hit["score"], hit["reasoning"], True
        client = self._client
        try:
            if client is None or asyncio.get_running_loop() is not self._loop:
                async with ChatClient(self.settings.chat_settings(), transport=self._transport) as own:
                    completions = await own.request(messages, 1)
            else:
                completions = await client.request(messages, 1)
        except RequestFailed as exc:
            return None, f"judge request failed: {exc.reason}", False
        self.requests += 1
        score, reasoning = parse_judge_reply(completions[0].text if completions else None)
        if score is not None and self.cache is not None:
            self.cache.put(key, {"score": score, "reasoning": reasoning, "model": self.settings.model})
        return score, reasoning, False

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    self._client = ChatClient(self.settings.chat_settings(), transport=self._transport)
                    loop.run_until_complete(self._client.__aenter__())
                    ready.set()
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name="cvdp-judge", daemon=True)
                self._loop = loop
                self._thread.start()
                ready.wait()
            return self._loop

    def close(self) -> None:
        """Close the HTTP client and stop the loop thread (a later ``score`` starts them again)."""
        with self._lock:
            loop, thread, client = self._loop, self._thread, self._client
            self._loop = self._thread = self._client = None
        if loop is None:
            return
        if client is not None:
            asyncio.run_coroutine_threadsafe(client.__aexit__(None, None, None), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join()
        loop.close()

    def __enter__(self) -> LLMJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
