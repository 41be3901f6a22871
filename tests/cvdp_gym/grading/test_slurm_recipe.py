"""The Slurm recipes run: ``examples/slurm/grade.sbatch`` and ``serve.sbatch`` on a real Slurm.

The fixture starts Debian's Slurm 22.05 (``slurm-wlm``) on this machine, one node, on
loopback only: a ``munged`` with a fresh key, ``slurmctld`` and ``slurmd`` (as root, which
slurmd needs to start jobs), every file in one temporary folder, nothing of the machine's
own Slurm or munge touched; afterwards it stops them by their process groups and removes
the folder. One test submits the Ray recipe with a small ``cvdp-gym check`` as its command
and checks the verdicts, the job's exit status and that the job's Ray is gone afterwards;
the other submits the serve recipe, grades through the URL it publishes, cancels the job
and checks that the server and its cache are gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.leftovers import mark_owner
from tests.support import missing, processes_with

pytest.importorskip("ray")

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
RECIPE = ROOT / "examples" / "slurm" / "grade.sbatch"
SLURM_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin"])
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "srun", "sinfo")
#: How long a loaded machine may take: to start the daemons, to answer one command (asked
#: again up to COMMAND_TRIES times: the controller answers one request at a time), for a job.
START_S, COMMAND_S, COMMAND_TRIES, JOB_S = 300.0, 120.0, 3, 500.0
#: Problems whose references pass and whose bundled wrong candidates fail, quickly (8 runs).
PROBLEMS = ("cvdp_gym_gray_converter_0001", "cvdp_gym_traffic_light_0001")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


SLURM_CONF = """\
ClusterName=cvdptest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={dir}/munge/munge.sock
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/log/slurmctld.log
SlurmdLogFile={dir}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=30 State=UP
"""


class LocalSlurm:
    """munged + slurmctld + slurmd on 127.0.0.1, in a temporary folder of their own."""

    def __init__(self, cpus: int = 2) -> None:
        # Short: Ray's socket paths under it must stay within 107 bytes.
        self.dir = Path(tempfile.mkdtemp(prefix="cvdp-slurm-", dir="/tmp"))
        self.dir.chmod(0o711)  # munged wants its socket's folders searchable by all
        mark_owner(self.dir)  # a suite killed halfway leaves nothing the next one keeps
        self.host = socket.gethostname().split(".")[0]
        self.conf = self.dir / "slurm.conf"
        self.env = {**os.environ, "PATH": SLURM_PATH, "SLURM_CONF": str(self.conf)}
        self.cpus = cpus
        self.processes: list[subprocess.Popen[bytes]] = []

    def _launch(self, argv: list[str], log: str) -> None:
        with open(self.dir / "log" / log, "wb") as out:
            self.processes.append(subprocess.Popen(
                argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            ))

    def _wait(self, ready, what: str, timeout: float = START_S) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if any(p.poll() is not None for p in self.processes) or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start; logs in {self.dir / 'log'}:\n{self.logs()}")
            time.sleep(0.2)

    def start(self) -> LocalSlurm:
        for sub, mode in (("key", 0o700), ("munge", 0o755), ("state", 0o700), ("spool", 0o700), ("log", 0o755)):
            (self.dir / sub).mkdir(mode=mode)
        key = self.dir / "key" / "munge.key"
        key.write_bytes(os.urandom(128))
        key.chmod(0o600)
        socket_path = self.dir / "munge" / "munge.sock"
        self._launch(["munged", "--foreground", f"--key-file={key}", f"--socket={socket_path}",
                      f"--pid-file={self.dir / 'munge' / 'munged.pid'}", f"--seed-file={self.dir / 'key' / 'seed'}",
                      f"--log-file={self.dir / 'log' / 'munged.log'}"], "munged.out")
        self._wait(socket_path.exists, "munged")
        self.conf.write_text(SLURM_CONF.format(
            host=self.host, dir=self.dir, cpus=self.cpus, ctld_port=_free_port(), slurmd_port=_free_port(),
        ))
        self._launch(["slurmctld", "-D", "-f", str(self.conf)], "slurmctld.out")
        self._launch(["slurmd", "-D", "-N", self.host, "-f", str(self.conf)], "slurmd.out")
        self._wait(lambda: self.run("sinfo", "--noheader", "--format=%t", check=False).strip() == "idle", "Slurm")
        return self

    def run(self, *argv: str, check: bool = True, env: dict[str, str] | None = None) -> str:
        """A Slurm command's output; one that a loaded controller answers late is asked again."""
        for attempt in range(COMMAND_TRIES):
            try:
                done = subprocess.run(argv, env={**self.env, **(env or {})}, capture_output=True, text=True, timeout=COMMAND_S)
                break
            except subprocess.TimeoutExpired:
                if attempt == COMMAND_TRIES - 1 or argv[0] == "sbatch":  # a submission is not repeated
                    raise
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")
        return done.stdout

    def job(self, job_id: str) -> dict[str, str]:
        """The job's record as ``scontrol show job`` gives it (``JobState``, ``ExitCode``...)."""
        line = self.run("scontrol", "--oneliner", "show", "job", job_id)
        return dict(re.findall(r"(\w+)=(\S*)", line))

    def wait_for(self, job_id: str, timeout: float) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        while (record := self.job(job_id))["JobState"] in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
            if time.monotonic() > deadline:
                self.run("scancel", job_id, check=False)
                raise TimeoutError(f"job {job_id} still {record['JobState']} after {timeout:.0f} s")
            time.sleep(0.5)
        return record

    def logs(self) -> str:
        return "\n".join(f"== {f.name}\n{f.read_text(errors='replace')[-2000:]}" for f in sorted((self.dir / "log").iterdir()))

    def stop(self) -> None:
        """Stop the daemons this started (each in a session of its own), then remove the folder."""
        for proc in reversed(self.processes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.processes):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def slurm(toolchain):
    absent = [p for p in PROGRAMS if shutil.which(p, path=SLURM_PATH) is None]
    if absent:
        missing(f"Slurm is not installed (no {', '.join(absent)}): apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        pytest.skip("slurmd must run as root to start jobs; run this test as root")
    cluster = LocalSlurm(cpus=min(2, os.cpu_count() or 1))
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _listening(pids: set[int]) -> set[str]:
    """Local addresses (as /proc/net/tcp writes them) of the TCP sockets ``pids`` listen on."""
    inodes = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                found.add(fields[1].split(":")[0])
    return found


def test_the_sbatch_recipe_grades_on_ray_across_the_allocation(slurm, tmp_path):
    daemons = {p.pid for p in slurm.processes}
    assert _listening(daemons) == {"0100007F"}, "Slurm must listen on 127.0.0.1 only"
    results = tmp_path / "check.jsonl"
    ray_tmp = slurm.dir / "ray"
    job_env = {  # the job sees the submitter's environment (sbatch --export=ALL)
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{slurm.env['PATH']}",  # the venv's cvdp-gym and ray
        "RAY_PORT": str(_free_port()),
        "RAY_TMP": str(ray_tmp),
    }
    ids = [word for problem in PROBLEMS for word in ("--id", problem)]
    job_id = slurm.run(
        "sbatch", "--parsable", "--nodes=1", f"--cpus-per-task={slurm.cpus}",
        f"--output={tmp_path / 'job-%j.out'}", f"--chdir={tmp_path}", str(RECIPE),
        "cvdp-gym", "check", "bundled", *ids, "--executor", "ray", "--out", str(results),
        env=job_env,
    ).strip().split(";")[0]
    record = slurm.wait_for(job_id, timeout=JOB_S)
    output = (tmp_path / f"job-{job_id}.out").read_text(errors="replace")
    assert (record["JobState"], record["ExitCode"]) == ("COMPLETED", "0:0"), output + slurm.logs()
    assert "Ray head 127.0.0.1:" in output and "1 Ray node(s) up; running: cvdp-gym check" in output, output

    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == 8 and {r["id"] for r in rows} == set(PROBLEMS)
    assert all(r["matches"] for r in rows), [(r["key"], r["verdict"], r["expected"]) for r in rows]
    assert [r["verdict"] for r in rows if r["name"] == "reference"] == ["passed", "passed"]
    assert "verdicts as expected: 8/8" in output

    # Taken down: no process of the job's Ray is left, and its folder is gone.
    assert "Ray stopped; exit status 0" in output
    deadline = time.monotonic() + COMMAND_S
    while processes_with(str(ray_tmp)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_with(str(ray_tmp)) == []
    assert not ray_tmp.exists()


def test_the_serve_recipe_starts_one_server_per_node_and_stops_with_the_job(slurm, tmp_path):
    pytest.importorskip("fastapi")
    from cvdp_gym.data import load_dataset
    from cvdp_gym.service.client import GradingClient

    urls = tmp_path / "servers.urls"
    job_tmp = slurm.dir / "serve-tmp"
    job_tmp.mkdir()
    job_env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{slurm.env['PATH']}",
        "SERVE_PORT": str(_free_port()),
        "SERVE_URLS": str(urls),
        "TMPDIR": str(job_tmp),  # the node-local grade cache and sandboxes' scratch
    }
    job_id = slurm.run(
        "sbatch", "--parsable", "--nodes=1", f"--cpus-per-task={slurm.cpus}",
        f"--output={tmp_path / 'job-%j.out'}", f"--chdir={tmp_path}", str(ROOT / "examples" / "slurm" / "serve.sbatch"),
        "--dataset", "bundled", "--shutdown-grace", "5",
        env=job_env,
    ).strip().split(";")[0]
    output = tmp_path / f"job-{job_id}.out"
    deadline = time.monotonic() + START_S
    while not (urls.exists() and urls.read_text().strip()):
        assert slurm.job(job_id)["JobState"] in ("PENDING", "CONFIGURING", "RUNNING"), output.read_text() + slurm.logs()
        assert time.monotonic() < deadline, "no server came up"
        time.sleep(0.5)
    [url] = urls.read_text().split()
    assert url.startswith("http://127.0.0.1:")

    problem = load_dataset("bundled")["cvdp_gym_gray_converter_0001"]
    with GradingClient(url) as client:
        verdict = client.grade(problem.id, files=problem.reference, reward="binary")
    assert verdict["passed"] and verdict["reward"] == 1.0, verdict

    slurm.run("scancel", job_id)
    record = slurm.wait_for(job_id, timeout=START_S)
    assert record["JobState"] == "CANCELLED", record
    deadline = time.monotonic() + COMMAND_S
    while processes_with(str(urls)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_with(str(urls)) == [], output.read_text()
    assert not list(job_tmp.glob("cvdp-serve-*.sqlite*"))  # its node-local cache went with it
