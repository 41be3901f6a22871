"""The results watcher on real processes, real ``/proc`` and real inotify.

A simulation is, to the watcher, a process of this run (its tag in the environment) with
``COCOTB_RESULTS_FILE`` set and cocotb's library mapped. A quick one can end before any
``/proc`` scan sees it: its write must still count as cocotb's, not as a forgery.
"""

from __future__ import annotations

import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

import pytest

from cvdp_gym.harness import watch
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


# -- bounded memory, fail closed ------------------------------------------------------------


def _results(name: str, *, padding: int = 0, failed: bool = False) -> bytes:
    """A cocotb results file of one test case, ``padding`` bytes longer (an XML comment)."""
    outcome = '<failure error_type="AssertionError" error_msg="boom"/>' if failed else ""
    head = f'<testsuites><testsuite name="t"><testcase name="{name}" classname="m">{outcome}</testcase>'
    return head.encode() + (b"<!--" + b"x" * padding + b"-->" if padding else b"") + b"</testsuite></testsuites>"


def _until(condition, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the watcher did not see the write in time"
        time.sleep(0.01)


def _run_unread(script: str, *args: str, timeout_s: float = 60.0) -> None:
    """Run ``script`` (with ``args``) in a subprocess while the watcher's thread cannot read
    its events: this thread holds the interpreter's lock, computing, until the script is done
    (it says so through a shared page, which costs this thread no system call). inotify
    queues the events meanwhile, and merges identical neighbours, as on a loaded machine."""
    with tempfile.TemporaryDirectory() as folder:
        flag = Path(folder) / "done"
        flag.write_bytes(b"\0")
        with open(flag, "r+b") as handle:
            done = mmap.mmap(handle.fileno(), 1)
        interval = sys.getswitchinterval()
        sys.setswitchinterval(2 * timeout_s)
        try:
            writer = subprocess.Popen(
                [sys.executable, "-c", script + _DONE, *args], env={**os.environ, "DONE_FLAG": str(flag)}
            )
            deadline = time.perf_counter() + timeout_s
            while not done[0] and time.perf_counter() < deadline:
                pass
        finally:
            sys.setswitchinterval(interval)
            done.close()
        assert writer.wait(timeout=timeout_s) == 0
        assert flag.read_bytes() == b"\1", "the script did not finish in time"


_DONE = """
import os
with open(os.environ["DONE_FLAG"], "r+b") as _flag:
    _flag.write(b"\\1")
"""


def test_memory_stays_bounded_with_many_large_versions(tmp_path: Path) -> None:
    """60 versions of a 2 MiB results file: the watcher keeps what the verdict needs of each
    (counts, failing tests, a digest), not the 120 MiB, and reads one at a time."""
    watching, results, _tag = _watcher(tmp_path)
    tracemalloc.start()
    try:
        with watching as watcher:
            for i in range(60):
                results.write_bytes(_results(f"t{i}", padding=2 << 20, failed=i % 2 == 1))
                _until(lambda n=i + 1: len(watcher.versions) == n)
                results.unlink()  # as cocotb's runner does before the next simulation
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    counts = watcher.counts()
    assert (counts.total, counts.passed, counts.failed) == (60, 30, 30)
    assert len(watcher.failures()) == 20  # MAX_FAILURES distinct failing tests
    assert not watcher.tampered and not watcher.problems
    # Before: every version's bytes were kept (120 MiB here, and the host grew with them).
    assert kept < 1 << 20, f"{kept / 2**20:.1f} MiB kept"
    assert peak < 24 << 20, f"{peak / 2**20:.1f} MiB at the peak"


def test_a_version_over_the_read_cap_fails_closed(tmp_path: Path) -> None:
    watching, results, _tag = _watcher(tmp_path)
    with watching as watcher:
        results.write_bytes(_results("big", padding=watch.MAX_RESULTS_BYTES))
        _until(lambda: watcher.versions)
    assert [v.summary for v in watcher.versions] == [None]
    assert watcher.problems == [f"results file results.xml unreadable: over {watch.MAX_RESULTS_BYTES} bytes ({results.stat().st_size})"]
    assert watcher.counts().total == 0


def test_a_results_file_that_does_not_parse_fails_closed(tmp_path: Path) -> None:
    watching, results, _tag = _watcher(tmp_path)
    with watching as watcher:
        results.write_text(_DOCUMENT.format("cut")[:60])  # cut short
    assert len(watcher.problems) == 1 and "unreadable: not a cocotb results file" in watcher.problems[0]


def test_an_unreadable_file_that_does_not_count_changes_nothing(tmp_path: Path) -> None:
    """Only declared files count: a results-named file of another path, unreadable, is not one."""
    watching, results, tag = _watcher(tmp_path)
    with watching as watcher:
        _simulate(tmp_path, results, tag, "real", seen=True)
        (tmp_path / "junk.result.xml").write_text("not xml")
    assert watcher.declared == {str(results): 1}
    assert not watcher.problems and not watcher.tampered
    assert watcher.counts().total == 1


def test_more_versions_than_the_cap_fail_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "MAX_VERSIONS", 5)
    watching, _results_file, _tag = _watcher(tmp_path)
    with watching as watcher:
        for i in range(8):
            (tmp_path / f"t{i}.result.xml").write_bytes(_results(f"t{i}"))
    assert len(watcher.versions) == 5
    assert watcher.too_many and watcher.problems == ["more than 5 results files were written"]


