"""What tests share besides fixtures (those live in conftest.py): repository paths, the
scripted agents' folder, and helpers that find or make sandboxes, hangs, verdicts and repository-context problems."""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

#: The repository root (tests mirror the packages, so ``__file__`` depths differ).
REPO = Path(__file__).resolve().parent.parent
#: The bundled problems' folder.
BUNDLED = REPO / "cvdp_gym" / "data" / "bundled"
#: Scripted agents (YAML) the agentic tests play.
AGENTS = Path(__file__).resolve().parent / "fixtures" / "agents"
#: The made-up copy of RTLLM v2.0.
RTLLM_COPY = Path(__file__).resolve().parent / "fixtures" / "benchmarks" / "rtllm"
#: RTLLM's ``adder_4bit``, wrong on one input of 512 (15 + 15 + 1 gives 0): the test bench's
#: 100 random vectors miss it; equivalence with the reference does not.
WRONG_ADDER = """module adder_4bit (input [3:0] a, input [3:0] b, input cin, output [3:0] sum, output cout);
    assign {cout, sum} = (a == 4'd15 && b == 4'd15 && cin) ? 5'd0 : a + b + cin;
endmodule
"""


def missing(reason: str):
    """Skip, except in CI, where every backend must be there (setup.sh installs them)."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


def processes_with(marker: str) -> list[int]:
    """PIDs whose command line or environment contains ``marker`` (to prove nothing is left)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if any(marker.encode() in (entry / f).read_bytes() for f in ("cmdline", "environ")):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def verdict_summary(result) -> tuple:
    """What must agree between backends: verdict, failure class and cocotb test counts."""
    tests = result.tests
    return result.verdict, result.failure_class, (tests.total, tests.passed, tests.failed, tests.skipped)


#: An initial block that spins forever at simulation time 0: compiles, never finishes.
SPIN = "  integer cvdp_spin = 0;\n  initial while (cvdp_spin >= 0) cvdp_spin = cvdp_spin + 0;\n"


def hanging_answer(problem) -> dict[str, str]:
    """``problem``'s reference with ``SPIN`` added to its module: a hang only a deadline ends."""
    path, text = next(iter(problem.reference.items()))
    cut = text.rindex("endmodule")
    return {path: text[:cut] + SPIN + text[cut:]}


def sandboxes_under(ancestors: set[int]) -> dict[int, int]:
    """bwrap processes whose ancestry reaches one of ``ancestors``: pid -> that ancestor."""
    from cvdp_gym.interrupt import proc_info

    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "comm").read_text().startswith("bwrap"):
                continue
        except OSError:
            continue
        pid = parent = int(entry.name)
        for _ in range(12):
            info = proc_info(parent)
            if info is None:
                break
            if info.ppid in ancestors:
                found[pid] = info.ppid
                break
            parent = info.ppid
    return found


