"""Each benchmark's own report (``benchmark_reports``), the published figures, and their place in
report.json, report.md, the terminal and the HTML report.

Rows are made up with the fields ``eval`` writes (``id``, ``sample``, ``benchmark``, ``task``,
``passed``, ``official``, ``defect``); every expected figure is worked out here by hand from the
arithmetic each benchmark's script states (sv-iv-analyze's ``Results.print``, VerilogEval v1's
``evaluate_functional_correctness``, RTLLM's ``auto_run.py`` ``cal_atk``). The last test runs the
real ``cvdp-gym eval`` on a made-up VerilogEval v2 copy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from math import comb
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import cvdp_gym
from cvdp_gym.errors import ConfigError
from cvdp_gym.eval.benchmark_reports import benchmark_reports
from cvdp_gym.eval.intervals import wilson
from cvdp_gym.eval.published import PUBLISHED_FILE, known_tasks, published, published_files
from cvdp_gym.eval.report import build_report, print_report, to_markdown
from cvdp_gym.eval.run import RESULTS
from cvdp_gym.report import write_html_report

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
#: The benchmarks whose published figures ship with cvdp-gym, for every task.
PUBLISHED = ("verilog-eval-v2", "verilog-eval-v1", "rtllm-v2", "rtllm-v1.1")
Row = dict[str, Any]


def ve2_row(name: str, sample: int, passed: bool, *, official: bool | None = None, cls: str | None = None,
            defect: str | None = None, task: str = "spec-to-rtl") -> Row:
    """A VerilogEval v2 row: ``official`` is the whole log's verdict (default: ours)."""
    official = passed if official is None else official
    return {
        "id": f"verilog-eval-v2.{task}.{name}", "sample": sample, "benchmark": "verilog-eval-v2", "task": task,
        "category": task, "passed": passed, "verdict": "passed" if passed else "test_failure", "defect": defect,
        "official": {"class": cls or ("." if official else "R"), "passed": official, "verdict_class": "." if passed else "R"},
    }


def ve1_row(name: str, sample: int, passed: bool, task: str = "human") -> Row:
    return {"id": f"verilog-eval-v1.{task}.{name}", "sample": sample, "benchmark": "verilog-eval-v1", "task": task,
            "passed": passed, "verdict": "passed" if passed else "test_failure", "defect": None,
            "official": {"result": "passed" if passed else "failed: 1 out of 9 samples.", "passed": passed}}


def rtllm_row(benchmark: str, design: str, sample: int, *, compiled: bool = True, auto_run: bool = False,
              open_rule: bool = False, passed: bool | None = None, rule: str = "auto_run", defect: str | None = None) -> Row:
    """An RTLLM row: ``passed`` (ours) defaults to the official verdict by ``rule``."""
    official = {"compiled": compiled, "auto_run": auto_run, "open": open_rule, "seconds": 0.1, "rule": rule}
    ours = official[rule] if passed is None else passed
    return {"id": f"{benchmark}.{design}", "sample": sample, "benchmark": benchmark, "task": "", "passed": ours,
            "verdict": "passed" if ours else "test_failure", "defect": defect, "official": official}


def figure(section: dict[str, Any], name_start: str) -> dict[str, Any]:
    return next(f for f in section["figures"] if f["name"].startswith(name_start))["cells"]


# ---------------------------------------------------------------- VerilogEval v2


def ve2_rows() -> list[Row]:
    """n=3: problems passing 1/3, 2/3, 3/3 (sv-iv-analyze: int(33.33)=33, 66, 100); one problem whose
    sample 0 passed only by the whole log (forged) and sample 2 a syntax error; one defect problem."""
    rows = [ve2_row(f"Prob00{i}_p", s, s < i) for i in (1, 2, 3) for s in range(3)]
    rows += [ve2_row("Prob004_forged", 0, False, official=True), ve2_row("Prob004_forged", 1, False),
             ve2_row("Prob004_forged", 2, False, cls="S")]
    rows += [ve2_row("Prob005_broken", s, False, defect="the reference fails its own test bench") for s in range(3)]
    return rows


