"""Reading cocotb's results files: what a verdict needs of each, in bounded memory."""

from __future__ import annotations

import tracemalloc

from cvdp_gym.harness.results import (
    MAX_FAILURES,
    failed_tests,
    read_results,
    results_counts,
    summaries_failures,
)
from cvdp_gym.harness.results import (
    TestCounts as Counts,  # not ``Test...``: pytest would collect it
)

# cocotb 2.x's results file, as it writes it.
COCOTB2 = b"""<?xml version='1.0' encoding='UTF-8'?>
<testsuites name="results"><testsuite name="all" package="all"><property name="random_seed" value="1"/>
<testcase name="test_ok" classname="test_inv" file="/src/test_inv.py" lineno="5" time="0.1" sim_time_ns="16" ratio_time="1"/>
<testcase name="test_bad" classname="test_inv" time="0.1"><failure error_type="AssertionError" error_msg="y at 0x7f3b00 != 3"/></testcase>
<testcase name="test_skip" classname="test_inv"><skipped/></testcase>
<testcase name="test_err" classname="test_inv"><error message="crashed"/><failure message="second"/></testcase>
</testsuite></testsuites>"""


def test_a_results_file_reads_as_counts_and_failing_tests() -> None:
    summary = read_results(COCOTB2)
    assert summary is not None
    assert summary.counts == Counts(4, 1, 2, 1)
    assert summary.failures == (("test_bad", "AssertionError: y != 3"), ("test_err", "second"))
    assert results_counts([COCOTB2, b"not xml"]) == Counts(4, 1, 2, 1)
    assert failed_tests([COCOTB2, COCOTB2]) == [
        {"test": "test_bad", "message": "AssertionError: y != 3"}, {"test": "test_err", "message": "second"},
    ]


def test_what_is_not_a_results_file_reads_as_none() -> None:
    for data in (b"", b"not xml", b"<testsuites><testcase name='cut'>", b"<other><testcase name='x'/></other>",
                 b"<testsuites>" + b"<a>" * 100 + b"</a>" * 100 + b"</testsuites>"):
        assert read_results(data) is None, data[:40]


def test_failing_tests_merge_to_the_first_distinct_ones() -> None:
    """Each file keeps its first ``MAX_FAILURES`` distinct failing tests: enough for any merge."""
    def document(names: range) -> bytes:
        cases = "".join(f'<testcase name="t{i}"><failure message="m"/></testcase>' for i in names)
        return f"<testsuites>{cases}</testsuites>".encode()

    first, second = document(range(5)), document(range(100))
    assert len(read_results(second).failures) == MAX_FAILURES
    merged = summaries_failures([read_results(first), read_results(second)])
    assert merged == failed_tests([first, second])
    assert [f["test"] for f in merged] == [f"t{i}" for i in range(MAX_FAILURES)]


def test_reading_a_file_of_a_million_elements_builds_no_tree() -> None:
    data = b"<testsuites>" + b"<a/>" * 1_000_000 + b'<testcase name="x"/></testsuites>'
    tracemalloc.start()
    try:
        summary = read_results(data)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert summary is not None and summary.counts == Counts(1, 1, 0, 0)
    assert peak < 4 << 20, f"{peak / 2**20:.1f} MiB"  # a tree of it: about 80 MiB
