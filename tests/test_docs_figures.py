"""The docs show the figures the main job prints: the README's and docs/miniature.md's
main-job blocks are what scripts/docs_figures.py renders from docs/figures/main_job.json (a
run's ``summary.json``, kept), and the check fails the moment one of them drifts.
``tests/rtl_trainer/test_demo.py`` holds the kept figures against a fresh run."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "docs_figures.py"


def load_script():
    spec = importlib.util.spec_from_file_location("docs_figures", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pages_show_the_kept_figures(capsys):
    assert load_script().main([]) == 0, capsys.readouterr().out


def test_a_changed_figure_fails_the_check_until_the_pages_are_written(tmp_path, capsys):
    script = load_script()
    pages = []
    for page in script.PAGES:
        shutil.copy(page, tmp_path / page.name)
        pages.append(tmp_path / page.name)
    figures = json.loads(script.FIGURES.read_text())
    figures["pass_rate"]["student_distilled"] = 0.54
    script.FIGURES, script.PAGES = tmp_path / "main_job.json", tuple(pages)
    script.FIGURES.write_text(json.dumps(figures))
    assert script.main([]) == 1
    assert "README.md: the main job's figures differ" in capsys.readouterr().out
    assert script.main(["--write"]) == 0 and script.main([]) == 0
    assert "| student after distillation | 0.54 (+0.48) |" in pages[0].read_text()


def test_a_summary_becomes_the_kept_figures(tmp_path):
    """``--from``: the figures a run's summary.json holds, at full precision, then the blocks."""
    script = load_script()
    for page in script.PAGES:
        shutil.copy(page, tmp_path / page.name)
    script.FIGURES, script.PAGES = tmp_path / "main_job.json", tuple(tmp_path / p.name for p in script.PAGES)
    evals = {name: {"pass_rate": rate, "mean_reward": 0.5} for name, rate in
             [("teacher", 0.98), ("student_start", 0.0625), ("student_distilled", 0.5625), ("student_rl", 0.58)]}
    summary = {"evals": evals, "settings": {"distill_steps": 24, "seed": 0},
               "learning": {"teacher_kl_first_steps": 0.26591545274289646, "teacher_kl_last_steps": 0.13580560578325243}}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    assert script.main(["--from", str(tmp_path / "summary.json")]) == 0
    kept = json.loads(script.FIGURES.read_text())
    assert kept["teacher_kl_first_steps"] == 0.26591545274289646 and kept["pass_rate"]["student_start"] == 0.0625
    readme = script.PAGES[0].read_text()
    assert "falls from 0.266 to 0.136 nats per token" in readme
    assert "| student after distillation | 0.56 (+0.50) | 0.50 |" in readme


def test_a_run_is_checked_against_the_kept_figures(tmp_path, capsys):
    """``--against``: the main job's own summary agrees; one with another figure does not."""
    script = load_script()
    kept = json.loads(script.FIGURES.read_text())
    evals = {name: {"pass_rate": rate, "mean_reward": kept["mean_reward"][name]} for name, rate in kept["pass_rate"].items()}
    summary = {"evals": evals, "settings": {"distill_steps": 24, "seed": 0}, "learning": {
        "teacher_kl_first_steps": kept["teacher_kl_first_steps"], "teacher_kl_last_steps": kept["teacher_kl_last_steps"]}}
    (tmp_path / "same.json").write_text(json.dumps(summary))
    assert script.main(["--against", str(tmp_path / "same.json")]) == 0
    summary["evals"]["student_distilled"]["pass_rate"] = 0.54
    (tmp_path / "other.json").write_text(json.dumps(summary))
    assert script.main(["--against", str(tmp_path / "other.json")]) == 1
    assert "the docs show other figures than this run (pass_rate)" in capsys.readouterr().out
