"""A scripted model endpoint: answers an agent with the next shell command of a script.

It stands in for a model to check that an agent, its installation and the way out of the
sandbox work (``cvdp-gym agents check``, the tests): each request is answered with a call of
the shell tool the agent offers, running the next command of the script, and once the
script is played, with a plain message and no call (most agents stop there). Which step a
request is at is read from the request itself (the calls already in its conversation), so
a retried request gets the same answer and the server keeps no state. It speaks the wire
formats agents use:

- ``POST .../chat/completions`` (plain or ``stream: true``): with ``tools``, one tool call of
  the first tool taking a ``command`` (or ``cmd``); without, the command in a fenced
  ``bash`` block;
- ``POST .../responses`` (the Responses API; streamed as events, or a whole response): one
  ``function_call`` of the shell tool offered (``exec_command {cmd}``, ``shell_command
  {command}``, ``shell {command: [bash, -lc, ...]}``).

Every answer reports ``usage`` (about four characters a token). Every request is kept in
``requests``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScriptedModel", "heredoc_command", "json_strings", "writing_steps"]

FINAL_TEXT = "The task is done."


def heredoc_command(path: str, text: str) -> str:
    """A bash command writing ``text`` (ended by a newline) to ``path``, folders made."""
    marker = "CVDP_EOF"
    while marker in text:
        marker += "_"
    body = text if text.endswith("\n") else text + "\n"
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    make = f"mkdir -p '{folder}' && " if folder else ""
    return f"{make}cat > '{path}' <<'{marker}'\n{body}{marker}"


def writing_steps(files: dict[str, str], finish_command: str = "") -> list[str]:
    """A script that writes ``files`` (path → text) one command each, then ``finish_command``."""
    return [*(heredoc_command(path, text) for path, text in sorted(files.items())), *([finish_command] if finish_command else [])]


def json_strings(value: Any):  # type: ignore[no-untyped-def]
    """Every string in a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_strings(item)


def _tokens(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False)) // 4 + 1


def _shell_tool(tools: list[Any]) -> tuple[str, str, bool] | None:
    """(tool name, argument name, argument is an argv list) of the first shell-like tool."""
    for tool in tools or []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        name = function.get("name") or tool.get("type")
        properties = ((function.get("parameters") or {}).get("properties")) or {}
        for arg in ("command", "cmd"):
            if arg in properties:
                return name, arg, properties[arg].get("type") == "array"
    return None


def _call_arguments(tool: tuple[str, str, bool], command: str) -> str:
    _, arg, is_list = tool
    return json.dumps({arg: ["bash", "-lc", command] if is_list else command})


