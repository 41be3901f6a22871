"""The way out of an agent's sandbox: the proxy on a unix socket and the relay in the sandbox.

A real HTTP server stands for the model endpoint; requests reach the proxy over its real
unix socket (httpx's uds transport) or from a real bubblewrap sandbox through the relay.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from cvdp_gym.agents import CommandAgent, ModelProxy, run_agent
from cvdp_gym.agents.proxy import usage_of
from cvdp_gym.agents.scripted import ScriptedModel
from cvdp_gym.agents.transcript import agent_steps
from cvdp_gym.errors import ConfigError
from cvdp_gym.sandbox.workspace import Workspace


class Recorder:
    """A real HTTP server that answers every request with JSON and keeps what it saw."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                recorder.seen.append({"path": self.path, "auth": self.headers.get("authorization"), "body": raw})
                data = json.dumps({
                    "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 2},
                }).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream():
    server = Recorder()
    yield server
    server.close()


def client(socket_path: Path) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(socket_path)), base_url="http://sandbox", timeout=20)


def test_the_proxy_forwards_only_under_the_endpoint_path_with_the_real_key(upstream, tmp_path):
    with ModelProxy(f"http://127.0.0.1:{upstream.port}/v1", tmp_path / "s" / "model.sock", api_key="REAL-KEY") as proxy, client(proxy.socket_path) as http:
        ok = http.post("/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "x"}]}, headers={"authorization": "Bearer placeholder"})
        refused = [http.get(path) for path in ("/v2/chat/completions", "/v1/../admin", "/", "/v1x/models")]
        absolute = http.get("/v1/models", extensions={"target": b"http://169.254.169.254/v1/models"})
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == "hi"
    assert [r.status_code for r in refused] == [403, 403, 403, 403]
    assert absolute.status_code == 403 and "may only reach" in absolute.json()["error"]["message"]
    # The endpoint saw one request, with the user's key and never the agent's placeholder.
    assert [(s["path"], s["auth"]) for s in upstream.seen] == [("/v1/chat/completions", "Bearer REAL-KEY")]
    assert proxy.summary() == {"requests": 1, "refused": 5, "prompt_tokens": 11, "completion_tokens": 2}
    first = proxy.exchanges[0].to_dict()
    assert first["request"]["messages"][0]["content"] == "x" and first["response"]["usage"]["prompt_tokens"] == 11


def test_streamed_answers_pass_through_in_order_and_are_recorded(tmp_path):
    steps = ["echo one", "echo two"]
    with ScriptedModel(steps) as model, ModelProxy(model.url, tmp_path / "model.sock") as proxy, client(proxy.socket_path) as http:
        tools = [{"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]
        with http.stream("POST", "/v1/responses", json={"model": "m", "input": [{"role": "user", "content": "go"}], "tools": tools, "stream": True}) as answer:
            assert answer.headers["content-type"].startswith("text/event-stream")
            raw = b"".join(answer.iter_raw())
        chat = http.post("/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "go"}], "stream": True, "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"properties": {"command": {"type": "string"}}}}}]})
    kinds = [json.loads(line[5:])["type"] for line in raw.decode().splitlines() if line.startswith("data:")]
    assert kinds == ["response.created", "response.output_item.added", "response.output_item.done", "response.completed"]
    assert chat.text.rstrip().endswith("data: [DONE]")
    responses, completions = proxy.exchanges
    assert [e["type"] for e in responses.events] == kinds
    assert responses.prompt_tokens > 0 and responses.completion_tokens > 0
    assert completions.prompt_tokens > 0
    steps_seen, _ = agent_steps([e.to_dict() for e in proxy.exchanges])
    assert steps_seen[0]["tool_calls"][0]["name"] == "exec_command" and json.loads(steps_seen[0]["tool_calls"][0]["arguments"]) == {"cmd": "echo one"}
    assert steps_seen[1]["tool_calls"][0]["name"] == "bash" and json.loads(steps_seen[1]["tool_calls"][0]["arguments"]) == {"command": "echo one"}


def test_a_chunked_request_body_is_forwarded_whole(upstream, tmp_path):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "y" * 70_000}]}).encode()
    with ModelProxy(f"http://127.0.0.1:{upstream.port}/v1", tmp_path / "model.sock") as proxy, client(proxy.socket_path) as http:
        answer = http.post("/v1/chat/completions", content=iter([body[:1000], body[1000:]]), headers={"content-type": "application/json"})
    assert answer.status_code == 200
    assert upstream.seen[0]["body"] == body and proxy.exchanges[0].request["messages"][0]["content"] == "y" * 70_000