def test_verilog_eval_v2_pass_rate_is_sv_iv_analyze_arithmetic():
    section = benchmark_reports(ve2_rows())["verilog-eval-v2:spec-to-rtl"]
    rate = figure(section, "pass_rate")
    # official: every problem, 5 of them: 33, 66, 100, forged 1/3 -> 33, defect 0.
    assert rate["official"]["value"] == pytest.approx((33 + 66 + 100 + 33 + 0) / 5) and rate["official"]["of"] == 5
    # ours: the defect problem left out, the forged pass not counted: 33, 66, 100, 0.
    assert rate["ours"]["value"] == pytest.approx((33 + 66 + 100 + 0) / 4) and rate["ours"]["of"] == 4
    assert section["pass_rate_printed"] == "46.40"
    only_three = benchmark_reports([r for r in ve2_rows() if r["id"].endswith("_p")])["verilog-eval-v2:spec-to-rtl"]
    assert only_three["pass_rate_printed"] == "66.33"  # the brief's worked example
    pass1 = figure(section, "pass@1")
    official_rate = (1 / 3 + 2 / 3 + 1 + 1 / 3 + 0) / 5
    assert pass1["official"]["value"] == pytest.approx(100 * official_rate)
    assert pass1["official"]["ci95"] == pytest.approx([100 * v for v in wilson(official_rate, 5)])
    assert pass1["ours"]["value"] == pytest.approx(100 * (1 / 3 + 2 / 3 + 1 + 0) / 4)
    classes = {c["class"]: (c["official"], c["ours"]) for c in section["classes"]}
    # official: passes 1+2+3+1 = 7, S 1, R the other 7; ours: passes 6, R 9 (our class comes from the test bench).
    assert classes == {".": (7, 6), "S": (1, 0), "R": (7, 9)}
    assert [(d["name"], d["samples"], d["official_passed"]) for d in section["defects"]] == [("Prob005_broken", 3, 0)]
    assert [(f["id"], f["sample"]) for f in section["forged"]] == [("verilog-eval-v2.spec-to-rtl.Prob004_forged", 0)]
    assert (section["problems"], section["problems_ours"], section["samples"]) == (5, 4, 15)
    assert any("n=20 at temperature 0.8" in n for n in section["notes"])
    assert section["published"] and all(e["task"] == "spec-to-rtl" for e in section["published"])


# ---------------------------------------------------------------- VerilogEval v1


def unbiased(n: int, c: int, k: int) -> float:
    return 1 - comb(n - c, k) / comb(n, k)


def test_verilog_eval_v1_reports_pass_at_k_only_when_every_problem_has_k_samples():
    passes = {"a": 0, "b": 3, "c": 10}  # correct samples of 10 per problem
    rows = [ve1_row(name, s, s < c) for name, c in passes.items() for s in range(10)]
    section = benchmark_reports(rows)["verilog-eval-v1:human"]
    assert [f["k"] for f in section["figures"]] == [1, 10]  # 100 > 10 samples: not reported
    assert figure(section, "pass@1")["official"]["value"] == pytest.approx(100 * (0 + 0.3 + 1) / 3)
    expected10 = sum(unbiased(10, c, 10) for c in passes.values()) / 3
    assert figure(section, "pass@10")["official"]["value"] == pytest.approx(100 * expected10)
    assert any("pass@100 not computed" in n for n in section["notes"])
    # One problem with 9 samples: evaluate_functional_correctness drops pass@10 altogether.
    short = benchmark_reports(rows[:-1])["verilog-eval-v1:human"]
    assert [f["k"] for f in short["figures"]] == [1]
    assert any("pass@10, pass@100 not computed" in n for n in short["notes"])


# ---------------------------------------------------------------- RTLLM


