"""The results watcher on real processes, real ``/proc`` and real inotify.

A simulation is, to the watcher, a process of this run (its tag in the environment) with
``COCOTB_RESULTS_FILE`` set and cocotb's library mapped. A quick one can end before any
``/proc`` scan sees it: its write must still count as cocotb's, not as a forgery.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from cvdp_gym.harness.watch import RUN_TAG, ResultsWatcher

_DOCUMENT = '<testsuites><testsuite name="t"><testcase name="{}" classname="m"/></testsuite></testsuites>'
_WRITER = """
import mmap, sys, time
library, results, document, seen = sys.argv[1:5]
if seen == "1":  # cocotb's library mapped, alive long enough for a scan before and after
    handle = open(library, "rb")
    mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    time.sleep(0.5)
with open(results, "w") as out:
    out.write(document)
if seen == "1":
    time.sleep(0.5)
"""


def _simulate(tmp_path: Path, results: Path, tag: str, name: str, *, seen: bool) -> None:
    library = tmp_path / "libcocotb_stand_in.so"
    if not library.exists():
        library.write_bytes(b"\0" * 4096)
    env = {**os.environ, RUN_TAG: tag, "COCOTB_RESULTS_FILE": str(results)}
    subprocess.run(
        [sys.executable, "-c", _WRITER, str(library), str(results), _DOCUMENT.format(name), "1" if seen else "0"],
        cwd=tmp_path, env=env, check=True, timeout=60,
    )


def _watcher(tmp_path: Path) -> tuple[ResultsWatcher, Path, str]:
    """A watcher over ``tmp_path``, the results file a simulation there writes, and the run's tag."""
    build = tmp_path / "sim_build"
    build.mkdir()
    tag = uuid.uuid4().hex
    return ResultsWatcher([tmp_path], tag=tag, mounts={str(tmp_path): tmp_path}), build / "results.xml", tag


def test_a_simulation_that_ended_unseen_is_not_a_forgery(tmp_path: Path) -> None:
    watching, results, tag = _watcher(tmp_path)
    with watching as watcher:
        _simulate(tmp_path, results, tag, "first", seen=True)
        results.unlink()  # cocotb's runner deletes the file before the next simulation
        _simulate(tmp_path, results, tag, "second", seen=False)
    assert watcher.declared == {str(results): 1}
    assert not watcher.tampered
    assert (watcher.counts().total, watcher.counts().failed) == (2, 0)


def test_a_second_write_without_a_delete_is_a_forgery(tmp_path: Path) -> None:
    watching, results, tag = _watcher(tmp_path)
    with watching as watcher:
        _simulate(tmp_path, results, tag, "real", seen=True)
        _simulate(tmp_path, results, tag, "forged", seen=False)  # rewritten in place
    assert watcher.tampered == {str(results)}
    counts = watcher.counts()
    assert counts.failed == counts.total > 0
