"""CVDP as a benchmark plug-in: its parts (the official report table, the official runner for
``parity``) are reached by name through the layers' tables, and nothing else a layer reads changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from cvdp_gym.benchmarks.cvdp import official, report
from cvdp_gym.data.benchmarks import BENCHMARKS
from cvdp_gym.data.problems import CVDP
from cvdp_gym.errors import ConfigError
from cvdp_gym.eval.benchmark_reports import OFFICIAL_TABLES, REPORTS
from cvdp_gym.eval.report import build_report
from cvdp_gym.harness.flows import FLOWS
from cvdp_gym.parity import run_parity
from cvdp_gym.parity.benchmarks import OFFICIAL_FLOWS
from cvdp_gym.parity.cvdp import OFFICIAL_RUNNERS
from cvdp_gym.plugins import BUILT_IN


def test_the_layers_reach_cvdps_parts_by_name():
    assert BUILT_IN[-1] == "cvdp_gym.benchmarks.cvdp"  # its JSONL files: what a path is when no other layout matched
    assert OFFICIAL_TABLES[CVDP].report is report.official_report and OFFICIAL_RUNNERS[CVDP] is official.run_parity
    # CVDP adds no catalog dataset, benchmark section, per-answer official flow or test-bench flow.
    for table in (BENCHMARKS, REPORTS, OFFICIAL_FLOWS, FLOWS):
        assert CVDP not in table


def test_the_report_reads_cvdp_rows_through_the_official_table():
    rows = [
        {"id": "cvdp_copilot_a_0001", "sample": 0, "category": "cid002", "difficulty": "easy", "passed": True, "verdict": "passed"},
        {"id": "cvdp_copilot_a_0001", "sample": 1, "category": "cid002", "difficulty": "easy", "passed": False, "verdict": "test_failure"},
        {"id": "cvdp_copilot_b_0001", "sample": 0, "category": "cid002", "difficulty": "hard", "passed": False, "verdict": "test_failure"},
    ]
    section = build_report(rows, [1, 2], {})["official_report"]
    assert section == report.official_report(rows, [1, 2])
    everything = next(e for e in section["tables"]["2"] if (e["category"], e["difficulty"]) == ("all", "total"))
    assert everything["problems"] == 2 and everything["official"] == pytest.approx((1 - 0.5**2) / 2)  # 1 − (1 − c/n)^k, then the mean


def test_parity_runs_the_plugins_official_runner(tmp_path: Path):
    # The first thing CVDP's runner does is check the clone: reaching that error shows the dispatch.
    with pytest.raises(ConfigError, match="is not a clone of NVlabs/cvdp_benchmark"):
        run_parity([], runner=None, official_repo=tmp_path, work=tmp_path / "work")  # type: ignore[arg-type]
