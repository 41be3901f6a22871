"""The offline mission in miniature: does on-policy distillation really teach the student?

Slow (about ten minutes on two cores): it builds and SFTs the tiny teacher and the weak
student, distils, runs RL beside it, and grades everything with the real simulator.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rtl_trainer.demo import DemoSettings, run_demo

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]


#: The demo's own settings, except a shorter RL comparison stage (it is not what this test
#: asserts, and the trainer tests cover RL): about 5 of the demo's 17 minutes saved in CI.
SETTINGS = DemoSettings(rl_steps=6)


@pytest.mark.timeout(2400)
def test_distillation_raises_the_students_pass_rate_and_lowers_teacher_kl(tmp_path, toolchain):
    summary = run_demo(tmp_path / "demo", SETTINGS)
    learning = summary["learning"]
    assert summary["pass_rate"]["teacher"] >= 0.8, summary["pass_rate"]
    assert learning["pass_rate_start"] <= 0.35, learning
    assert learning["pass_rate_rise"] >= 0.30, learning
    assert learning["teacher_kl_last_steps"] < learning["teacher_kl_first_steps"], learning
    assert "pass_rate_rl" in learning
    assert Path(summary["plot"]).stat().st_size > 10_000
    # Every stage resumes from its outputs: a second call redoes nothing.
    outputs = sorted(p for p in (tmp_path / "demo").rglob("*.json*") if p.name != "summary.json")
    stamps = [p.stat().st_mtime_ns for p in outputs]
    again = run_demo(tmp_path / "demo", SETTINGS)
    assert again["pass_rate"] == summary["pass_rate"]
    assert [p.stat().st_mtime_ns for p in outputs] == stamps
