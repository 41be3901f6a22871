"""Ctrl-C in ``cvdp-gym check``: stop at once (2 s is the target; printed, not asserted),
kill the sandboxes, keep what finished.

The sandboxes run in sessions of their own, so the terminal's SIGINT never reaches them;
``cvdp_gym.interrupt`` finds them as children of the check process and kills them. The
first tests use stand-in "sandboxes" (a shell in its own session with a grandchild) and
need no toolchain; the last runs the real CLI on the bundled problems.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import typer

from cvdp_gym.cli import app
from cvdp_gym.cli.check import _resume_command
from cvdp_gym.interrupt import Children, proc_info
from tests.support import REPO

CLI = [sys.executable, "-m", "cvdp_gym.cli"]


def _default_sigint() -> None:
    """Children start with Ctrl-C handled even when pytest runs with SIGINT ignored (a
    background job of a non-interactive shell): Python keeps an inherited SIG_IGN."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(condition: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"exited ({proc.returncode}) before {what}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def mounting(marker: str) -> list[int]:
    """PIDs whose mounts name ``marker``: the processes inside a sandbox (clean environment,
    own PID namespace) still show the run folder bound into it."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "mountinfo").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def result_lines(path: Path) -> list[dict]:
    """Complete lines only: the writer may be mid-line."""
    if not path.exists():
        return []
    text = path.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


# ---------------------------------------------------------------- the parts


def test_resume_command_repeats_the_options_given():
    check = typer.main.get_command(app).commands["check"]
    args = ["bundled", "--out", "my runs/c.jsonl", "-j", "2", "--id", "a", "--id", "b", "--no-bundled-candidates"]
    command = _resume_command(check.make_context("check", args))
    assert command == "cvdp-gym check bundled --no-bundled-candidates --id a --id b --jobs 2 --out 'my runs/c.jsonl' --resume"
    # Already resuming, all defaults: still names --out, and --resume once.
    assert _resume_command(check.make_context("check", ["--resume"])) == "cvdp-gym check bundled --out runs/check.jsonl --resume"


def test_kill_new_touches_only_children_started_after_the_snapshot(tmp_path):
    older = subprocess.Popen(["sleep", "60"])
    try:
        ours = Children.snapshot()
        # Like the sandbox: its own session, and a grandchild in the same group.
        newer = subprocess.Popen(["/bin/sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE, text=True, start_new_session=True)
        assert newer.stdout is not None
        grandchild = int(newer.stdout.readline())
        assert [c.pid for c in ours.new()] == [newer.pid]
        assert ours.kill_until(lambda: newer.poll() is not None, timeout=120)
        wait_for(lambda: (info := proc_info(grandchild)) is None or info.ppid != newer.pid, 120, "the grandchild to die")
        assert older.poll() is None  # started before the snapshot: not ours to kill
        assert ours.kill_new() == 0
    finally:
        older.kill()
        older.wait()


# A check with stand-in jobs: "fast" ones finish at once, "slow" ones start a process in
# its own session (as the sandbox does) that would run for ten minutes, "busy" ones work
# for 6 s in Python (nothing to kill: stuck until done; long enough that a loaded machine's
# late SIGINT still finds them working).
SCRIPT = """
import json, os, subprocess, sys, time
from pathlib import Path
from cvdp_gym.check import CheckInterrupted, CheckJob, run_jobs
from cvdp_gym.data.problems import Problem
from cvdp_gym.harness.results import HarnessResult

marker, out, modes = sys.argv[1], Path(sys.argv[2]), sys.argv[3].split(",")

class Runner:
    def run(self, problem, files):
        if files["mode"] == "slow":
            env = {"PATH": os.environ["PATH"], "MARKER": marker}
            proc = subprocess.Popen(["/bin/sh", "-c", "sleep 600 & sleep 600"], env=env,
                                    stdout=subprocess.PIPE, start_new_session=True)
            proc.communicate()  # EOF only once the whole group is dead
            return HarnessResult.failure(problem.id, "harness_error", f"killed: {proc.returncode}")
        if files["mode"] == "busy":
            time.sleep(6)
        return HarnessResult.failure(problem.id, "build_error", "fast")

problem = Problem("p", (), False, "", {}, (), {})
jobs = [CheckJob(problem, f"{mode}{i}", {"mode": mode}, "build_error") for i, mode in enumerate(modes)]
try:
    run_jobs(jobs, Runner(), jobs_parallel=2, out_path=out)