def test_usage_is_read_from_each_wire_format():
    assert usage_of({"usage": {"prompt_tokens": 3, "completion_tokens": 4}}) == (3, 4)
    assert usage_of({"type": "response.completed", "response": {"usage": {"input_tokens": 5, "output_tokens": 6}}}) == (5, 6)
    assert usage_of({"type": "message_start", "message": {"usage": {"input_tokens": 7, "output_tokens": 1}}}) == (7, 1)
    assert usage_of({"choices": []}) == (0, 0) and usage_of("text") == (0, 0)


def test_a_proxy_needs_an_http_endpoint(tmp_path):
    for bad in ("ftp://host/v1", "localhost:8000", ""):
        with pytest.raises(ConfigError, match="http"):
            ModelProxy(bad, tmp_path / "model.sock")


#: An "agent" that asks the model once, writes its answer, then tries every other way out.
PROBE = r'''python3 - <<'PY'
import json, os, socket, urllib.request
def post(url):
    request = urllib.request.Request(url, data=json.dumps({"model": os.environ["CVDP_MODEL"], "messages": [{"role": "user", "content": open(os.environ["CVDP_PROMPT_FILE"]).read()}]}).encode(), headers={"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    return json.load(urllib.request.urlopen(request, timeout=10))
answer = post(os.environ["OPENAI_BASE_URL"] + "/chat/completions")
open("rtl/answer.txt", "w").write(answer["choices"][0]["message"]["content"])
tries = {}
for name, address in [("host loopback", ("127.0.0.1", HOST_PORT)), ("outside", ("1.1.1.1", 80)), ("metadata", ("169.254.169.254", 80))]:
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect(address); tries[name] = "reached"
    except OSError as exc:
        tries[name] = type(exc).__name__
try:
    socket.getaddrinfo("pypi.org", 443); tries["dns"] = "resolved"
except OSError as exc:
    tries["dns"] = type(exc).__name__
try:
    urllib.request.urlopen("http://127.0.0.1:8765/admin", timeout=5); tries["other path"] = "reached"
except urllib.error.HTTPError as exc:
    tries["other path"] = exc.code
print("TRIES " + json.dumps(tries))
PY'''


@pytest.mark.sandbox
def test_an_agent_in_the_sandbox_reaches_the_endpoint_and_nothing_else(upstream, toolchain):
    other = Recorder()  # a server on the host's loopback the agent must not reach
    try:
        with Workspace({"docs/spec.md": "spec"}) as workspace:
            run = run_agent(
                workspace, CommandAgent(PROBE.replace("HOST_PORT", str(other.port))), endpoint=f"http://127.0.0.1:{upstream.port}/v1",
                model="probe-model", prompt="the task", time_limit_s=60, api_key="REAL",
            )
            answer = workspace.read_text("rtl/answer.txt")
    finally:
        other.close()
    assert run.exit_code == 0, run.output
    assert answer == "hi"
    tries = json.loads(run.output.split("TRIES ", 1)[1].splitlines()[0])
    assert tries["host loopback"] == "ConnectionRefusedError"  # the sandbox's own loopback, not the host's
    assert tries["outside"] in ("OSError", "TimeoutError") and tries["metadata"] in ("OSError", "TimeoutError")
    assert tries["dns"] == "gaierror"
    assert tries["other path"] == 403
    assert other.seen == []
    assert [(s["path"], s["auth"]) for s in upstream.seen] == [("/v1/chat/completions", "Bearer REAL")]
    assert json.loads(upstream.seen[0]["body"])["messages"][0]["content"] == "the task"
    assert run.proxy == {"requests": 1, "refused": 1, "prompt_tokens": 11, "completion_tokens": 2}


@pytest.mark.sandbox
def test_an_agent_past_its_time_is_stopped_with_everything_it_started(upstream, toolchain):
    with Workspace({}) as workspace:
        marker = str(workspace.root).encode()
        run = run_agent(workspace, CommandAgent("sleep 300 & sleep 300"), endpoint=f"http://127.0.0.1:{upstream.port}/v1", model="m", prompt="p", time_limit_s=2)
        left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and marker in _cmdline(p)]
    assert run.timed_out and run.end_reason == "agent_timeout" and run.wall_s < 250  # the agent sleeps 300 s
    assert left == []


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""
