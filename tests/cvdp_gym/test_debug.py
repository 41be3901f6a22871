"""cvdp-gym debug, run as a user runs it: the folder, the command lines, --rerun against
eval's verdicts on the same answers, --shell through a pseudo-terminal, and bad input."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.data.bundle import bundled_candidates

CLI = [sys.executable, "-m", "cvdp_gym.cli"]
PID = "cvdp_gym_gray_converter_0001"
#: eval's samples: the reference, then two known-wrong candidates.
SAMPLES = {0: "reference", 1: "functional_bug", 2: "syntax_error"}


def run_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def response(files: dict[str, str]) -> str:
    """A model's answer: each file in a fenced block."""
    return "\n".join(f"```systemverilog\n{text}\n```" for text in files.values())


@pytest.fixture(scope="module")
def eval_run(tmp_path_factory, toolchain) -> tuple[Path, dict[int, str]]:
    """An eval run of the three answers to PID, and the verdict it recorded for each sample."""
    tmp = tmp_path_factory.mktemp("eval")
    problem = load_dataset("bundled")[PID]
    wrong = {c.name: c.files for c in bundled_candidates() if c.problem_id == PID}
    answers = {n: problem.reference if name == "reference" else wrong[name] for n, name in SAMPLES.items()}
    responses = tmp / "responses.jsonl"
    responses.write_text("".join(json.dumps({"id": PID, "sample": n, "response": response(f)}) + "\n" for n, f in answers.items()))
    done = run_cli("eval", "bundled", "--responses", str(responses), "--out", str(tmp / "run"), "--id", PID)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in (tmp / "run" / "results.jsonl").read_text().splitlines()]
    return tmp / "run", {row["sample"]: row["verdict"] for row in rows}


@pytest.mark.sandbox
@pytest.mark.parametrize("sample", sorted(SAMPLES), ids=lambda n: SAMPLES[n])
def test_rerun_gives_the_verdict_eval_recorded(eval_run, sample, tmp_path):
    run_dir, verdicts = eval_run
    assert verdicts == {0: "passed", 1: "test_failure", 2: "build_error"}
    done = run_cli("debug", PID, "--run", str(run_dir), "--sample", str(sample), "--out", str(tmp_path / "d"), "--rerun")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"verdict: {verdicts[sample]}\n" in done.stdout
    assert f"eval recorded: {verdicts[sample]} (same)" in done.stdout
    assert "tests: " in done.stdout


@pytest.mark.sandbox
def test_the_folder_holds_the_workspace_and_the_commands_grading_runs(toolchain, tmp_path):
    out = tmp_path / "d"
    done = run_cli("debug", PID, "--out", str(out))
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "debug.json").read_text())
    assert manifest["files"] == ["rtl/gray_converter.sv"] and manifest["answer"] == "the reference solution"
    assert (out / "code" / "rtl" / "gray_converter.sv").is_file() and (out / "harness" / "src").is_dir()
    commands = (out / "commands.sh").read_text()
    assert "iverilog -g2012 -t null" in commands and f"--bind {out / 'code'} /code" in commands
    assert f"COCOTB_RANDOM_SEED {manifest['seed']}" in commands  # the seed --rerun grades with
    assert "bwrap" in done.stdout and "pytest" in done.stdout
    # The harness command line runs as printed, and passes.
    script = subprocess.run(["sh", str(out / "commands.sh")], capture_output=True, text=True, timeout=120)
    assert script.returncode == 0, script.stdout[-2000:] + script.stderr[-2000:]
    # Without --force a second materialisation refuses the folder; an edited RTL is regraded as edited.
    again = run_cli("debug", PID, "--out", str(out))
    assert again.returncode == 2 and "not empty" in again.stdout and "Traceback" not in again.stdout + again.stderr
    rtl = out / "code" / "rtl" / "gray_converter.sv"
    rtl.write_text(rtl.read_text().replace("endmodule", "", 1))
    edited = run_cli("debug", PID, "--out", str(out), "--rerun")
    assert edited.returncode == 0 and "verdict: build_error" in edited.stdout, edited.stdout