@contextmanager
def serve_chat(reply: Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]) -> Iterator[str]:
    """A real chat-completions server on 127.0.0.1 that answers each request body with ``reply``;
    yields its base URL (the eval, judge and environment tests serve their scripted models with it)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, payload = reply(body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def serve_streaming_chat(reply: Callable[[dict[str, Any]], dict[str, Any]]) -> Iterator[tuple[list[dict[str, Any]], str]]:
    """A real streaming chat-completions server on 127.0.0.1 (verifiers' clients stream): each
    request body is recorded and answered with the assistant delta ``reply`` gives (``content``
    or ``tool_calls``), as openai's own chunk types, then the finish and a usage chunk; yields
    (the requests, its base URL)."""
    from openai.types.chat import ChatCompletionChunk
    from openai.types.chat.chat_completion_chunk import Choice, ChoiceDelta
    from openai.types.completion_usage import CompletionUsage

    requests: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append(body)
            delta = ChoiceDelta(**{"role": "assistant", **reply(body)})
            finish = "tool_calls" if delta.tool_calls else "stop"
            head = {"id": "chatcmpl-scripted", "created": 0, "model": body["model"], "object": "chat.completion.chunk"}
            usage = CompletionUsage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
            chunks = [
                ChatCompletionChunk(**head, choices=[Choice(index=0, delta=delta)]),
                ChatCompletionChunk(**head, choices=[Choice(index=0, delta=ChoiceDelta(), finish_reason=finish)]),
                ChatCompletionChunk(**head, choices=[], usage=usage),
            ]
            data = b"".join(b"data: " + c.model_dump_json(exclude_none=True).encode() + b"\n\n" for c in chunks)
            data += b"data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield requests, f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def chat_completion(*texts: str) -> dict[str, Any]:
    """A chat-completions response body with one choice per text."""
    choices = [{"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"} for i, t in enumerate(texts)]
    return {"id": "cmpl", "object": "chat.completion", "choices": choices}


#: Comprehension problems in the official record shape (non-agentic, empty harness, the
#: reference answer in ``output.response``): two scored by BLEU/ROUGE-2, two by a judge.
COMPREHENSION_REFERENCES = {
    "cvdp_copilot_fifo_0001": ("cid006", "easy", "The FIFO asserts full when the count reaches DEPTH and asserts empty when the count is zero."),
    "cvdp_copilot_uart_tb_0002": ("cid008", "medium", "The testbench sends sixteen random bytes and checks the parity bit of every frame."),
    "cvdp_copilot_shifter_0031": ("cid009", "easy", "A shift by DATA_WIDTH must wrap every bit back to its place, so the output equals the input."),
    "cvdp_copilot_arbiter_tb_0004": ("cid010", "medium", "The test checks that grants rotate in round-robin order and last one cycle."),
}


def comprehension_records() -> list[dict[str, Any]]:
    return [
        {
            "id": pid, "categories": [category, difficulty],
            "input": {"prompt": f"Question about {pid}?", "context": {"rtl/top.sv": "module top; endmodule\n"}},
            "output": {"response": reference, "context": {}}, "harness": {},
        }
        for pid, (category, difficulty, reference) in COMPREHENSION_REFERENCES.items()
    ]


def write_comprehension_dataset(path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in comprehension_records()), encoding="utf-8")
    return path


# ---------------------------------------------------------------- repository-context problems

#: A repository problem's tiny design, as it is at the problem's commit: ``top`` wraps an
#: ``adder`` that subtracts (the bug); a later commit adds ``extra.sv`` and edits the spec.
HEAVY_BUGGY = "module adder #(parameter int W = 8) (\n  input  logic [W-1:0] a,\n  input  logic [W-1:0] b,\n  output logic [W:0]   sum\n);\n  assign sum = a - b;\nendmodule\n"
HEAVY_FIXED = HEAVY_BUGGY.replace("a - b", "a + b")
HEAVY_WRONG = HEAVY_BUGGY.replace("a - b", "a | b")
HEAVY_TOP = "module top (input logic [7:0] a, input logic [7:0] b, output logic [8:0] sum);\n  adder #(.W(8)) u_adder (.a(a), .b(b), .sum(sum));\nendmodule\n"
_HEAVY_TEST = '''import cocotb
from cocotb.triggers import Timer


@cocotb.test()
async def adds(dut):
    for a, b in [(0, 0), (1, 2), (200, 100), (255, 255), (17, 3)]:
        dut.a.value = a
        dut.b.value = b
        await Timer(1, unit="ns")
        assert int(dut.sum.value) == a + b, f"{a} + {b} gave {int(dut.sum.value)}"
'''
#: The harness checks the official heavy layout before it builds: working directory
#: /rundir, /src beside /code, and no .git (nor external/ folder) in /code.
_HEAVY_RUNNER = '''import os

from cocotb_tools.runner import get_runner


def test_top():
    assert os.getcwd() == "/rundir", os.getcwd()
    assert os.path.isfile("/src/test_top.py") and not os.path.exists("/code/src")
    assert not os.path.exists("/code/.git") and not os.path.exists("/code/external")
    runner = get_runner(os.getenv("SIM", "icarus"))
    runner.build(sources=os.getenv("VERILOG_SOURCES").split(), hdl_toplevel=os.getenv("TOPLEVEL"),
                 always=True, clean=True, timescale=("1ns", "1ps"), log_file="build.log")
    runner.test(hdl_toplevel=os.getenv("TOPLEVEL"), test_module=os.getenv("MODULE"))
'''
_HEAVY_COMPOSE = """services:
  direct:
    image: __OSS_SIM_IMAGE__
    volumes:
      - ./src/:/src/:ro
    env_file    : ./src/.env
    command     : pytest -s --log-cli-level=INFO -o cache_dir=/rundir/harness/.cache /src/test_runner.py -v
"""
_HEAVY_ENV = "SIM = icarus\nTOPLEVEL_LANG = verilog\nVERILOG_SOURCES = /code/rtl/top.sv /code/rtl/adder.sv\nTOPLEVEL = top\nMODULE = test_top\nPYTHONPATH = /src\n"
_GIT = ["git", "-c", "user.name=cvdp", "-c", "user.email=cvdp@example.com", "-c", "init.defaultBranch=main"]


def git(*args: str, cwd: Path) -> str:
    """Run git in ``cwd`` with no user configuration; its output."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run([*_GIT, *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def golden_hunks(before: str, after: str) -> str:
    """A CVDP golden patch: the hunks of a unified diff, without ---/+++ headers."""
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), n=3)
    return "".join(line for line in lines if not line.startswith(("---", "+++")))