def test_rtllm_v2_divides_by_designs_plus_one_and_scores_its_quirks_zero():
    designs = [f"design_{i:02}" for i in range(48)] + ["freq_div", "freq_divbyfrac"]
    rows = []
    for i, design in enumerate(designs):  # 2 samples each
        for s in range(2):
            passing = i < 20 or design.startswith("freq_div")  # 20 ordinary designs and both quirk designs pass
            rows.append(rtllm_row("rtllm-v2", design, s, compiled=i != 47, auto_run=passing, open_rule=passing and s == 0))
    section = benchmark_reports(rows)["rtllm-v2"]
    syntax, func, open_rule = figure(section, "syntax pass@1"), figure(section, "functional pass@1, auto_run"), figure(section, "functional pass@1, open")
    assert [c["of"] for c in syntax.values()] == [51, 51, 50, 50]
    assert syntax["auto_run"]["value"] == pytest.approx(100 * 49 / 51)  # design_47 never compiles
    assert syntax["own_copy"]["value"] == pytest.approx(100 * 47 / 51)  # ... and auto_run.py never builds the two quirk designs
    assert syntax["mean"]["value"] == pytest.approx(100 * 49 / 50)
    assert func["auto_run"]["value"] == pytest.approx(100 * 22 / 51) and func["own_copy"]["value"] == pytest.approx(100 * 20 / 51)
    assert func["mean"]["value"] == pytest.approx(100 * 22 / 50) and func["ours"]["value"] == pytest.approx(100 * 22 / 50)
    assert open_rule["auto_run"]["value"] == pytest.approx(100 * 11 / 51) and open_rule["mean"]["value"] == pytest.approx(100 * 11 / 50)
    assert open_rule["own_copy"]["value"] is None and open_rule["ours"]["value"] is None  # not auto_run.py's; not this run's rule
    assert figure(section, "syntax pass@1")["ours"]["value"] == pytest.approx(100 * 49 / 50)
    assert not any(f["k"] == 5 for f in section["figures"]) and any("pass@5, pass@10 not computed" in n for n in section["notes"])
    notes = " ".join(section["notes"])
    assert "freq_divfrac" in notes and "/home/coguest" in notes and "auto_run.py's rule on Icarus" in notes
    assert "total_func_success: 20/50" in notes
    assert [h["value"] for h in section["headline"]] == pytest.approx([100 * 20 / 51, 100 * 22 / 51, 100 * 22 / 50])


def test_rtllm_v11_pass_at_k_defects_and_forged_passes():
    designs = [f"design_{i:02}" for i in range(28)] + ["freq_div"]
    rows = []
    for i, design in enumerate(designs):  # 5 samples each; design i passes min(i, 5) of them
        for s in range(5):
            rows.append(rtllm_row("rtllm-v1.1", design, s, auto_run=s < min(i, 5), defect="broken reference" if i == 0 else None))
    rows[-1] = rtllm_row("rtllm-v1.1", "freq_div", 4, auto_run=True, passed=False)  # forged: the answer printed "Pass"
    section = benchmark_reports(rows)["rtllm-v1.1"]
    c = {design: min(i, 5) for i, design in enumerate(designs)}
    ours_c = {**c, "freq_div": 4}
    for k in (1, 5):
        cells = figure(section, f"functional pass@{k}, auto_run")
        assert cells["auto_run"]["value"] == pytest.approx(100 * sum(unbiased(5, x, k) for x in c.values()) / 30)
        own = sum(unbiased(5, x, k) for d, x in c.items() if d != "freq_div") / 30
        assert cells["own_copy"]["value"] == pytest.approx(100 * own)
        clean = [x for d, x in ours_c.items() if d != "design_00"]
        assert cells["ours"]["value"] == pytest.approx(100 * sum(unbiased(5, x, k) for x in clean) / 28) and cells["ours"]["of"] == 28
    assert [d["name"] for d in section["defects"]] == ["design_00"] and (section["problems"], section["problems_ours"]) == (29, 28)
    assert [(f["id"], f["sample"]) for f in section["forged"]] == [("rtllm-v1.1.freq_div", 4)]
    assert not any("freq_divfrac" in n for n in section["notes"])  # v1.1's list has no freq_divbyfrac


# ---------------------------------------------------------------- published figures


