"""Problem samplers: uniform (unchanged), the difficulty curriculum, adaptive skipping.

The sampler logic is pure Python and tested directly; one short real trainer run (a tiny
model on CVDP-Refine-v0, answers that are never code, so nothing is simulated) checks
the wiring: per-step metrics, the state file, skipping, and resuming the state.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from dataclasses import replace

import pytest

from rtl_trainer.config import TrainConfig
from rtl_trainer.loop import curriculum
from rtl_trainer.loop.curriculum import (
    ALL_BAD,
    ALL_GOOD,
    MIXED,
    AdaptiveSampler,
    DifficultySampler,
    GroupOutcome,
    UniformSampler,
    by_group_metrics,
    classify_group,
)

IDS = [f"p{i}" for i in range(8)]
LEVELS = {"p0": "easy", "p1": "easy", "p2": "easy", "p3": "medium", "p4": "medium", "p5": "medium", "p6": "hard", "p7": None}


def outcome(pid: str, passed: int, n: int = 4) -> GroupOutcome:
    """A group of ``n`` shaped rewards with ``passed`` passes (the others compiled)."""
    rewards = [1.4] * passed + [0.4] * (n - passed)
    return classify_group(pid, rewards, [r > 1 for r in rewards])


def test_groups_are_classed_as_tinker_cookbook_does():
    assert outcome("a", 0).kind == ALL_BAD and outcome("a", 4).kind == ALL_GOOD and outcome("a", 2).kind == MIXED
    assert classify_group("a", [0.1, 0.4], [False, False]).kind == MIXED  # rewards differ: there is an advantage
    assert classify_group("a", [], []).kind is None
    metrics = by_group_metrics([outcome("a", 0), outcome("b", 4), outcome("c", 1), outcome("d", 3), GroupOutcome("e", None, 0, 0)])
    assert metrics == {"by_group/frac_mixed": 0.5, "by_group/frac_all_good": 0.25, "by_group/frac_all_bad": 0.25}


def test_uniform_is_the_original_draw():
    sampler = UniformSampler(IDS, groups_per_step=3, seed=5)
    for step in range(20):
        assert sampler.choose(step) == random.Random(5 * 100_003 + step).sample(IDS, k=3)
        sampler.observe(step, [outcome(pid, 0) for pid in IDS])  # ignored
    assert UniformSampler(IDS[:2], groups_per_step=4, seed=0).choose(0) in (["p0", "p1"], ["p1", "p0"])


def test_difficulty_stages_advance_on_the_rolling_pass_rate():
    sampler = DifficultySampler(IDS, 3, 0, LEVELS, threshold=0.5, window=8)
    assert sampler.labels == ["easy", "medium", "hard", "unknown"]
    assert set(sampler.choose(0)) == {"p0", "p1", "p2"}
    sampler.observe(0, [outcome("p0", 1), outcome("p1", 1)])  # 2/8 passed: stays
    assert sampler.stage == 0 and sampler.pass_rate == 0.25
    sampler.observe(1, [outcome("p3", 4), outcome("p4", 4)])  # another stage's problems do not count
    assert sampler.stage == 0 and len(sampler.recent) == 8
    sampler.observe(2, [outcome("p0", 4), outcome("p2", 3)])  # window now 7/8 passed
    assert sampler.stage == 1 and sampler.advanced_at == [2] and sampler.recent == []
    assert set(sampler.choose(3)) == {"p3", "p4", "p5"}
    sampler.observe(3, [outcome("p3", 4), outcome("p4", 4)])
    assert sampler.stage == 2
    # The hard stage has one problem: the step is filled from the stages already passed.
    chosen = sampler.choose(4)
    assert len(chosen) == 3 and chosen[0] == "p6" and set(chosen[1:]) <= {"p0", "p1", "p2", "p3", "p4", "p5"}
    sampler.observe(4, [outcome("p6", 4), outcome("p6", 4)])
    sampler.observe(5, [outcome("p7", 4), outcome("p7", 4)])
    assert sampler.stage == 3 and sampler.metrics()["sampler/stage"] == 3.0
    sampler.observe(6, [outcome("p7", 4), outcome("p7", 4)])
    assert sampler.stage == 3  # the last stage stays


def test_difficulty_repeats_a_small_first_stage():
    sampler = DifficultySampler(["a", "b", "c"], 2, 0, {"a": "easy", "b": "hard", "c": "hard"})
    assert sampler.choose(0) == ["a", "a"]


def test_adaptive_skips_all_pass_and_all_fail_problems_and_brings_them_back():
    sampler = AdaptiveSampler(IDS, 4, 0, patience=2, skip_steps=3)
    sampler.observe(0, [outcome("p0", 4), outcome("p1", 0), outcome("p2", 2)])
    assert sampler.skipped(1) == []  # one constant group is not yet enough
    sampler.observe(1, [outcome("p0", 4), outcome("p1", 0), outcome("p2", 0)])
    assert sampler.skipped(2) == ["p0", "p1"]  # all-pass twice, all-fail twice; p2 was mixed once
    for step in range(2, 5):
        assert not {"p0", "p1"} & set(sampler.choose(step))
    assert sampler.skipped(5) == [] and sampler.skips == 2
    sampler.observe(5, [outcome("p0", 3)])  # back, and mixed now: it stays
    sampler.observe(5, [outcome("p1", 0)])  # back, still all-fail: skipped again at once
    assert sampler.skipped(6) == ["p1"]


def test_adaptive_oversamples_mixed_problems():
    sampler = AdaptiveSampler(IDS, 2, 0, patience=2, mixed_weight=4.0)
    sampler.observe(0, [outcome("p0", 2), outcome("p1", 1)])
    counts = Counter(pid for step in range(1, 2001) for pid in sampler.choose(step))
    others = sum(counts[p] for p in IDS[2:]) / 6
    assert counts["p0"] > 2 * others and counts["p1"] > 2 * others
    assert sampler.metrics()["sampler/known_mixed"] == 2.0


def test_adaptive_fills_a_step_with_the_problems_whose_skip_ends_first():
    sampler = AdaptiveSampler(["a", "b", "c"], 2, 0, patience=1, skip_steps=5)
    sampler.observe(0, [outcome("a", 0), outcome("b", 4)])
    sampler.observe(2, [outcome("c", 0)])
    chosen = sampler.choose(3)  # all three skipped; a and b come back first
    assert sorted(chosen) == ["a", "b"] and sampler.revived == 2


#: Five of eight problems sit out a step of six: three of them are drawn anyway.
_REVIVING = """
from rtl_trainer.loop.curriculum import AdaptiveSampler
ids = [f"problem_{c}" for c in "abcdefgh"]
sampler = AdaptiveSampler(ids, 6, 0)
sampler.skip_until.update({i: 3 for i in ids[:5]})
print(sampler.choose(1))
"""


def test_adaptive_revives_the_same_problems_in_every_process():
    """Which sitting-out problems fill a step is the seed's choice, not the order of a set
    of strings (which each process's hash seed decides)."""
    draws = {
        subprocess.run([sys.executable, "-c", _REVIVING], env={**os.environ, "PYTHONHASHSEED": str(h)},
                       capture_output=True, text=True, check=True).stdout
        for h in (1, 2, 3)
    }
    assert len(draws) == 1, draws


def test_state_round_trip_and_resume_file(tmp_path):
    sampler = AdaptiveSampler(IDS, 3, 1, patience=1, skip_steps=2)
    sampler.observe(0, [outcome("p0", 0), outcome("p1", 2)])
    curriculum.save_state(tmp_path, 0, sampler.state())
    sampler.observe(1, [outcome("p2", 4)])
    curriculum.save_state(tmp_path, 1, {"sampler": "adaptive", "stale": True})
    curriculum.save_state(tmp_path, 1, sampler.state())  # step 1 redone after a resume: the later line wins
    curriculum.save_state(tmp_path, 2, {"sampler": "adaptive", "after the checkpoint": True})
    restored = AdaptiveSampler(IDS, 3, 1, patience=1, skip_steps=2)
    restored.load_state(json.loads(json.dumps(curriculum.load_state(tmp_path, 2))))
    assert restored.state() == sampler.state()
    assert [restored.choose(s) for s in range(2, 6)] == [sampler.choose(s) for s in range(2, 6)]
    assert curriculum.load_state(tmp_path, 0) is None
    difficulty = DifficultySampler(IDS, 3, 0, LEVELS, window=4)
    difficulty.observe(0, [outcome("p0", 4)])
    copy = DifficultySampler(IDS, 3, 0, LEVELS, window=4)
    copy.load_state(difficulty.state())
    assert copy.state() == difficulty.state() and copy.stage == 1


def test_config_chooses_and_checks_the_sampler():
    config = TrainConfig(mode="rl", student="m", problem_sampler="adaptive", adaptive_patience=3, groups_per_step=2)
    config.validate()
    sampler = curriculum.make_problem_sampler(config, IDS, LEVELS)
    assert isinstance(sampler, AdaptiveSampler) and sampler.patience == 3 and sampler.k == 2
    assert isinstance(curriculum.make_problem_sampler(TrainConfig(student="m"), IDS, LEVELS), UniformSampler)
    with pytest.raises(ValueError, match="problem_sampler"):
        TrainConfig(mode="rl", student="m", problem_sampler="hardest-first").validate()
    with pytest.raises(ValueError, match="curriculum_threshold"):
        TrainConfig(mode="rl", student="m", curriculum_threshold=1.5).validate()


@pytest.mark.sandbox
def test_a_short_adaptive_run_on_the_refine_env(tmp_path_factory, toolchain):
    """Two steps, then a resume to four, on three problems: format failures only (the tiny
    untrained model writes no code), so every group is all-bad and gets skipped."""
    from rtl_trainer.backends import load_tokenizer
    from rtl_trainer.backends.local import LocalServiceClient
    from rtl_trainer.demo import build_models
    from rtl_trainer.loop.runlog import RunLog
    from rtl_trainer.loop.train import Trainer

    ids = ["cvdp_gym_gray_converter_0001", "cvdp_gym_priority_encoder_0001", "cvdp_gym_edge_detector_0001"]
    run = tmp_path_factory.mktemp("adaptive")
    config = TrainConfig(
        mode="rl", backend="local", renderer="qwen3_instruct", env="CVDP-Refine-v0", refine_max_attempts=2,
        ids=ids, full_finetune=True, max_prompt_tokens=48, max_tokens=8, groups_per_step=2, group_size=2,
        save_every=1, learning_rate=1e-4, run_dir=str(run), problem_sampler="adaptive", adaptive_patience=1,
        adaptive_skip_steps=1, grade_cache=False,
    )
    model_dir, _ = build_models(run / "models", replace(config, student="unset"))
    config = replace(config, student=str(model_dir))

    def service() -> LocalServiceClient:
        return LocalServiceClient(load_tokenizer(str(model_dir)), workdir=run, full_finetune=True)

    Trainer(replace(config, steps=2), service()).run()
    Trainer(replace(config, steps=4), service()).run(resume=True)
    rows = RunLog(run).metrics()
    assert [r["step"] for r in rows] == [0, 1, 2, 3]
    for row in rows:
        assert {"by_group/frac_mixed", "by_group/frac_all_good", "by_group/frac_all_bad", "sampler/skips"} <= set(row)
        assert row["by_group/frac_mixed"] + row["by_group/frac_all_good"] + row["by_group/frac_all_bad"] == pytest.approx(1.0)
    states = {}
    for line in (run / curriculum.STATE_FILE).read_text().splitlines():
        entry = json.loads(line)
        states[entry["step"]] = entry["state"]
    assert sorted(states) == [0, 1, 2, 3]
    for step in range(1, 4):
        rollouts = [json.loads(x) for x in (run / "rollouts" / f"step_{step:05d}.jsonl").read_text().splitlines()]
        chosen = {r["problem_id"] for r in rollouts}
        skipped = {pid for pid, until in states[step - 1]["skip_until"].items() if until > step}
        available = set(ids) - skipped
        if len(available) >= 2:
            assert chosen <= available, (step, chosen, skipped)
        else:  # too few left: the step takes every available problem, filled with skipped ones
            assert available <= chosen, (step, chosen, skipped)
        assert all(len(r["turns"]) == 2 for r in rollouts)  # no code twice: both attempts used
    assert states[3]["skips"] >= states[1]["skips"] >= 1  # the state continued across the resume


@pytest.mark.sandbox
def test_the_curriculum_demo_stage_wiring(tmp_path, toolchain):
    """``rtl-train demo --with-curriculum`` at toy sizes: both runs, both evaluations, the
    summary and plot (the figures themselves are the README's, from the full stage)."""
    from rtl_trainer.demo import DemoSettings, run_curriculum_demo

    settings = DemoSettings(
        ids=("cvdp_gym_edge_detector_0001", "cvdp_gym_gray_converter_0001"), student_sft_steps=1, max_tokens=8,
        group_size=2, eval_samples=1, curriculum_steps=1, curriculum_groups_per_step=1, refine_attempts=2,
        refine_eval_samples=1,
    )
    summary = run_curriculum_demo(tmp_path / "demo", settings)
    assert set(summary["runs"]) == {"uniform", "adaptive"}
    for run in summary["runs"].values():
        assert run["by_group/frac_mixed"] + run["by_group/frac_all_good"] + run["by_group/frac_all_bad"] == pytest.approx(1.0)
    refinement = summary["refinement"]
    assert len(refinement["pass_after_attempt"]) == 2  # untrained: no code, so both answers were used
    assert refinement["pass@1_after_1"] <= refinement["pass@1_after_2"]
    assert json.loads((tmp_path / "demo" / "curriculum.json").read_text())["runs"] == summary["runs"]
    assert (tmp_path / "demo" / "curriculum.png").stat().st_size > 1000
    for sampler in ("uniform", "adaptive"):
        config = json.loads((tmp_path / "demo" / f"rl-{sampler}" / "config.json").read_text())
        assert config["problem_sampler"] == sampler and config["groups_per_step"] == 1