def make_heavy_problem(folder: Path, *, ext: bool = False, bundle: bool = True) -> tuple[dict, str]:
    """A repository-context problem in the official shape, built here: a git repository
    with the design under ``external/`` (``ext``: at the root of a ``*_ext_*`` repository),
    two commits (the problem names the first), put in ``folder/repos`` as ``NAME.bundle``
    (or as a directory). Returns the JSONL record and the repos folder."""
    name = "cvdp_agentic_heavy_ext_adder" if ext else "cvdp_agentic_heavy_adder"
    work = folder / "src-repo"
    code = work if ext else work / "external"
    (code / "rtl").mkdir(parents=True)
    (code / "docs").mkdir()
    (code / "rtl" / "adder.sv").write_text(HEAVY_BUGGY)
    (code / "rtl" / "top.sv").write_text(HEAVY_TOP)
    (code / "docs" / "spec.md").write_text("top adds a and b into a 9-bit sum.\n")
    (work / "README.md").write_text("A repository for a repository-context problem.\n")
    (work / "tools").mkdir(exist_ok=True)
    (work / "tools" / "notes.txt").write_text("not part of the problem unless the repository is an _ext_ one\n")
    git("init", "-q", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "the problem's commit", cwd=work)
    commit = git("rev-parse", "HEAD", cwd=work).strip()
    (code / "rtl" / "extra.sv").write_text("module extra; endmodule\n")
    (code / "docs" / "spec.md").write_text("v2: a later commit\n")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "a later commit", cwd=work)
    repos = folder / "repos"
    repos.mkdir()
    if bundle:
        git("bundle", "create", "-q", str(repos / f"{name}.bundle"), "--all", cwd=work)
    else:
        git("clone", "-q", "--bare", str(work), str(repos / name), cwd=folder)
    record = {
        "id": f"{name}_0001",
        "categories": ["cid004", "easy"],
        "system_message": "You are a hardware engineer. Use the tools to inspect and fix the repository.",
        "prompt": "The adder in rtl/adder.sv must add a and b into a 9-bit sum. Fix it.",
        "context": {"repo": name, "commit": commit},
        "patch": {"rtl/adder.sv": golden_hunks(HEAVY_BUGGY, HEAVY_FIXED)},
        "harness": {
            "docker-compose.yml": _HEAVY_COMPOSE,
            "src/.env": _HEAVY_ENV,
            "src/test_runner.py": _HEAVY_RUNNER,
            "src/test_top.py": _HEAVY_TEST,
        },
    }
    return record, str(repos)


# ---------------------------------------------------------------- infrastructure failures


