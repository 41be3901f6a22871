"""The sandbox holds: no network, no writes outside the workspace, hard kills, bounded output."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from cvdp_gym.sandbox import BubblewrapSandbox, Limits, Mount
from cvdp_gym.sandbox.scratch import make_scratch_dir, scratch_prefix

pytestmark = pytest.mark.sandbox


def _py(sandbox, toolchain, code: str, tmp_path: Path, **kwargs):
    env = toolchain.env("cocotb2")
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return sandbox.run(
        ["python", "-c", code],
        mounts=[Mount(workspace, "/code", writable=True)],
        scratch=tmp_path / "scratch",
        cwd="/code",
        sim_env=env,
        **kwargs,
    )


def test_runs_python_from_the_sim_env(sandbox, toolchain, tmp_path):
    result = _py(sandbox, toolchain, "import cocotb, sys; print(cocotb.__version__, sys.prefix)", tmp_path)
    assert result.returncode == 0, result.output
    assert result.output.startswith("2.0.1")


def test_no_network(sandbox, toolchain, tmp_path):
    code = (
        "import socket\n"
        "s = socket.socket(); s.settimeout(3)\n"
        "try:\n    s.connect(('1.1.1.1', 80)); print('CONNECTED')\n"
        "except OSError as e:\n    print('BLOCKED', e)\n"
        "print(sorted(n for _, n in socket.if_nameindex()))\n"
    )
    result = _py(sandbox, toolchain, code, tmp_path)
    assert "BLOCKED" in result.output and "CONNECTED" not in result.output
    assert "['lo']" in result.output


def test_cannot_write_outside_the_workspace(sandbox, toolchain, tmp_path):
    victim = Path("/usr") / f"cvdp-gym-victim-{uuid.uuid4().hex}"
    home_file = Path.home() / f"cvdp-gym-victim-{uuid.uuid4().hex}"
    code = (
        "import pathlib\n"
        f"for p in [{str(victim)!r}, {str(home_file)!r}, '/etc/cvdp-x', '/code/ok.txt', '/tmp/scratch.txt']:\n"
        "    try:\n        pathlib.Path(p).write_text('x'); print('WROTE', p)\n"
        "    except OSError as e:\n        print('DENIED', p, type(e).__name__)\n"
    )
    result = _py(sandbox, toolchain, code, tmp_path)
    assert f"DENIED {victim}" in result.output
    assert not victim.exists() and not home_file.exists() and not Path("/etc/cvdp-x").exists()
    assert (tmp_path / "ws" / "ok.txt").read_text() == "x"
    # /tmp inside the sandbox is the run's scratch folder, not the host's /tmp.
    assert (tmp_path / "scratch" / "tmp" / "scratch.txt").exists()
    assert not Path("/tmp/scratch.txt").exists()


def test_host_secrets_are_not_visible(sandbox, toolchain, tmp_path):
    code = (
        "import os\n"
        "for p in ['/etc/shadow', '/etc/hostname', '/root/.bash_history', '/work']:\n"
        "    print(p, os.path.exists(p))\n"
    )
    result = _py(sandbox, toolchain, code, tmp_path)
    assert "True" not in result.output, result.output


def test_the_graders_environment_is_not_readable_inside(sandbox, toolchain, tmp_path, monkeypatch):
    """bwrap is PID 1 inside: its /proc/1/environ must not carry the caller's secrets."""
    canary = f"cvdp-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    monkeypatch.setenv("CVDP_TEST_SECRET", canary)
    code = (
        "import os, glob\n"
        "for path in glob.glob('/proc/*/environ') + glob.glob('/proc/*/task/*/environ'):\n"
        "    try:\n"
        "        print(path, open(path, 'rb').read().replace(b'\\0', b' ').decode())\n"
        "    except OSError as exc:\n"
        "        print(path, 'unreadable', exc)\n"
        "print('ENV', dict(os.environ))\n"
    )
    result = _py(sandbox, toolchain, code, tmp_path)
    assert "/proc/1/environ" in result.output and "ENV" in result.output, result.output
    assert canary not in result.output, result.output


