"""``cvdp-gym compare``: wins and losses, the paired interval and exact p-value (checked against
hand calculations), intersections of different runs, and bad run folders as one line.

Synthetic runs are written with eval's own row and report builders (``result_row``,
``build_report``), and one test compares real ``cvdp-gym eval`` runs, so these tests
break when eval's output format changes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from math import comb, sqrt
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cvdp_gym.cli import app
from cvdp_gym.cli.check import _interval as check_interval
from cvdp_gym.data import load_dataset
from cvdp_gym.eval.compare import compare_runs, read_run
from cvdp_gym.eval.intervals import wilson
from cvdp_gym.eval.report import build_report
from cvdp_gym.eval.run import RESULTS, failed_grade, result_row
from cvdp_gym.grading import make_reward

GRAY = next(p for p in load_dataset("bundled").problems if p.id == "cvdp_gym_gray_converter_0001")
REWARD = make_reward("shaped")


def write_run(out: Path, outcomes: dict[str, list[bool]], meta: dict | None = None, category=lambda i: "cid002") -> Path:
    """A run folder as eval writes it: one results row per sample, report.json from the rows."""
    rows = []
    for number, (pid, passes) in enumerate(outcomes.items()):
        problem = replace(GRAY, id=pid, categories=(category(number), *GRAY.categories[1:]))
        for sample, passed in enumerate(passes):
            row = result_row(problem, sample, "answer", failed_grade(problem, "format_error", "no code"), REWARD)
            row.update(passed=bool(passed), verdict="passed" if passed else "format_error")
            rows.append(row)
    out.mkdir(parents=True)
    (out / RESULTS).write_text("".join(json.dumps(r) + "\n" for r in rows))
    meta = {"source": "responses answers.jsonl", "dataset": "bundled", "reward": "shaped", "graded": len(rows), "wall_s": 1.0, "notes": [], **(meta or {})}
    (out / "report.json").write_text(json.dumps(build_report(rows, [1], meta)))
    return out


def ids(first: int, last: int) -> list[str]:
    return [f"p{i:02d}" for i in range(first, last)]


def cli(*args: str):
    return CliRunner().invoke(app, ["compare", *args], env={"COLUMNS": "250"})


# ---------------------------------------------------------------- the statistics, by hand


def test_forty_problems_twelve_wins_three_losses_match_a_hand_calculation(tmp_path):
    # 40 problems, one sample each: B passes 12 that A fails, fails 3 that A passes;
    # 10 both pass, 15 both fail. Even problems are cid002, odd ones cid003.
    a_pass = [False] * 12 + [True] * 3 + [True] * 10 + [False] * 15
    b_pass = [True] * 12 + [False] * 3 + [True] * 10 + [False] * 15
    names = ids(0, 40)
    cat = lambda i: "cid002" if i % 2 == 0 else "cid003"  # noqa: E731
    a = write_run(tmp_path / "a", {p: [x] for p, x in zip(names, a_pass, strict=True)}, category=cat)
    b = write_run(tmp_path / "b", {p: [x] for p, x in zip(names, b_pass, strict=True)}, category=cat)
    report = compare_runs([read_run(a), read_run(b)])
    overall = report["comparisons"][0]["overall"]

    assert (overall["wins"], overall["losses"], overall["ties"], overall["problems"]) == (12, 3, 25, 40)
    # McNemar exact: 2 · P[X <= 3], X ~ Binomial(15, 1/2).
    assert overall["p_value"] == pytest.approx(2 * sum(comb(15, i) for i in range(4)) / 2**15)
    assert overall["p_value"] == pytest.approx(0.03515625)
    assert overall["baseline_pass@1"] == pytest.approx(13 / 40) and overall["pass@1"] == pytest.approx(22 / 40)
    assert overall["difference"] == pytest.approx(9 / 40)
    # The paired bootstrap, written out in numpy: same seed (0), 10,000 resamples of the 40 problems.
    d = np.array(b_pass, dtype=float) - np.array(a_pass, dtype=float)
    means = d[np.random.default_rng(0).integers(0, 40, size=(10_000, 40))].mean(axis=1)
    assert overall["difference_ci95"] == pytest.approx(list(np.quantile(means, [0.025, 0.975])))
    assert overall["difference_ci95"][0] > 0 > -overall["difference_ci95"][1]
    # Wilson over problems: 13 of 40, in closed form.
    z = 1.959963984540054
    p, n = 13 / 40, 40
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert overall["baseline_pass@1_ci95"] == pytest.approx([centre - half, centre + half])

    # By category: wins are problems 0..11 (6 even, 6 odd), losses 12..14 (12, 14 even; 13 odd).
    cats = report["comparisons"][0]["by_category"]
    assert [(c, g["wins"], g["losses"], g["ties"]) for c, g in cats.items()] == [("cid002", 6, 2, 12), ("cid003", 6, 1, 13)]
    assert cats["cid002"]["p_value"] == pytest.approx(2 * sum(comb(8, i) for i in range(3)) / 2**8)
    # Flipped problems, both ways.
    comparison = report["comparisons"][0]
    assert [m["id"] for m in comparison["improved"]] == names[:12]
    assert [(m["id"], m["baseline"], m["run"]) for m in comparison["regressed"]] == [(p, 1.0, 0.0) for p in names[12:15]]
    assert comparison["differs"] == "same problems and settings"


def test_wilson_and_the_check_summary_interval():
    assert wilson(0.0, 2)[1] == pytest.approx(1.959963984540054**2 / (2 + 1.959963984540054**2))
    assert check_interval(0, 0) == "" and check_interval(6, 6) == " (95% CI 61.0–100.0%)"


def test_rates_with_several_samples(tmp_path):
    # p00: 2/4 vs 3/4 (win), p01: 1/2 vs 2/4 (tie: the same rate), p02: 1/1 vs 0/3 (loss).
    a = write_run(tmp_path / "a", {"p00": [1, 1, 0, 0], "p01": [1, 0], "p02": [1]})
    b = write_run(tmp_path / "b", {"p00": [1, 1, 1, 0], "p01": [1, 0, 0, 1], "p02": [0, 0, 0]}, {"samples_per_problem": 4})
    comparison = compare_runs([read_run(a), read_run(b)])["comparisons"][0]
    overall = comparison["overall"]
    assert (overall["wins"], overall["losses"], overall["ties"]) == (1, 1, 1) and overall["p_value"] == 1.0
    assert overall["difference"] == pytest.approx(((3 / 4 - 2 / 4) + 0 + (0 - 1)) / 3)
    assert comparison["settings_differ"] == {"graded samples per problem": ["1-4", "3-4"], "samples_per_problem": [None, 4]}


# ---------------------------------------------------------------- different runs, the CLI


def test_intersection_what_differs_and_outputs(tmp_path):
    base = write_run(tmp_path / "base", {p: [i % 2 == 0] for i, p in enumerate(ids(0, 10))}, {"source": "m1 at http://x/v1", "temperature": 0.2})
    other = write_run(tmp_path / "other", {p: [True] for p in ids(5, 14)}, {"source": "m2 at http://x/v1", "temperature": 0.8})
    third = write_run(tmp_path / "third", {p: [False] for p in ids(0, 10)}, {"source": "m1 at http://x/v1", "temperature": 0.2})
    done = cli(str(base), str(other), str(third), "--out", str(tmp_path / "cmp"))
    assert done.exit_code == 0, done.output
    report = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    first, second = report["comparisons"]
    assert first["common_problems"] == 5 and first["only_in_baseline"] == ids(0, 5) and first["only_in_run"] == ids(10, 14)
    assert first["differs"] == (
        "differs: problems only in the baseline: 5 (p00, p01, p02, ...); only in this run: 4 (p10, p11, p12, ...) | "
        "settings: source 'm1 at http://x/v1' vs 'm2 at http://x/v1'; temperature 0.2 vs 0.8"
    )
    assert (first["overall"]["wins"], first["overall"]["losses"]) == (3, 0)  # p05, p07, p09 fail in the baseline
    assert second["differs"] == "same problems and settings" and (second["overall"]["wins"], second["overall"]["losses"]) == (0, 5)
    assert first["differs"] in done.output and "p (McNemar exact)" in done.output and "worse than the baseline" in done.output
    markdown = (tmp_path / "cmp" / "compare.md").read_text()
    assert markdown.count("| overall |") == 2 and "p05 (0.0% → 100.0%)" in markdown


def one_error_line(done, *expected: str) -> None:
    """Exit 2, no traceback, and one ``error:`` line holding each of ``expected``."""
    assert done.exit_code == 2 and isinstance(done.exception, SystemExit), done.output
    errors = [line for line in done.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in done.output, done.output
    assert all(text in errors[0] for text in expected), errors[0]


def test_bad_run_folders_are_one_line(tmp_path):
    good = write_run(tmp_path / "good", {p: [True] for p in ids(0, 4)})
    one_error_line(cli(str(good), str(tmp_path / "nowhere")), "nowhere: no such run folder")
    (tmp_path / "empty").mkdir()
    one_error_line(cli(str(good), str(tmp_path / "empty")), f"{tmp_path / 'empty' / RESULTS}: missing")
    one_error_line(cli(str(good)), "at least two run folders")

    # Another version's rows: a field renamed.
    old = write_run(tmp_path / "old", {p: [True] for p in ids(0, 4)})
    lines = (old / RESULTS).read_text().splitlines()
    lines[1] = json.dumps({**{k: v for k, v in json.loads(lines[1]).items() if k != "passed"}, "ok": True})
    (old / RESULTS).write_text("\n".join(lines) + "\n")
    one_error_line(cli(str(good), str(old)), f"{old / RESULTS}:2: not a results row of this cvdp-gym version (missing or wrong: passed)")
    # A report.json that is not one.
    kept = (good / "report.json").read_text()
    (good / "report.json").write_text("[1, 2")
    one_error_line(cli(str(good), str(good)), f"{good / 'report.json'}: cannot read")
    (good / "report.json").write_text("{}")
    one_error_line(cli(str(good), str(good)), f"{good / 'report.json'}: not a report of this cvdp-gym version")
    (good / "report.json").write_text(kept)

    # A torn last line (an interrupted run) is skipped with a warning; a malformed line before it is an error.
    torn = write_run(tmp_path / "torn", {p: [True] for p in ids(0, 4)})
    text = (torn / RESULTS).read_text()
    (torn / RESULTS).write_text(text[: len(text) - 30])
    done = cli(str(good), str(torn))
    assert done.exit_code == 0 and f"warning: {torn / RESULTS}:4: torn last line skipped" in done.output, done.output
    assert read_run(torn).counts == {p: [1, 1] for p in ids(0, 3)}
    (torn / RESULTS).write_text("{oops\n" + text)
    one_error_line(cli(str(good), str(torn)), f"{torn / RESULTS}:1: malformed JSON")


# ---------------------------------------------------------------- real eval runs


def test_eval_prints_intervals_and_compare_reads_real_runs(tmp_path):
    """Two real ``cvdp-gym eval`` runs (answers without code: graded without a simulator)."""
    problems = ["cvdp_gym_gray_converter_0001", "cvdp_gym_priority_encoder_0001", "cvdp_gym_uart_tx_0001"]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": p, "response": "no code"}) + "\n" for p in problems))

    def run_eval(out: str, chosen: list[str]) -> subprocess.CompletedProcess[str]:
        selected = [w for p in chosen for w in ("--id", p)]
        return subprocess.run(
            [sys.executable, "-m", "cvdp_gym.cli", "eval", "bundled", "--responses", str(answers), *selected, "--out", str(tmp_path / out)],
            capture_output=True, text=True, timeout=120,
        )

    first = run_eval("a", problems[:2])
    if first.returncode != 0 and "bubblewrap" in first.stdout:
        pytest.skip(first.stdout)
    assert first.returncode == 0 and "pass@1 95% CI" in first.stdout and "0.0–65.8%" in first.stdout, first.stdout + first.stderr
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["overall"]["pass@1_ci95"] == pytest.approx(list(wilson(0.0, 2)))
    assert report["by_category"]["cid003"]["pass@1_ci95"] == pytest.approx(list(wilson(0.0, 1)))
    assert run_eval("b", problems).returncode == 0
    shutil.copytree(tmp_path / "b", tmp_path / "c")
    done = cli(str(tmp_path / "a"), str(tmp_path / "b"))
    assert done.exit_code == 0, done.output
    assert "differs: problems only in the baseline: 0; only in this run: 1 (cvdp_gym_uart_tx_0001)" in done.output
    assert "0 │      0 │    2" in done.output  # overall: no wins, no losses, two ties
