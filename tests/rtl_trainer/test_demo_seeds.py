"""``rtl-train demo --seeds N`` at toy sizes: which runs each seed gets, where they go, and
that the table's statistics and compute are the runs' own (the figures themselves are the
lead's multi-seed run of the full demo, in docs/miniature.md)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from rich.console import Console

from rtl_trainer.demo import DemoSettings, run_demo, run_seeds, run_two_teachers_demo
from rtl_trainer.loop.runlog import RunLog

pytestmark = pytest.mark.sandbox

#: Two problems, one SFT step per model, two training steps, eight-token answers (format
#: failures only: nothing simulates), one evaluation sample per problem.
SETTINGS = DemoSettings(
    ids=("cvdp_gym_edge_detector_0001", "cvdp_gym_gray_converter_0001"), teacher_sft_steps=1, student_sft_steps=1,
    distill_steps=2, rl_steps=2, groups_per_step=2, group_size=2, max_tokens=8, eval_samples=1, seeds_kl_coefs=(3.0,),
    seeds_kl_only=True,
)
METHODS = ("start", "distill", "rl", "sft", "distill-kl3", "distill-kl-only")


def test_three_methods_on_two_seeds_from_the_demos_weak_student(tmp_path, toolchain):
    out = tmp_path / "demo"
    demo = run_demo(out, SETTINGS)
    demo_files = [out / "distill" / "metrics.jsonl", out / "rl" / "metrics.jsonl", out / "student-sft" / "metrics.jsonl",
                  out / "evals" / "student_distilled.json"]
    stamps = [p.stat().st_mtime_ns for p in demo_files]
    console = Console(record=True, width=250)
    summary = run_seeds(out, 2, SETTINGS, console)
    assert [p.stat().st_mtime_ns for p in demo_files] == stamps  # the demo's stages were reused, not redone

    runs = {(r["seed"], r["method"]): r for r in summary["runs"]}
    assert sorted(runs) == sorted((seed, method) for seed in (0, 1) for method in METHODS)
    # Seed 0 of distillation and RL is the demo's own runs and evaluations.
    assert runs[0, "distill"]["run_dir"] == str(out / "distill") and runs[0, "rl"]["run_dir"] == str(out / "rl")
    assert runs[0, "distill"]["pass_rate"] == demo["pass_rate"]["student_distilled"]
    assert runs[0, "start"]["eval"] == str(out / "evals" / "student_start.json")
    weak = RunLog(out / "student-sft").last_checkpoint()["state_path"]
    for (seed, method), run in runs.items():
        if method == "start":
            assert run["run_dir"] is None
            continue
        if (seed, method) not in {(0, "distill"), (0, "rl")}:
            assert run["run_dir"] == str(out / "seeds" / f"seed{seed}" / method)
            assert run["eval"] == str(out / "evals" / f"seed{seed}" / f"student_{method}.json")
        config = json.loads((Path(run["run_dir"]) / "config.json").read_text())
        assert (config["seed"], config["steps"], config["student"]) == (seed, 2, weak), (seed, method)
        distill = method.startswith("distill")
        assert config["mode"] == ("distill" if distill else method)
        assert config["kl_penalty_coef"] == {"distill": 1.0, "distill-kl3": 3.0, "distill-kl-only": 1.0}.get(method, 0.0)
        assert config["reward_coef"] == (0.0 if method == "distill-kl-only" else 1.0)
        assert config["teacher"] == (RunLog(out / "teacher-sft").last_checkpoint()["state_path"]
                                     if distill else None)
    sft = json.loads((out / "seeds" / "seed1" / "sft" / "config.json").read_text())
    assert sft["sft_source"] == "reference" and sft["mode"] == "sft"
    assert {k: sft[k] for k in summary["sft_optimizer"]} == summary["sft_optimizer"] == {
        "learning_rate": SETTINGS.rl_lr, "lr_warmup_steps": SETTINGS.rl_warmup_steps, "lr_schedule": "constant"}
    # The seed changed what the training stages sampled.
    first = [(out / "distill" / "rollouts" / "step_00000.jsonl"), out / "seeds" / "seed1" / "distill" / "rollouts" /
             "step_00000.jsonl"]
    assert first[0].read_text() != first[1].read_text()

    # The statistics are those of the evaluation files; the table shows them.
    text = console.export_text()
    for method in METHODS:
        rates = [json.loads(Path(runs[seed, method]["eval"]).read_text())["pass_rate"] for seed in (0, 1)]
        stat = summary["stats"][method]["pass_rate"]
        assert stat["mean"] == pytest.approx(statistics.mean(rates))
        assert stat["std"] == pytest.approx(statistics.stdev(rates))
        assert (stat["min"], stat["max"], stat["n"]) == (min(rates), max(rates), 2)
        assert f"{stat['mean']:.2f} ± {stat['std']:.2f} ({stat['min']:.2f}–{stat['max']:.2f})" in text

    # Compute comes from each run's metrics.jsonl.
    for (_, method), run in runs.items():
        if method == "start":
            continue
        rows = RunLog(run["run_dir"]).metrics()
        if method == "sft":
            assert run["tokens_trained"] == sum(r["tokens/trained"] for r in rows) > 0
            assert run["tokens_sampled"] == run["tokens_teacher"] == 0
        else:
            assert len(rows) == 2
            for key, name in (("sampled", "tokens_sampled"), ("teacher", "tokens_teacher"), ("trained", "tokens_trained")):
                assert run[name] == rows[-1][f"total/tokens/{key}"]
            assert run["tokens_sampled"] > 0 and (run["tokens_teacher"] > 0) == method.startswith("distill")
    assert summary["stats"]["distill"]["tokens_sampled"] == pytest.approx(
        statistics.mean(runs[seed, "distill"]["tokens_sampled"] for seed in (0, 1)))
    assert summary["curves"]["distill"]["step"] == [0, 1] and set(summary["curves"]) == {"distill", "rl", "distill-kl3", "distill-kl-only"}
    assert json.loads((out / "seeds.json").read_text()) == json.loads(json.dumps(summary))
    assert (out / "seeds.png").stat().st_size > 10_000

    # Every stage resumes from its outputs: a second call redoes nothing. A stage stopped
    # before its only checkpoint started again from step 0, after the rows it had logged:
    # each step counts once.
    for method in ("sft", "distill"):
        metrics = out / "seeds" / "seed1" / method / "metrics.jsonl"
        lines = metrics.read_text().splitlines(keepends=True)
        metrics.write_text(lines[0] + "".join(lines))
    outputs = sorted(p for p in out.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json") and p.name != "seeds.json")
    stamps = [p.stat().st_mtime_ns for p in outputs]
    again = run_seeds(out, 2, SETTINGS, Console(quiet=True))
    assert again["runs"] == summary["runs"]
    assert [p.stat().st_mtime_ns for p in outputs] == stamps


def test_two_teachers_each_trained_on_half_teach_their_own_half(tmp_path, toolchain):
    out = tmp_path / "pair"
    summary = run_two_teachers_demo(out, SETTINGS, Console(quiet=True))
    first, second = SETTINGS.ids
    assert summary["sets"] == {"a": [first], "b": [second]}
    for name, ids in summary["sets"].items():  # each teacher SFT'd on its own half only
        assert json.loads((out / f"teacher-{name}-sft" / "config.json").read_text())["ids"] == ids
    config = json.loads((out / "distill-two-teachers" / "config.json").read_text())
    states = {n: RunLog(out / f"teacher-{n}-sft").last_checkpoint()["state_path"] for n in ("a", "b")}
    assert config["teacher"] is None
    assert [(r["name"], r["model"], r["problems"]) for r in config["teachers"]] == [
        ("a", states["a"], [first]), ("b", states["b"], [second])]
    rows = RunLog(out / "distill-two-teachers").metrics()
    assert len(rows) == SETTINGS.distill_steps and all({"teacher_kl/a", "teacher_kl/b"} <= set(r) for r in rows)
    for label, rates in summary["pass_rate_by_set"].items():
        report = json.loads((out / "evals" / f"{label if label != 'student_distilled' else 'student_distilled_two_teachers'}.json").read_text())
        assert rates == {"a": report["per_problem"][first], "b": report["per_problem"][second]}
    assert summary["teacher_kl"]["a"]["first_steps"] == rows[0]["teacher_kl/a"]
    assert json.loads((out / "two_teachers.json").read_text()) == json.loads(json.dumps(summary))