def test_each_plugin_publishes_its_own_figures_through_the_one_loader():
    """The figures live in the plug-ins that publish them (no shared file), each read by ``published``."""
    package_root = Path(cvdp_gym.__file__).resolve().parent
    assert not (package_root / "data" / "published.json").exists()
    owners = {
        "cvdp_gym.benchmarks.verilog_eval_v2": {"verilog-eval-v2"},
        "cvdp_gym.benchmarks.verilog_eval_v1": {"verilog-eval-v1"},
        "cvdp_gym.benchmarks.rtllm": {"rtllm-v2", "rtllm-v1.1"},
    }
    files = published_files()
    assert set(files) == set(owners)  # ChipBench and CVDP publish none here
    for package, benchmarks in owners.items():
        assert files[package].name == PUBLISHED_FILE
        assert Path(str(files[package])).parent == package_root / "benchmarks" / package.rsplit(".", 1)[1]
        doc = json.loads(files[package].read_text(encoding="utf-8"))
        assert {e["benchmark"] for e in doc["entries"]} == benchmarks  # a file holds its own benchmark's figures only
        for entry in doc["entries"]:
            loaded = published(entry["benchmark"], entry["task"], entry["metric"])
            assert any(e["model"] == entry["model"] and e["value"] == entry["value"] for e in loaded)


def test_published_entries_load_with_settings_and_sources(tmp_path):
    assert set(known_tasks()) >= set(PUBLISHED)
    for benchmark in PUBLISHED:  # ChipBench's README and repository publish no figure (its paper's tables only)
        for task in known_tasks()[benchmark]:
            entries = published(benchmark, task, "pass@1")
            assert entries, (benchmark, task)
            for entry in entries:
                assert entry["settings"] and entry["source"]["title"] and entry["source"]["where"]
                assert entry["source"].get("arxiv") or entry["source"].get("url")
                assert 0 <= entry["value"] <= 100 and entry["metric"] == "pass@1"
    models = {e["model"] for e in published("verilog-eval-v2", "spec-to-rtl")}
    assert {"GPT-4o", "DeepSeek-R1-671B", "Qwen2.5-Coder-7B-Instruct", "Qwen2.5-Coder-32B-Instruct", "CodeV-R1-7B"} <= models
    doc = json.loads(published_files()["cvdp_gym.benchmarks.verilog_eval_v2"].read_text(encoding="utf-8"))
    doc["entries"][3]["source"] = "no-such-source"
    bad = tmp_path / "published.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="entry 3: bad source"):
        published("verilog-eval-v2", "spec-to-rtl", path=bad)


# ---------------------------------------------------------------- the reports


def test_report_json_markdown_terminal_and_html_show_the_sections(tmp_path):
    rows = ve2_rows() + [rtllm_row("rtllm-v2", f"d{i}", 0, auto_run=i < 3) for i in range(5)]
    report = build_report(rows, [1], {"source": "made up", "temperature": 0.8})
    sections = report["benchmark_reports"]
    assert list(sections) == ["rtllm-v2", "verilog-eval-v2:spec-to-rtl"] and "official_report" not in report  # no CVDP rows
    markdown = to_markdown(report)
    assert "## VerilogEval v2 spec-to-rtl: the benchmark's own report" in markdown and "## RTLLM v2.0: the benchmark's own report" in markdown
    assert "| pass_rate (sv-iv-analyze: mean of int(100·npass/nsamples)) | 46.40% (÷5) | 49.75% (÷4) |" in markdown
    assert "| functional pass@1, auto_run rule | 50.00% (÷6) | 50.00% (÷6) | 60.00% (÷5) | 60.00% (÷5) |" in markdown
    assert "| this run: pass@1, official rule | 46.7 | this run |" in markdown and "temperature 0.8" in markdown
    assert "| GPT-4o | 63 | [" in markdown and "arXiv 2408.11053" in markdown  # published, with its source
    console = Console(width=250, record=True)
    print_report(report, console)
    terminal = console.export_text()
    assert "VerilogEval v2 spec-to-rtl: the benchmark's own figures" in terminal and "46.40% (÷5)" in terminal and "[1]" in terminal

    run = tmp_path / "run"
    run.mkdir()
    (run / RESULTS).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "report.json").write_text(json.dumps(report))
    index = write_html_report([run], tmp_path / "html").read_text()
    assert "Run 1: VerilogEval v2 spec-to-rtl, the benchmark's own report" in index
    assert "<td>46.40% (÷5)</td>" in index and "RTLLM v2.0: pass@1 (%), this run and published" in index


