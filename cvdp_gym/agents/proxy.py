"""The one way out of an agent's sandbox: a proxy to the model endpoint the user named.

A command-line agent runs in a sandbox without network. It reaches its model through
``http://127.0.0.1:PORT`` on the sandbox's own loopback, where a relay
(:mod:`cvdp_gym.agents.relay`) passes each connection to a unix socket bound into the
sandbox. On the host, :class:`ModelProxy` listens on that socket and forwards a request only
when its path lies under the endpoint's path (``/v1/...`` for ``http://host:port/v1``), to
that endpoint and nowhere else; anything else gets a 403. The proxy adds the user's API key
(the agent is given a placeholder, so the key never enters the sandbox), streams answers
back as they come (server-sent events included), and records every exchange: the request's
JSON, the answer's JSON or its events, the status, the seconds and the token usage the
endpoint reported. :mod:`cvdp_gym.agents.transcript` turns the exchanges into an episode
transcript.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import socketserver
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from cvdp_gym.errors import ConfigError

__all__ = ["Exchange", "ModelProxy", "usage_of"]

#: Largest request body the proxy reads (an agent's whole conversation fits many times).
MAX_REQUEST_BYTES = 64 * 1024 * 1024
#: Largest answer kept in the record (the agent still receives all of it).
MAX_RECORDED_BYTES = 8 * 1024 * 1024
#: Headers not passed on: hop-by-hop ones, and those the proxy sets itself.
_DROPPED_HEADERS = frozenset({
    "host", "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
    "upgrade", "content-length", "authorization", "accept-encoding",
})


@dataclass
class Exchange:
    """One request the agent sent through the proxy and what came back."""

    method: str
    path: str
    request: Any  # the request's JSON (or its text when it is not JSON)
    status: int = 0
    response: Any = None  # the answer's JSON, or None for an event stream
    events: list[Any] = field(default_factory=list)  # the ``data:`` payloads of an event stream
    error: str | None = None
    forwarded: bool = True
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method, "path": self.path, "status": self.status, "forwarded": self.forwarded,
            "seconds": round(self.seconds, 3), "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "error": self.error,
            "request": self.request, "response": self.response, "events": self.events,
        }


def usage_of(body: Any) -> tuple[int, int]:
    """(prompt, completion) tokens from an answer's ``usage``: chat completions
    (``prompt_tokens``/``completion_tokens``), the Responses API (``input_tokens``/
    ``output_tokens``, also inside ``response``) or Anthropic messages; (0, 0) if none."""
    if not isinstance(body, dict):
        return 0, 0
    usage = body.get("usage")
    if not isinstance(usage, dict) and isinstance(body.get("response"), dict):
        usage = body["response"].get("usage")
    if not isinstance(usage, dict) and isinstance(body.get("message"), dict):
        usage = body["message"].get("usage")
    if not isinstance(usage, dict):
        return 0, 0
    prompt = usage.get("prompt_tokens", usage.get("input_tokens", 0))
    completion = usage.get("completion_tokens", usage.get("output_tokens", 0))
    return (prompt if isinstance(prompt, int) else 0), (completion if isinstance(completion, int) else 0)


def _sse_payloads(raw: bytes) -> list[Any]:
    """The ``data:`` payloads of a server-sent event stream, JSON-decoded where they are JSON."""
    events: list[Any] = []
    for block in raw.decode("utf-8", errors="replace").replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in block.split("\n") if line.startswith("data:"))
        if not data or data == "[DONE]":
            continue
        try:
            events.append(json.loads(data))
        except ValueError:
            events.append(data)
    return events


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")


def _decode_body(raw: bytes, encoding: str | None) -> Any:
    """A request body for the record: gzip undone; another encoding noted, not decoded."""
    encoding = (encoding or "").strip().lower()
    if encoding in ("", "identity"):
        return _decode(raw)
    if encoding == "gzip":
        with contextlib.suppress(OSError, EOFError):
            return _decode(gzip.decompress(raw))
    return f"<{len(raw)} bytes, content-encoding {encoding}>"


def _read_body(handler: BaseHTTPRequestHandler) -> bytes | None:
    """The request's body (by its length, or its chunks); None if malformed or too large."""
    if "chunked" in (handler.headers.get("transfer-encoding") or "").lower():
        body = bytearray()
        while True:
            line = handler.rfile.readline(1024)
            try:
                size = int(line.split(b";")[0].strip() or b"x", 16)
            except ValueError:
                return None
            if size == 0:
                while handler.rfile.readline(1024).strip():  # trailers, up to the blank line
                    pass
                return bytes(body)
            if len(body) + size > MAX_REQUEST_BYTES:
                return None
            body += handler.rfile.read(size)
            handler.rfile.readline(1024)  # the chunk's CRLF
    try:
        length = int(handler.headers.get("content-length") or 0)
    except ValueError:
        return None
    if length < 0 or length > MAX_REQUEST_BYTES:
        return None
    return handler.rfile.read(length) if length else b""


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    proxy: ModelProxy


class _Handler(BaseHTTPRequestHandler):
    server: _UnixHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: every exchange is in the proxy's record instead."""

    def address_string(self) -> str:
        return "sandbox"

    def _handle(self) -> None:
        self.server.proxy.forward(self)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _handle