def test_an_overflowing_event_queue_fails_closed(tmp_path: Path) -> None:
    """More events than inotify queues (``max_queued_events``) while the watcher cannot read:
    ``IN_Q_OVERFLOW``, events lost, so the run cannot pass (and the runner tries once more)."""
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    script = "import sys\nfor i in range(int(sys.argv[2])):\n    open(f'{sys.argv[1]}/{i}.txt', 'w').close()\n"
    watching, results, _tag = _watcher(tmp_path)
    flood = results.parent / "flood"
    flood.mkdir()
    with watching as watcher:
        _run_unread(script, str(flood), str(queued // 2 + 1000))  # 3 events a file
    assert watcher.overflowed and watcher.behind
    assert watcher.problems == ["inotify's event queue overflowed: writes to the results files may have gone unseen"]


_TWICE = """
import sys
from pathlib import Path
results = Path(sys.argv[1])
results.parent.mkdir(exist_ok=True)
for text in sys.argv[2:]:
    with open(results, "w") as out:  # in place: no delete in between
        out.write(text)
"""


def test_two_quick_writes_are_two_even_unread(tmp_path: Path) -> None:
    """Two writes of one file while the watcher cannot read: inotify merges identical unread
    events, so with closes alone they read as one write; ``IN_OPEN``/``IN_MODIFY`` keep them apart."""
    watching, results, _tag = _watcher(tmp_path)
    with watching as watcher:
        _run_unread(_TWICE, str(results), _DOCUMENT.format("cocotb"), _DOCUMENT.format("forged"))
    assert watcher.tampered == {str(results)}
    assert watcher.counts().failed == watcher.counts().total > 0


def test_a_folder_made_late_and_written_twice_is_never_a_pass(tmp_path: Path) -> None:
    """A folder made, and a results file in it written twice, before the watcher could add
    the folder's watch: the scan that follows sees one file, whose writes it cannot count."""
    watching, _results_file, _tag = _watcher(tmp_path)
    results = tmp_path / "late" / "results.xml"
    with watching as watcher:
        _run_unread(_TWICE, str(results), _DOCUMENT.format("cocotb"), _DOCUMENT.format("forged"))
    assert watcher.behind
    assert watcher.problems == [
        "results file(s) written before their folder was watched (results.xml): their writes cannot be counted"
    ]


def test_a_folder_made_late_is_watched_from_then_on(tmp_path: Path) -> None:
    """Writes after the late folder's watch was added are each seen, however quick."""
    watching, _results_file, _tag = _watcher(tmp_path)
    results = tmp_path / "late" / "deeper" / "results.xml"
    with watching as watcher:
        results.parent.mkdir(parents=True)
        _until(lambda: str(results.parent) in {str(p) for p in watcher._watches.values()})
        _run_unread(_TWICE, str(results), _DOCUMENT.format("cocotb"), _DOCUMENT.format("forged"))
    assert not watcher.problems
    assert watcher.tampered == {str(results)}


def test_an_honest_run_of_many_simulations_keeps_its_counts(tmp_path: Path) -> None:
    """Three simulations as a clean build runs them (the build folder removed and made again
    before each): every version counts, and nothing is amiss."""
    watching, results, tag = _watcher(tmp_path)
    with watching as watcher:
        for name in ("one", "two", "three"):
            shutil.rmtree(results.parent)
            results.parent.mkdir()
            time.sleep(0.2)  # the build, before the simulation
            _simulate(tmp_path, results, tag, name, seen=True)
    assert watcher.declared == {str(results): 3}
    assert not watcher.tampered and not watcher.problems and not watcher.behind
    assert (watcher.counts().total, watcher.counts().passed) == (3, 3)
    assert [v.summary.counts.total for v in watcher.versions if v.summary] == [1, 1, 1]


def test_a_change_no_write_explains_is_tampering(tmp_path: Path) -> None:
    """A write through a shared mapping makes no inotify event: the file at the end of the
    run is compared with its last version read."""
    watching, results, tag = _watcher(tmp_path)
    results.write_bytes(b"\0" * 4096)
    with open(results, "r+b") as handle:  # mapped before the run, its descriptor closed
        mapped = mmap.mmap(handle.fileno(), 4096)
    try:
        with watching as watcher:
            _simulate(tmp_path, results, tag, "real", seen=True)
            _until(lambda: watcher.versions)
            mapped[:9] = b"<forged/>"
    finally:
        mapped.close()
    assert watcher.declared == {str(results): 1}
    assert watcher.tampered == {str(results)}


def test_a_file_renamed_over_the_results_file_is_tampering(tmp_path: Path) -> None:
    """cocotb writes its results file in place; a file renamed over it is someone else's."""
    watching, results, tag = _watcher(tmp_path)
    with watching as watcher:
        _simulate(tmp_path, results, tag, "real", seen=True)
        forged = tmp_path / "forged.xml"
        forged.write_text(_DOCUMENT.format("forged"))
        forged.replace(results)
    assert watcher.declared == {str(results): 1}
    assert watcher.tampered == {str(results)}


def test_folders_past_the_watch_cap_fail_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "MAX_WATCHES", 4)  # the roots' two folders, and two more
    watching, results, _tag = _watcher(tmp_path)
    with watching as watcher:
        for i in range(4):
            (results.parent / f"d{i}").mkdir()
    assert watcher.problems == [f"2 folder(s) could not be watched ({results.parent / 'd2'})"]


@pytest.mark.sandbox
def test_a_harness_run_the_watcher_cannot_vouch_for_is_no_pass(runner, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's side: a real harness of three simulations, one more than the watcher
    follows here, passes pytest but is no pass, with the reason."""
    from tests.cvdp_gym.harness.test_runner import PARAM_RUNNER, RTL, make_problem

    problem = make_problem(extra={"src/test_runner.py": PARAM_RUNNER})
    assert runner.run(problem, {"rtl/inv.sv": RTL}).passed
    monkeypatch.setattr(watch, "MAX_VERSIONS", 2)
    result = runner.run(problem, {"rtl/inv.sv": RTL})
    assert not result.passed and result.failure_class == "test_failure"
    assert result.reason == "the results files cannot be vouched for: more than 2 results files were written"
    assert result.services[0].pytest.passed == 3