except CheckInterrupted as stop:
    report = {"finished": sorted(o.name for o in stop.finished), "unfinished": stop.unfinished, "stuck": stop.stuck}
    print(json.dumps({**report, "after_settle": stop.settle(120)}))
    sys.exit(130)
sys.exit("not interrupted")
"""


def interrupt_when(proc: subprocess.Popen, ready: Callable[[], bool], what: str, wait_s: float) -> tuple[str, str, float]:
    """Send SIGINT once ``ready()``; returns stdout, stderr and the seconds to the exit."""
    try:
        wait_for(ready, wait_s, what, proc)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
        return stdout, stderr, time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()


def run_script(tmp_path: Path, modes: list[str], ready: Callable[[Path, list[int]], bool], processes_with) -> tuple[dict, float, Path, str]:
    """Run SCRIPT with these jobs; SIGINT once ``ready(out, running processes)``."""
    marker = f"cvdp-interrupt-{uuid.uuid4().hex}"
    out = tmp_path / "check.jsonl"
    script = tmp_path / "check.py"
    script.write_text(textwrap.dedent(SCRIPT))
    proc = subprocess.Popen(
        [sys.executable, str(script), marker, str(out), ",".join(modes)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint,
    )

    def running() -> list[int]:
        return [pid for pid in processes_with(marker) if pid != proc.pid]

    stdout, stderr, took = interrupt_when(proc, lambda: ready(out, running()), "the jobs to get going", 300)
    assert proc.returncode == 130, stdout + stderr
    return json.loads(stdout.strip().splitlines()[-1]), took, out, marker


def test_interrupted_run_jobs_kills_its_sandboxes_and_keeps_finished(tmp_path, processes_with):
    modes = ["fast", "fast", "slow", "slow", "slow", "slow"]
    report, took, out, marker = run_script(tmp_path, modes, lambda out, running: len(result_lines(out)) == 2 and len(running) >= 4, processes_with)
    print(f"run_jobs stopped {took:.2f} s after SIGINT")
    assert took < 600  # the slow jobs' sandboxes sleep 600 s: the exit did not wait for them
    assert report == {"finished": ["fast0", "fast1"], "unfinished": 4, "stuck": 0, "after_settle": 0}
    # The killed jobs' "results" are casualties, not verdicts: not written.
    assert sorted(row["name"] for row in result_lines(out)) == ["fast0", "fast1"]
    wait_for(lambda: not processes_with(marker), 120, "the killed sandboxes to be gone")


def test_a_job_that_cannot_be_killed_is_reported_stuck_then_settles(tmp_path, processes_with):
    report, _took, out, _ = run_script(tmp_path, ["fast", "busy", "busy"], lambda out, running: len(result_lines(out)) == 1, processes_with)
    # Gave up waiting after STOP_TIMEOUT_S, then settle() let the busy job finish (its
    # result, arriving after the signal, is not recorded).
    assert report == {"finished": ["fast0"], "unfinished": 2, "stuck": 2, "after_settle": 0}
    assert [row["name"] for row in result_lines(out)] == ["fast0"]


# ---------------------------------------------------------------- the real thing


def interrupt_check(args: list[str], out: Path, enough: int, processes_with: Callable[[str], list[int]]) -> str:
    """Run ``cvdp-gym check ARGS``, send SIGINT once ``out`` has ``enough`` results and a
    sandbox is running; check the exit, and that no sandbox is left. Returns stdout."""
    marker = f"cvdp-int-{uuid.uuid4().hex}"
    tmp = out.parent / marker  # a private TMPDIR: run folders (so bwrap's arguments) carry the marker
    tmp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [*CLI, *args], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint
    )

    def sandboxes() -> list[int]:
        return [pid for pid in processes_with(marker) if pid != proc.pid]

    def ready() -> bool:
        return len(result_lines(out)) >= enough and bool(sandboxes()) and bool(mounting(marker))

    stdout, said = sigint_when(proc, ready, "results and a running sandbox")
    wait_for(lambda: not processes_with(marker) and not mounting(marker), 120, "no sandbox (or process in one) left")
    assert not list(tmp.glob("cvdp-gym-run-*")), "run folders left behind" + said
    return stdout


def sigint_when(proc: subprocess.Popen, ready: Callable[[], bool], what: str) -> tuple[str, str]:
    """Send SIGINT once ``ready()``; check the exit (130, soon, a resume hint). Returns
    stdout and a description of both outputs for assertion messages."""
    stdout, stderr, took = interrupt_when(proc, ready, what, 300)
    print(f"cvdp-gym check exited {took:.2f} s after SIGINT (target: 2 s; a timing, so printed, not asserted)")
    said = f"\nstdout:\n{stdout}\nstderr:\n{stderr}"
    assert proc.returncode == 130, said
    assert "--resume" in stdout, said
    return stdout, said


def resume_args(stdout: str, out: Path) -> list[str]:
    """The arguments of the printed resume command (after ``cvdp-gym``)."""
    line = next(line for line in stdout.splitlines() if line.startswith("resume with: "))
    words = shlex.split(line.removeprefix("resume with: "))
    assert words[:2] == ["cvdp-gym", "check"] and words[-1] == "--resume" and str(out) in words
    return words[1:]


def first_interrupt(tmp_path: Path, processes_with: Callable[[str], list[int]]) -> tuple[Path, list[dict], list[str]]:
    out = tmp_path / "check.jsonl"
    # Four quick problems (references and known-wrong candidates): enough jobs to interrupt
    # twice, few enough that resuming to the end stays short.
    ids = [f"--id=cvdp_gym_{name}_0001" for name in ("edge_detector", "traffic_light", "priority_encoder", "gray_converter")]
    stdout = interrupt_check(["check", "bundled", *ids, "--jobs", "2", "--out", str(out)], out, 1, processes_with)
    kept = result_lines(out)
    assert kept and all(row["matches"] for row in kept), kept  # real verdicts, no casualties
    assert f"{len(kept)} run(s) finished" in stdout, stdout
    return out, kept, resume_args(stdout, out)


@pytest.mark.sandbox
def test_ctrl_c_in_check_stops_fast_keeps_results_and_resumes(toolchain, tmp_path, processes_with):
    out, kept, args = first_interrupt(tmp_path, processes_with)
    # Resume with the printed command; stop it again once it has added a result.
    stdout = interrupt_check(args, out, len(kept) + 1, processes_with)
    rows = result_lines(out)
    assert rows[: len(kept)] == kept and len(rows) > len(kept)
    keys = [row["key"] for row in rows]
    assert len(keys) == len(set(keys)), "a finished job ran again"
    assert all(row["matches"] for row in rows), rows
    assert f"{len(rows)} run(s) finished" in stdout  # counts the skipped ones too


@pytest.mark.sandbox
@pytest.mark.slow
def test_resumed_check_completes_without_rerunning(toolchain, tmp_path, processes_with):
    out, kept, args = first_interrupt(tmp_path, processes_with)
    again = subprocess.run([*CLI, *args], cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert again.returncode == 0, again.stdout + again.stderr
    rows = result_lines(out)
    keys = [row["key"] for row in rows]
    assert rows[: len(kept)] == kept and len(keys) == len(set(keys)), "a finished job ran again"
    assert f"({len(rows)} runs)" in again.stdout


@pytest.mark.sandbox
@pytest.mark.docker
def test_ctrl_c_in_a_docker_check_leaves_no_container(toolchain, standin_tag, docker_client, tmp_path):
    """Containers are not child processes: the Docker sandbox removes its own on Ctrl-C."""
    out = tmp_path / "check.jsonl"
    marker = f"cvdp-int-{uuid.uuid4().hex}"
    tmp = tmp_path / marker  # a private TMPDIR: the containers' bind mounts carry the marker
    tmp.mkdir()
    proc = subprocess.Popen(
        [*CLI, "check", "bundled", "--sandbox", "docker", "--jobs", "2", "--out", str(out)],
        cwd=REPO, env={**os.environ, "TMPDIR": str(tmp)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint,
    )

    def containers() -> list[str]:
        found = docker_client.containers.list(all=True, filters={"label": "cvdp-gym=1"})
        return [c.name for c in found if any(marker in m.get("Source", "") for m in c.attrs.get("Mounts", []))]

    def ready() -> bool:
        return len(result_lines(out)) >= 1 and bool(containers())

    stdout, said = sigint_when(proc, ready, "a result and a running container")
    assert "--sandbox docker" in stdout, said
    assert containers() == [], said
    assert not list(tmp.glob("cvdp-gym-run-*")), "run folders left behind" + said
    kept = result_lines(out)
    assert kept and all(row["matches"] for row in kept), kept
