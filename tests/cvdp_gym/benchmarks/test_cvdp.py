"""CVDP as a benchmark plug-in: its parts (the official report table, the official runner for
``parity``) are reached by name through the layers' tables, and nothing else a layer reads changes;
the official table's arithmetic; the official runner's output read as verdicts and machine failures.

The runner's output is built here in the format it writes (``raw_result.json``: one entry per id
with one test per compose service, ``errors == 0`` for a pass; a log per service), with the
messages Docker and Compose print for the machine failures (seen on this machine: ``dockerd
--bridge=none``, no registry). The real runner's run is ``tests/cvdp_gym/parity/test_parity.py``'s.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cvdp_gym.benchmarks.cvdp import data, official, report
from cvdp_gym.benchmarks.cvdp.official import machine_failure, read_verdicts
from cvdp_gym.benchmarks.cvdp.report import official_table
from cvdp_gym.data import load_dataset
from cvdp_gym.data.benchmarks import BENCHMARKS
from cvdp_gym.data.bundle import export_jsonl
from cvdp_gym.data.loading import DATASET_SOURCES
from cvdp_gym.data.problems import CVDP
from cvdp_gym.errors import ConfigError, DatasetError
from cvdp_gym.eval.benchmark_reports import OFFICIAL_TABLES, REPORTS
from cvdp_gym.eval.passk import pass_at_k
from cvdp_gym.eval.report import build_report
from cvdp_gym.harness.flows import FLOWS
from cvdp_gym.parity import run_parity
from cvdp_gym.parity.benchmarks import OFFICIAL_FLOWS
from cvdp_gym.parity.cvdp import OFFICIAL_RUNNERS
from cvdp_gym.parity.official import FAILED, MACHINE, MISSING, PASSED
from cvdp_gym.plugins import BUILT_IN

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"


def test_the_layers_reach_cvdps_parts_by_name():
    assert BUILT_IN[-1] == "cvdp_gym.benchmarks.cvdp"  # its JSONL files: what a path is when no other layout matched
    assert OFFICIAL_TABLES[CVDP].report is report.official_report and OFFICIAL_RUNNERS[CVDP] is official.run_parity
    assert list(DATASET_SOURCES) == [CVDP] and DATASET_SOURCES[CVDP] is data.DATASET_SOURCES[0]
    # CVDP adds no catalog dataset, benchmark section, per-answer official flow or test-bench flow.
    for table in (BENCHMARKS, REPORTS, OFFICIAL_FLOWS, FLOWS):
        assert CVDP not in table


def test_a_path_is_cvdps_only_when_no_benchmark_layout_claims_it(tmp_path: Path):
    bundled = load_dataset("bundled")
    assert bundled.source == "bundled" and {p.benchmark for p in bundled} == {CVDP}
    written = tmp_path / "cvdp.jsonl"
    export_jsonl(written)
    assert load_dataset(str(written)).ids == bundled.ids  # a CVDP file: CVDP's loader
    v1 = FIXTURES / "verilog-eval-v1" / "data" / "VerilogEval_Human.jsonl"
    assert {p.benchmark for p in load_dataset(str(v1))} == {"verilog-eval-v1"}  # a .jsonl a benchmark's layout claims
    with pytest.raises(DatasetError, match="no such file"):
        load_dataset(str(tmp_path / "absent.jsonl"))


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


def test_official_table_follows_the_official_aggregation():
    rows_ = [
        # a threshold problem with 1 pass in 3 samples, another with none, a score problem with credits
        *({"id": "a", "sample": s, "category": "cid003", "difficulty": "easy", "passed": s == 0} for s in range(3)),
        *({"id": "b", "sample": s, "category": "cid003", "difficulty": "easy", "passed": False} for s in range(3)),
        *({"id": "c", "sample": s, "category": "cid006", "difficulty": "easy", "passed": s == 0, "credit": v} for s, v in enumerate((0.9, 0.3, 0.0))),
    ]
    table = {(e["category"], e["difficulty"]): e for e in official_table(rows_, 2)}
    official_a = 1 - (1 - 1 / 3) ** 2
    assert table[("cid003", "easy")]["official"] == pytest.approx(official_a / 2, abs=1e-12)
    assert table[("cid003", "easy")]["unbiased"] == pytest.approx(pass_at_k(3, 1, 2) / 2, abs=1e-12)
    assert table[("cid006", "easy")]["official"] == table[("cid006", "easy")]["unbiased"] == pytest.approx(0.4, abs=1e-12)
    assert table[("cid006", "easy")]["score"] and not table[("cid003", "easy")]["score"]
    overall = table[("all", "total")]
    assert overall["problems"] == 3 and overall["official"] == pytest.approx((official_a + 0.4) / 3, abs=1e-12)
    assert overall["passed"] == pytest.approx(official_a + 0.4, abs=1e-12)


def write_run(work: Path, entries: dict[str, tuple[int, list[tuple[int, str | None, str | None]]]]) -> None:
    """A work folder as the official runner leaves it: raw_result.json and one log per service."""
    raw = {}
    for pid, (errors, tests) in entries.items():
        rows = []
        for number, (result, log_text, error_msg) in enumerate(tests):
            log = None
            if log_text is not None:
                log = work / pid / "reports" / f"1_s{number}.txt"
                log.parent.mkdir(parents=True, exist_ok=True)
                log.write_text(log_text)
            rows.append({"result": result, "log": str(log) if log else None, "error_msg": error_msg, "execution": 1.5, "pid": 1})
        raw[pid] = {"category": "cid003", "difficulty": "easy", "tests": rows, "errors": errors}
    work.mkdir(parents=True, exist_ok=True)
    (work / "raw_result.json").write_text(json.dumps(raw))


BRIDGE = "#5 [direct 2/2] RUN pip install pytest\n#5 ERROR: executor failed running [/bin/sh -c pip install pytest]: network bridge not found\nfailed to solve: executor failed running [/bin/sh -c pip install pytest]: network bridge not found\n"
LICNETWORK = "Running harness with project name: p_1_1\nnetwork licnetwork declared as external, but could not be found\n"
PULL = ' direct Pulling \n direct Error Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 10.0.0.53:53: no such host\n'
PYTEST_PASS = "============================== 1 passed in 1.24s ===============================\n"
PYTEST_FAIL = "FAILED ../../src/test_runner.py::test_runner - SystemExit: 1\n============================== 1 failed in 0.93s ===============================\n"


def test_verdicts_and_machine_failures_from_the_official_output(tmp_path):
    work = tmp_path / "copilot"
    write_run(work, {
        "cvdp_copilot_a00000_0001": (0, [(0, PYTEST_PASS, None)]),
        "cvdp_copilot_a00001_0001": (1, [(0, PYTEST_PASS, None), (1, PYTEST_FAIL, None)]),
        "cvdp_copilot_a00002_0001": (1, [(1, BRIDGE, None)]),
        "cvdp_copilot_a00003_0001": (1, [(1, LICNETWORK, None)]),
        "cvdp_copilot_a00004_0001": (1, [(1, PULL, None)]),
        "cvdp_copilot_a00005_0001": (1, [(1, None, "th_prepare: 'input'")]),
    })
    ids = [f"cvdp_copilot_a0000{i}_0001" for i in range(7)]
    verdicts = read_verdicts(work, ids)
    outcomes = [verdicts[i].outcome for i in ids]
    assert outcomes == [PASSED, FAILED, MACHINE, MACHINE, MACHINE, MACHINE, MISSING]
    assert "bridge" in verdicts[ids[2]].reason and "licnetwork" in verdicts[ids[3]].reason
    assert "pulled" in verdicts[ids[4]].reason and "th_prepare" in verdicts[ids[5]].reason
    assert verdicts[ids[1]].reason == "1 of 2 service(s) failed" and "SystemExit" in verdicts[ids[1]].log_tail
    assert verdicts[ids[0]].seconds == 1.5 and len(verdicts[ids[1]].logs) == 2
    # No raw_result.json and a console that shows why: every id is a machine failure.
    nothing = read_verdicts(tmp_path / "absent", ids[:1], "docker: unknown command: docker compose\n")
    assert nothing[ids[0]].outcome == MACHINE and "compose" in nothing[ids[0]].reason
    assert machine_failure(PYTEST_FAIL) is None
    # BuildKit fetching a Dockerfile's ADD URL (pip's bootstrap) with no network: not a pull.
    fetch = '#4 ERROR: Get "https://bootstrap.pypa.io/get-pip.py": dial tcp: lookup bootstrap.pypa.io on 10.0.0.53:53: no such host\n'
    assert machine_failure(fetch) == "a Dockerfile step fetches https://bootstrap.pypa.io/get-pip.py, and no network is reachable"