def read_until(fd: int, needle: bytes, timeout: float = 60.0) -> bytes:
    """What the terminal shows until ``needle`` appears (or the other side closes)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    return seen


def shell_through_pty(args: list[str]) -> tuple[bytes, int]:
    """Run ``cvdp-gym debug ... --shell`` on a pseudo-terminal; type a command, then exit."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI on the terminal
        os.execv(sys.executable, [sys.executable, "-m", "cvdp_gym.cli", *args])
    try:
        os.write(fd, b"echo $((6*7)); echo cwd=$PWD; exit 3\n")
        seen = read_until(fd, b"cwd=/code/rundir")
        seen += read_until(fd, b"\x00", timeout=10)  # the rest, until the shell closes
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return seen, os.waitstatus_to_exitcode(status)


@pytest.mark.sandbox
def test_shell_runs_in_the_sandbox_of_the_harness(toolchain, tmp_path):
    seen, code = shell_through_pty(["debug", PID, "--out", str(tmp_path / "d"), "--shell"])
    assert b"42\r\ncwd=/code/rundir\r\n" in seen and b"@sandbox" in seen, seen
    assert code == 3  # the shell's exit status is the command's


@pytest.mark.docker
def test_docker_rerun_and_shell(dsandbox, tmp_path):
    out = tmp_path / "d"
    done = run_cli("debug", PID, "--sandbox", "docker", "--out", str(out), "--rerun")
    assert done.returncode == 0 and "verdict: passed" in done.stdout, done.stdout + done.stderr
    assert "docker run" in (out / "commands.sh").read_text()
    seen, code = shell_through_pty(["debug", PID, "--sandbox", "docker", "--out", str(out), "--shell"])
    assert b"42\r\ncwd=/code/rundir\r\n" in seen and code == 3, seen


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    assert "no problem with id nope" in one_line_error(run_cli("debug", "nope", "--out", str(tmp_path / "a")))
    assert "cannot read it" in one_line_error(run_cli("debug", PID, "--answer", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "b")))
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00")
    assert "cannot read it" in one_line_error(run_cli("debug", PID, "--answer", str(binary), "--out", str(tmp_path / "c")))
    prose = tmp_path / "prose.txt"
    prose.write_text("I would rather not.")
    assert "no code found" in one_line_error(run_cli("debug", PID, "--answer", str(prose), "--out", str(tmp_path / "d")))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert "no results.jsonl" in one_line_error(run_cli("debug", PID, "--run", str(run_dir), "--out", str(tmp_path / "e")))
    (run_dir / "results.jsonl").write_text(json.dumps({"id": "other", "sample": 0, "response": "x"}) + "\n")
    assert f"no answer to {PID}" in one_line_error(run_cli("debug", PID, "--run", str(run_dir), "--out", str(tmp_path / "f")))
    not_debug = tmp_path / "g"
    not_debug.mkdir()
    (not_debug / "x").write_text("x")
    assert "not a debug folder" in one_line_error(run_cli("debug", PID, "--out", str(not_debug), "--rerun"))


@pytest.mark.sandbox
def test_a_repository_problem_and_an_agentic_one(toolchain, tmp_path):
    """A repository-context problem (repository and bundle built here): the folder holds the
    repository at the problem's commit; the fixed design passes, the buggy one fails its
    tests. And a bundled agentic problem's reference passes."""
    from cvdp_gym.data.repos import CACHE_ENV
    from tests.support import HEAVY_FIXED, HEAVY_WRONG, make_heavy_problem

    record, repos = make_heavy_problem(tmp_path)
    dataset = tmp_path / "heavy.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    env = {**os.environ, CACHE_ENV: str(tmp_path / "cache")}
    for name, design, verdict in (("fixed", HEAVY_FIXED, "passed"), ("wrong", HEAVY_WRONG, "test_failure")):
        answer = tmp_path / f"answer-{name}" / "rtl"
        answer.mkdir(parents=True)
        (answer / "adder.sv").write_text(design)
        out = tmp_path / f"d-{name}"
        done = subprocess.run(
            [*CLI, "debug", record["id"], "--dataset", str(dataset), "--repos", repos, "--answer", str(answer.parent),
             "--out", str(out), "--rerun"], capture_output=True, text=True, timeout=300, env=env,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"verdict: {verdict}\n" in done.stdout, done.stdout
        assert (out / "commands.sh").is_file()
    agentic = run_cli("debug", "cvdp_gym_agentic_crc8_0001", "--out", str(tmp_path / "d-agentic"), "--rerun")
    assert agentic.returncode == 0 and "verdict: passed\n" in agentic.stdout, agentic.stdout + agentic.stderr
