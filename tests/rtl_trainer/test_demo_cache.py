"""The demo's stages reuse their outputs only when what made them is the same: a changed
setting or model evaluates or trains again (and overwrites), the same ones reuse the files."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from rich.console import Console

from rtl_trainer.demo import DemoSettings, build_models, eval_stage, sft_stage
from rtl_trainer.demo.settings import STUDENT_SOURCE
from rtl_trainer.demo.stages import open_demo

pytestmark = pytest.mark.sandbox

#: test_demo_seeds's toy sizes: two problems, one SFT step, eight-token answers, one sample.
SETTINGS = DemoSettings(
    ids=("cvdp_gym_edge_detector_0001", "cvdp_gym_gray_converter_0001"), teacher_sft_steps=1, student_sft_steps=1,
    distill_steps=2, rl_steps=2, groups_per_step=2, group_size=2, max_tokens=8, eval_samples=1,
)


def test_a_changed_setting_or_model_evaluates_again_and_the_same_ones_reuse_the_file(tmp_path, toolchain):
    s, console, out, base = open_demo(tmp_path / "demo", SETTINGS, Console(quiet=True))
    _, student_dir = build_models(out, base)

    def weak(settings: DemoSettings) -> str:
        return sft_stage("student-sft", student_dir, settings.student_sft_steps, out, base, settings, console,
                         source=STUDENT_SOURCE)

    def evaluate(state: str, settings: DemoSettings) -> tuple[dict, dict, int]:
        report = eval_stage("student_start", state, student_dir, out, base, settings)
        path = out / "evals" / "student_start.json"
        return report, json.loads(path.read_text()), path.stat().st_mtime_ns

    state = weak(s)
    report, stored, stamp = evaluate(state, s)
    assert report["samples"] == stored["samples"] == 2 and "fingerprint" not in report

    # The same settings and model: the file is reused, untouched.
    again, stored_again, stamp_again = evaluate(state, s)
    assert (again, stored_again, stamp_again) == (report, stored, stamp)

    # More samples per problem: evaluated again, and the file says so.
    more = replace(s, eval_samples=3)
    report, changed, stamp = evaluate(state, more)
    assert report["samples"] == changed["samples"] == 6
    assert (stored["inputs"]["samples"], changed["inputs"]["samples"]) == (1, 3)
    assert stored["inputs"]["temperature"] == s.temperature and changed["fingerprint"] != stored["fingerprint"]
    assert evaluate(state, more)[2] == stamp  # and reused from then on

    # Another temperature: again.
    hotter = replace(more, temperature=1.0)
    _, hot, hot_stamp = evaluate(state, hotter)
    assert hot_stamp != stamp and hot["inputs"]["temperature"] == 1.0 and hot["fingerprint"] != changed["fingerprint"]

    # A trained stage reruns when its settings change (the same name, the same steps): the
    # weak student is trained again at another learning rate, overwriting its checkpoint,
    # and the evaluation of that state (the same path) follows the new weights.
    checkpoint = out / "student-sft" / "checkpoints.jsonl"
    trained = checkpoint.stat().st_mtime_ns
    assert weak(hotter) == state and checkpoint.stat().st_mtime_ns == trained  # same settings: reused
    retrained = replace(hotter, sft_lr=1e-3)
    assert weak(retrained) == state
    assert checkpoint.stat().st_mtime_ns != trained
    assert json.loads((out / "student-sft" / "config.json").read_text())["learning_rate"] == 1e-3
    assert len((out / "student-sft" / "metrics.jsonl").read_text().splitlines()) == 1  # a fresh run, not appended
    _, after, after_stamp = evaluate(state, retrained)
    assert after_stamp != hot_stamp and after["inputs"]["models"][state] != hot["inputs"]["models"][state]