# ---------------------------------------------------------------- end to end


@pytest.mark.sandbox
def test_eval_cli_writes_the_verilog_eval_v2_section(toolchain, tmp_path):
    """The real CLI on a made-up VerilogEval v2 copy: reference answers pass, an answer naming the
    wrong module fails, an answer that drives nothing but prints the pass line itself passes
    only by sv-iv-analyze's rule over the whole log (a forged pass), and so does one that only
    instantiates the reference (a reach outside its design)."""
    from cvdp_gym.data import load_dataset
    from cvdp_gym.envs.prompts import answer_text

    copy = FIXTURES / "verilog-eval" / "dataset_spec-to-rtl"
    if not copy.is_dir():
        pytest.skip(f"{copy} is not there yet")
    first, second = load_dataset(str(copy)).problems[:2]
    target, reference = first.targets[0], first.reference[first.targets[0]]
    header = reference[: reference.index(");") + 2]  # the module's header: its outputs are left undriven
    second_reference = second.reference[second.targets[0]]
    second_header = second_reference[: second_reference.index(");") + 2]
    answers = {
        (first.id, 0): answer_text(first, first.reference),
        (first.id, 1): answer_text(first, {target: reference.replace("TopModule", "WrongName")}),
        (first.id, 2): answer_text(first, {target: header + '\ninitial $display("Mismatches: 0 in 1 samples");\nendmodule\n'}),
        (second.id, 0): answer_text(second, second.reference),
        (second.id, 1): answer_text(second, {second.targets[0]: second_header + "\n  RefModule r (.*);\nendmodule\n"}),
    }
    responses = tmp_path / "answers.jsonl"
    responses.write_text("".join(json.dumps({"id": pid, "sample": s, "response": text}) + "\n" for (pid, s), text in answers.items()))
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "cvdp_gym.cli", "eval", str(copy), "--responses", str(responses), "--out", str(out),
         "--id", first.id, "--id", second.id],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "250"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {(r["id"], r["sample"]): r for r in map(json.loads, (out / RESULTS).read_text().splitlines())}
    assert [rows[key]["passed"] for key in answers] == [True, False, False, True, False]
    assert rows[(first.id, 2)]["official"]["passed"] and rows[(first.id, 1)]["official"]["class"] == "m"
    assert rows[(second.id, 1)]["verdict"] == "reach_in" and rows[(second.id, 1)]["official"]["passed"]
    section = json.loads((out / "report.json").read_text())["benchmark_reports"]["verilog-eval-v2:spec-to-rtl"]
    # official: first 2 of 3 -> int(66.67) = 66, second 2 of 2 -> 100; ours: first 1 of 3 -> 33, second 1 of 2 -> 50.
    rate, pass1 = figure(section, "pass_rate"), figure(section, "pass@1")
    assert (rate["official"]["value"], rate["ours"]["value"]) == (pytest.approx((66 + 100) / 2), pytest.approx((33 + 50) / 2))
    assert (pass1["official"]["value"], pass1["ours"]["value"]) == (
        pytest.approx(100 * (2 / 3 + 1) / 2), pytest.approx(100 * (1 / 3 + 1 / 2) / 2),
    )
    assert [(f["id"], f["sample"]) for f in section["forged"]] == [(first.id, 2)]
    assert [(f["id"], f["sample"]) for f in section["reach_in"]] == [(second.id, 1)]
    assert "RefModule" in section["reach_in"][0]["reason"]
    assert {c["class"]: c["ours"] for c in section["classes"]}["reach_in"] == 1
    markdown = (out / "report.md").read_text()
    assert "VerilogEval v2 spec-to-rtl: the benchmark's own report" in markdown
    assert "passed only by the official rule (the answer reached outside its own design)" in markdown
    assert "VerilogEval v2 spec-to-rtl: the benchmark's own figures" in done.stdout