def test_timeout_kills_everything(sandbox, toolchain, tmp_path, processes_with):
    marker = f"cvdp-sleep-{uuid.uuid4().hex}"
    code = (
        "import subprocess, time\n"
        f"subprocess.Popen(['sh', '-c', 'sleep 1000 # {marker}'], start_new_session=True)\n"
        f"subprocess.Popen(['sh', '-c', 'while :; do :; done # {marker}'])\n"
        "time.sleep(1000)\n"
    )
    start = time.monotonic()
    result = _py(sandbox, toolchain, code, tmp_path, limits=Limits(wall_s=2))
    assert result.timed_out
    assert time.monotonic() - start < 500  # they sleep 1000 s: killed at the limit, not waited for
    time.sleep(0.2)
    assert processes_with(marker) == []


def test_huge_output_is_truncated_without_memory_growth(sandbox, toolchain, tmp_path):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code = "import sys\nchunk = 'x' * 1023 + '\\n'\nfor _ in range(100 * 1024): sys.stdout.write(chunk)\nprint('END')"
    result = _py(sandbox, toolchain, code, tmp_path, limits=Limits(output_bytes=100_000))
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert result.returncode == 0
    assert result.output_bytes >= 100 * 1024 * 1024
    assert result.truncated and len(result.output) < 200_000
    assert result.output.rstrip().endswith("END") and "bytes of output elided" in result.output
    assert grown_mb < 50, f"host memory grew by {grown_mb:.0f} MB"


def test_fork_bomb_is_contained(sandbox, toolchain, tmp_path):
    code = (
        "import os\n"
        "n = 0\n"
        "for _ in range(10000):\n"
        "    try:\n        pid = os.fork()\n"
        "    except OSError:\n        print('FORK REFUSED after', n); break\n"
        "    if pid == 0:\n        import time; time.sleep(60); os._exit(0)\n"
        "    n += 1\n"
    )
    result = _py(sandbox, toolchain, code, tmp_path, limits=Limits(wall_s=30, processes=64))
    assert "FORK REFUSED" in result.output, result.output[-500:]
    assert not result.timed_out


def test_memory_limit(sandbox, toolchain, tmp_path):
    code = "x = bytearray(1024 * 1024 * 1024)\nx[::4096] = b'1' * len(x[::4096])\nprint('ALLOCATED')"
    result = _py(sandbox, toolchain, code, tmp_path, limits=Limits(memory_mb=256))
    assert "ALLOCATED" not in result.output
    assert result.returncode != 0


def test_sandbox_leaves_no_cgroups(sandbox, toolchain, tmp_path):
    result = _py(sandbox, toolchain, "print(1)", tmp_path)
    if os.access("/sys/fs/cgroup", os.W_OK) and Path("/sys/fs/cgroup/pids").exists():
        assert result.cgroups, "cgroups are writable here, so limits should use them"
    assert [c for c in result.cgroups if Path(c).exists()] == []


def test_a_new_sandbox_removes_only_the_scratch_folders_of_dead_processes(toolchain, tmp_path, monkeypatch):
    """A process killed mid-run (SIGKILL) leaves its scratch folders; the next sandbox removes
    them, never a live process's folder nor one not named by ``make_scratch_dir``."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = Path(tempfile.mkdtemp(prefix=scratch_prefix("run", gone.pid)))
    (dead / "code" / "rtl").mkdir(parents=True)
    (dead / "code" / "rtl" / "top.sv").write_text("module top; endmodule\n")
    (dead / "code").chmod(0o500)  # an agent's command can leave folders unwritable
    live = make_scratch_dir("ws")
    not_ours = [
        Path(tempfile.mkdtemp(prefix="cvdp-gym-run-")),  # no maker in its name
        Path(tempfile.mkdtemp(prefix=f"cvdp-gym-run-{gone.pid}-1-")),  # another PID namespace
    ]
    BubblewrapSandbox(toolchain)
    assert not dead.exists()
    assert live.is_dir() and all(folder.is_dir() for folder in not_ours)