class ModelProxy:
    """Forwards an agent's HTTP requests from a unix socket to one model endpoint.

    ``endpoint``: the base URL the agent may use (``http://127.0.0.1:8000/v1``); requests
    whose path does not start with its path are refused. ``api_key``: sent upstream as a
    bearer token in place of whatever the agent sent. ``socket_path``: where to listen
    (its folder is what gets bound into the sandbox). Use as a context manager, or call
    ``start()`` and ``close()``; ``exchanges`` holds the record, in arrival order.
    """

    def __init__(self, endpoint: str, socket_path: Path, *, api_key: str | None = None, timeout_s: float = 600.0) -> None:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"the model endpoint must be an http(s) URL, got {endpoint!r}")
        self.endpoint = endpoint.rstrip("/")
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.prefix = parts.path.rstrip("/")
        self.socket_path = Path(socket_path)
        self.api_key = api_key
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        # TCP_NODELAY: a request's headers and body go out as two writes; on a kept-alive
        # connection Nagle would hold the body until the server's delayed ACK (40 ms).
        transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        self._client = httpx.Client(transport=transport, timeout=httpx.Timeout(timeout_s, connect=30.0), follow_redirects=False)
        self._server: _UnixHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> ModelProxy:
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        server = _UnixHTTPServer(str(self.socket_path), _Handler)
        server.proxy = self
        self.socket_path.chmod(0o666)  # the sandbox's user may differ from ours
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True, name="cvdp-model-proxy")
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop listening and remove the socket (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        self._client.close()

    def __enter__(self) -> ModelProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what was sent -----------------------------------------------------------------

    @property
    def requests(self) -> int:
        """Requests forwarded to the endpoint."""
        return sum(e.forwarded for e in self.exchanges)

    @property
    def refused(self) -> int:
        """Requests refused (a path outside the endpoint, a body too large)."""
        return sum(not e.forwarded for e in self.exchanges)

    @property
    def tokens(self) -> tuple[int, int]:
        """(prompt, completion) tokens over every answer, as the endpoint reported them."""
        return sum(e.prompt_tokens for e in self.exchanges), sum(e.completion_tokens for e in self.exchanges)

    def summary(self) -> dict[str, int]:
        prompt, completion = self.tokens
        return {"requests": self.requests, "refused": self.refused, "prompt_tokens": prompt, "completion_tokens": completion}

    # -- forwarding --------------------------------------------------------------------

    def forward(self, handler: BaseHTTPRequestHandler) -> None:
        """Answer one request from the sandbox (called in the server's thread for it)."""
        started = time.monotonic()
        path = handler.path
        raw = _read_body(handler)
        if raw is None:
            self._refuse(handler, Exchange(handler.command, path, None), 413, "request body of no valid length, or over the proxy's limit")
            return
        exchange = Exchange(handler.command, path, _decode_body(raw, handler.headers.get("content-encoding")) if raw else None)
        if not self._allowed(path):
            self._refuse(handler, exchange, 403, f"this sandbox may only reach {self.endpoint}")
            return
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _DROPPED_HEADERS}
        headers["accept-encoding"] = "identity"
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        recorded = bytearray()
        streaming = False
        try:
            with self._client.stream(handler.command, self.origin + path, headers=headers, content=raw) as upstream:
                handler.send_response(upstream.status_code)
                for key, value in upstream.headers.items():
                    if key.lower() not in _DROPPED_HEADERS:
                        handler.send_header(key, value)
                handler.send_header("connection", "close")
                handler.end_headers()
                exchange.status = upstream.status_code
                streaming = "text/event-stream" in upstream.headers.get("content-type", "")
                for chunk in upstream.iter_raw():
                    with contextlib.suppress(OSError):  # the agent hung up: keep reading for the record
                        handler.wfile.write(chunk)
                        handler.wfile.flush()
                    if len(recorded) < MAX_RECORDED_BYTES:
                        recorded += chunk[: MAX_RECORDED_BYTES - len(recorded)]
        except httpx.HTTPError as exc:
            exchange.error = f"{type(exc).__name__}: {exc}"
            if not exchange.status:
                self._refuse(handler, exchange, 502, f"the model endpoint could not be reached: {exc}", forwarded=True)
                return
        handler.close_connection = True
        if streaming:
            exchange.events = _sse_payloads(bytes(recorded))
            prompt = completion = 0
            for event in exchange.events:
                p, c = usage_of(event)
                prompt, completion = max(prompt, p), max(completion, c)
        else:
            exchange.response = _decode(bytes(recorded))
            prompt, completion = usage_of(exchange.response)
        exchange.prompt_tokens, exchange.completion_tokens = prompt, completion
        exchange.seconds = time.monotonic() - started
        self._record(exchange)

    def _allowed(self, path: str) -> bool:
        target = urlsplit(path)
        if target.scheme or target.netloc or ".." in target.path.split("/"):
            return False  # an absolute URL (proxy-style request) or a path that climbs out
        return not self.prefix or target.path == self.prefix or target.path.startswith(self.prefix + "/")

    def _refuse(self, handler: BaseHTTPRequestHandler, exchange: Exchange, status: int, reason: str, *, forwarded: bool = False) -> None:
        body = json.dumps({"error": {"message": reason, "type": "cvdp_proxy"}}).encode()
        with contextlib.suppress(OSError):
            handler.send_response(status)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(body)))
            handler.send_header("connection", "close")
            handler.end_headers()
            handler.wfile.write(body)
        handler.close_connection = True
        exchange.status, exchange.forwarded = status, forwarded
        exchange.error = exchange.error or reason
        self._record(exchange)

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)