class ScriptedModel:
    """A threaded HTTP server on ``127.0.0.1`` playing ``steps`` (shell commands).

    ``steps`` may also be a mapping from a text to a script: a request plays the script of
    the first text found in it (a problem's prompt, a file name), so one server can play a
    different script per problem. Use as a context manager; ``url`` is its base URL
    (``http://127.0.0.1:PORT/v1``).
    """

    def __init__(self, steps: list[str] | dict[str, list[str]], *, final_text: str = FINAL_TEXT) -> None:
        self.scripts = {k: list(v) for k, v in steps.items()} if isinstance(steps, dict) else {"": list(steps)}
        self.final_text = final_text
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def setup(self) -> None:
                super().setup()
                # Headers and body are two writes; without this, on a kept-alive connection
                # Nagle holds the body until the client's delayed ACK (40 ms a request).
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self) -> None:
                self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._json(400, {"error": {"message": "the body is not JSON"}})
                    return
                with model._lock:
                    model.requests.append({"path": self.path, "body": body})
                path = self.path.split("?")[0]
                if path.endswith("/chat/completions"):
                    answer = model.chat_answer(body)
                    if body.get("stream"):
                        self._events([None, *model.chat_chunks(answer)], done=True)
                    else:
                        self._json(200, answer)
                elif path.endswith("/responses"):
                    response = model.responses_answer(body)
                    if body.get("stream"):
                        self._events(model.response_events(response))
                    else:
                        self._json(200, response)
                else:
                    self._json(404, {"error": {"message": f"no route {path}"}})

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _events(self, events: list[Any], *, done: bool = False) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for event in events:
                    if event is None:
                        continue
                    kind = event.get("type")
                    head = f"event: {kind}\n" if kind and "." in str(kind) else ""
                    self.wfile.write(f"{head}data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                if done:
                    self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_port}/v1"
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ScriptedModel:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="cvdp-scripted-model")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- chat completions --------------------------------------------------------------

    def _script(self, body: dict[str, Any]) -> list[str]:
        """The script a request plays: the first whose key the request contains."""
        if "" in self.scripts:
            return self.scripts[""]
        texts = list(json_strings(body))
        return next((steps for key, steps in self.scripts.items() if any(key in text for text in texts)), [])

    def chat_answer(self, body: dict[str, Any]) -> dict[str, Any]:
        steps = self._script(body)
        messages = body.get("messages") or []
        step = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        tool = _shell_tool(body.get("tools") or [])
        message: dict[str, Any]
        if step < len(steps) and tool is not None:
            message = {"role": "assistant", "content": f"Step {step + 1}.", "tool_calls": [{
                "id": f"call_{uuid.uuid4().hex[:20]}", "type": "function",
                "function": {"name": tool[0], "arguments": _call_arguments(tool, steps[step])},
            }]}
            finish = "tool_calls"
        elif step < len(steps):
            message, finish = {"role": "assistant", "content": f"Step {step + 1}.\n\n```bash\n{steps[step]}\n```"}, "stop"
        else:
            message, finish = {"role": "assistant", "content": self.final_text}, "stop"
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model") or "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": self._usage(messages, message),
        }

    def chat_chunks(self, answer: dict[str, Any]) -> list[dict[str, Any]]:
        base = {"id": answer["id"], "object": "chat.completion.chunk", "created": answer["created"], "model": answer["model"]}
        choice = answer["choices"][0]
        message = choice["message"]
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
        return [
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
            {**base, "choices": [], "usage": answer["usage"]},
        ]

    # -- the Responses API -------------------------------------------------------------

    def responses_answer(self, body: dict[str, Any]) -> dict[str, Any]:
        steps = self._script(body)
        items = body.get("input") if isinstance(body.get("input"), list) else []
        step = sum(1 for i in items if isinstance(i, dict) and str(i.get("type", "")).endswith("_call_output"))
        tool = _shell_tool(body.get("tools") or [])
        number = uuid.uuid4().hex[:16]
        if step < len(steps) and tool is not None:
            item: dict[str, Any] = {
                "type": "function_call", "id": f"fc_{number}", "call_id": f"call_{number}", "name": tool[0],
                "arguments": _call_arguments(tool, steps[step]), "status": "completed",
            }
        else:
            item = {
                "type": "message", "id": f"msg_{number}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": self.final_text, "annotations": []}],
            }
        prompt, completion = _tokens(items) + _tokens(body.get("instructions") or ""), _tokens(item)
        return {
            "id": f"resp_{number}", "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": body.get("model") or "scripted", "output": [item],
            "usage": {
                "input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": prompt + completion,
            },
        }

    def response_events(self, response: dict[str, Any]) -> list[dict[str, Any]]:
        started = {**response, "status": "in_progress", "output": []}
        started.pop("usage")
        events: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
        for index, item in enumerate(response["output"]):
            opening = {**item, "status": "in_progress"}
            if item["type"] == "message":
                opening["content"] = []
            else:
                opening["arguments"] = ""
            events.append({"type": "response.output_item.added", "output_index": index, "item": opening})
            if item["type"] == "message":
                text = item["content"][0]["text"]
                events.append({"type": "response.output_text.delta", "output_index": index, "content_index": 0, "item_id": item["id"], "delta": text})
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        events.append({"type": "response.completed", "response": response})
        return events

    def _usage(self, messages: list[Any], message: dict[str, Any]) -> dict[str, int]:
        prompt, completion = _tokens(messages), _tokens(message)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