class RefusingSandbox:
    """A real sandbox that refuses to start, with its own ``SandboxUnavailable``, for answers
    whose files contain ``marker`` (the first ``times`` such runs; None: every one), and runs
    everything else for real. The only double in the infrastructure-failure tests: a
    sandbox that will not start for one answer is what a broken machine looks like."""

    def __init__(self, inner: Any, marker: str, times: int | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.toolchain = inner.toolchain
        self.marker = marker
        self.times = times
        self.refused = 0
        self._lock = threading.Lock()

    def run(self, argv: list[str], *, mounts: Any = (), **kwargs: Any) -> Any:
        from cvdp_gym.sandbox import SandboxUnavailable

        mounts = list(mounts)
        if self._holds_marker(mounts):
            with self._lock:
                if self.times is None or self.refused < self.times:
                    self.refused += 1
                    raise SandboxUnavailable("cannot start bubblewrap: refused for this answer (test)")
        return self.inner.run(argv, mounts=mounts, **kwargs)

    def _holds_marker(self, mounts: list[Any]) -> bool:
        for mount in mounts:
            if mount.target != "/code":
                continue
            for path in Path(mount.source).rglob("*.sv"):
                if self.marker in path.read_text(encoding="utf-8", errors="replace"):
                    return True
        return False


class DyingSandbox(RefusingSandbox):
    """A real sandbox killed from outside in the middle of its run, for answers whose files
    contain ``marker`` (the first ``times`` such runs; None: every one): the bubblewrap
    process of that run (found by the answer's folder on its command line) gets SIGKILL as
    soon as it is running, as a machine's OOM killer or an operator's ``kill -9`` would; the
    sandbox then raises its own ``SandboxDied``. Everything else runs for real."""

    def run(self, argv: list[str], *, mounts: Any = (), **kwargs: Any) -> Any:
        mounts = list(mounts)
        code = next((m.source for m in mounts if m.target == "/code"), None)
        if code is not None and self._holds_marker(mounts):
            with self._lock:
                kill = self.times is None or self.refused < self.times
                self.refused += kill
            if kill:
                stop = threading.Event()
                killer = threading.Thread(target=_kill_when_running, args=(str(code), stop), daemon=True)
                killer.start()
                try:
                    return self.inner.run(argv, mounts=mounts, **kwargs)
                finally:
                    stop.set()
                    killer.join()
        return self.inner.run(argv, mounts=mounts, **kwargs)


def _kill_when_running(folder: str, stop: threading.Event) -> None:
    """SIGKILL the process group of this process's child whose command line names ``folder``."""
    import signal

    while not stop.is_set():
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                named = folder.encode() in (entry / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
            if parent == os.getpid() and named:
                with suppress(ProcessLookupError):
                    os.killpg(int(entry.name), signal.SIGKILL)
                return
        stop.wait(0.002)


def broken_harness(problem: Any) -> Any:
    """``problem`` (renamed) with a test bench that fails to import: a defect of the problem,
    graded ``harness_error`` on every try, whatever the answer."""
    import dataclasses

    harness = {**problem.harness, "src/test_runner.py": "import not_a_module_anywhere\n\n\ndef test_x():\n    pass\n"}
    return dataclasses.replace(problem, id=f"{problem.id}_broken_harness", harness=harness)


class _Links(HTMLParser):
    """The link targets of one HTML page: ``(tag, target)`` of a/img/link/script."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if (tag, name) in (("a", "href"), ("img", "src"), ("link", "href"), ("script", "src")):
                self.targets.append((tag, value or ""))


def check_links(out: Path) -> int:
    """Every relative link of every page under ``out`` resolves (files and in-page anchors),
    nothing points off the machine, no script; returns the number of pages."""
    pages = sorted(out.rglob("*.html"))
    for page in pages:
        text = page.read_text()
        assert "<script" not in text, page
        parser = _Links()
        parser.feed(text)
        for tag, target in parser.targets:
            url = urlparse(target)
            assert url.scheme in ("", "file") and not url.netloc, (page, target)
            if not url.path:  # an anchor in the page
                assert re.search(f'id="{re.escape(url.fragment)}"', text), (page, target)
                continue
            assert (page.parent / unquote(url.path)).exists(), (page, tag, target)
    return len(pages)


#: Where tests keep what a person should look at after a run (screenshots); git ignores it.
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


def render_in_chromium(page: Path, name: str, *, height: int = 2400) -> Path:
    """Open ``page`` in headless Chromium (no network) and keep its screenshot as
    ``test-artifacts/NAME``; the caller skips when Chromium is absent."""
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / name
    shot.unlink(missing_ok=True)
    done = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--window-size=1280,{height}",
         f"--screenshot={shot}", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=90,
    )
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    return shot


class ServedApp:
    """An ASGI app under uvicorn on a free loopback port, in a thread; ``stop()`` ends it."""

    def __init__(self, app: Any) -> None:
        import socket
        import time

        import uvicorn

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 300  # a loaded machine starts it late; a dead thread fails at once
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()
