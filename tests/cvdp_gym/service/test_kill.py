"""``cvdp-gym serve`` killed mid-load (SIGKILL, and SIGTERM's graceful shutdown), as a
separate process: no sandbox it started outlives it, no cgroup of it is left once a new
server starts, and a restart on the same cache answers what was graded before the kill
from the cache and grades the rest."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx

import cvdp_gym.sandbox.bwrap as bwrap
from tests.cvdp_gym.service.test_service import EDGE, answers, unique

pytestmark = pytest.mark.sandbox

REPO = Path(__file__).resolve().parents[3]
#: Uncached answers fired at once; two are graded at a time (``--workers 2``).
BURST = 8


class Server:
    """``python -m cvdp_gym.cli serve`` on a free loopback port; its scratch folders (and
    so its sandboxes' command lines) under ``tmp`` through ``TMPDIR``."""

    def __init__(self, tmp: Path, cache: Path, *options: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.scratch = tmp / "scratch"
        self.scratch.mkdir(exist_ok=True)
        env = {**os.environ, "TMPDIR": str(self.scratch), "PYTHONPATH": str(REPO)}
        argv = [sys.executable, "-m", "cvdp_gym.cli", "serve", "--port", str(port), "--cache", str(cache),
                "--dataset", "bundled", "--workers", "2", "--shutdown-grace", "5", *options]
        self.log = (tmp / f"serve-{port}.log").open("wb")
        self.proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            assert self.proc.poll() is None, f"the server exited: {self.output()}"
            assert time.monotonic() < deadline, "the server did not start in 60 s"
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)

    def output(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        """Politely (SIGTERM, our own process only), then not."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def descendants(root: int) -> dict[int, str]:
    """Every live process under ``root`` (pid -> command line), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found: dict[int, str] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found[pid] = cmdline(pid) or "?"
        todo += children.get(pid, [])
    return found


def cmdline(pid: int) -> str | None:
    """A live process's command line (None once it is gone or a zombie)."""
    try:
        if (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) == "Z":
            return None
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, IndexError):
        return None


def mentioning(text: str) -> dict[int, str]:
    """Live processes whose command line names ``text`` (the server's scratch folder)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            line = cmdline(int(entry.name))
            if line is not None and text in line:
                found[int(entry.name)] = line
    return found


def cgroups_of(pids: Iterable[int]) -> list[Path]:
    """cgroup folders these processes made (``cvdp-gym-<pid>-...``, v1 or v2)."""
    root = Path("/sys/fs/cgroup")
    return [path for pid in pids for path in (*root.glob(f"cvdp-gym-{pid}-*"), *root.glob(f"*/cvdp-gym-{pid}-*"))]


def hanging(files: dict[str, str]) -> dict[str, str]:
    """An answer whose simulation never ends (a zero-delay loop): its sandbox is still
    running at the kill, however fast the rest is graded."""
    loop = "    initial begin : hang\n        forever begin end\n    end\nendmodule"
    return {path: text.replace("endmodule", loop) for path, text in files.items()}


def burst(server: Server, replies: dict[int, httpx.Response | Exception]) -> tuple[list[dict[str, str]], list[threading.Thread]]:
    """A hanging answer, then ``BURST`` uncached ones (half right, half wrong), posted from
    threads; each reply, or the error of a request the kill cut, lands in ``replies`` (the
    hanging one under -1)."""
    reference, wrong = answers(EDGE.id)[0][1], answers(EDGE.id)[2][1]
    bodies = [unique(reference if n % 2 == 0 else wrong, 1000 + n) for n in range(BURST)]

    def post(n: int) -> None:
        files = bodies[n] if n >= 0 else unique(hanging(reference), 999)
        try:
            replies[n] = httpx.post(f"{server.url}/v1/grade", json={"problem_id": EDGE.id, "files": files}, timeout=180)
        except httpx.TransportError as exc:
            replies[n] = exc

    threads = [threading.Thread(target=post, args=(n,), daemon=True) for n in range(-1, BURST)]
    for thread in threads:
        thread.start()
        time.sleep(0.3 if thread is threads[0] else 0)
    return bodies, threads


def expected_verdict(n: int) -> str:
    return "passed" if n % 2 == 0 else "test_failure"


@pytest.mark.parametrize("executor", ["threads", "processes"])
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_a_server_killed_mid_load_leaves_no_sandbox_and_its_cache_answers_after_a_restart(tmp_path, how, executor):
    cache = tmp_path / "grades.sqlite"
    server = Server(tmp_path, cache, "--executor", executor)
    replies: dict[int, httpx.Response | Exception] = {}
    try:
        bodies, threads = burst(server, replies)
        # Kill once two verdicts are in and a sandbox is running.
        deadline = time.monotonic() + 120
        while True:
            assert time.monotonic() < deadline, f"no two verdicts in 120 s: {server.output()}"
            done = [n for n, r in list(replies.items()) if isinstance(r, httpx.Response)]
            tree = descendants(server.proc.pid)
            if len(done) >= 2 and any("bwrap" in line for line in tree.values()):
                break
            time.sleep(0.05)
        os.kill(server.proc.pid, getattr(signal, how))
        server.proc.wait(timeout=60)
        for thread in threads:
            thread.join(timeout=60)
        got = {n: r for n, r in replies.items() if isinstance(r, httpx.Response)}
        # Answers in flight get a verdict (200) or, past SIGTERM's grace, a 503: never a 500.
        assert {r.status_code for r in got.values()} <= ({200, 503} if how == "SIGTERM" else {200}), {n: r.text for n, r in got.items()}
        if how == "SIGTERM":  # the hanging answer outlived the grace
            assert got[-1].status_code == 503 and "shutting down" in got[-1].json()["detail"] and got[-1].headers["retry-after"]
        finished = {n: r.json() for n, r in got.items() if r.status_code == 200}
        assert -1 not in finished

        # Within a few seconds nothing it started is left: not the processes seen under it
        # before the kill, nor any process naming its scratch folder (a sandbox started since).
        gone_by = time.monotonic() + 120  # a loaded machine reaps late; an event ends the wait
        while (left := {**{p: c for p in tree if (c := cmdline(p))}, **mentioning(str(server.scratch))}) and time.monotonic() < gone_by:
            time.sleep(0.1)
        assert not left, f"left behind after {how}: {left}"
        killed = [server.proc.pid, *tree]
        orphans = cgroups_of(killed)  # none where this machine makes no cgroups
        if how == "SIGTERM":
            assert orphans == [], "a graceful shutdown removes its cgroups"
    finally:
        server.stop()

    # The same cache, a new server: what was graded before is a cache hit with the same
    # verdict, the rest is graded; and the dead server's cgroups have been removed.
    again = Server(tmp_path, cache, "--executor", executor)
    try:
        for n, body in enumerate(bodies):
            got = httpx.post(f"{again.url}/v1/grade", json={"problem_id": EDGE.id, "files": body}, timeout=180)
            assert got.status_code == 200, got.text
            answer = got.json()
            assert answer["verdict"] == expected_verdict(n), (n, answer)
            if n in finished:
                assert finished[n]["verdict"] == expected_verdict(n)
                assert answer["cached"] is True, (n, answer)
    finally:
        again.stop()
    # A new sandbox removes a dead maker's cgroups once a minute old; here at once.
    bwrap.remove_orphan_cgroups(min_age_s=0)
    assert cgroups_of(killed) == []
