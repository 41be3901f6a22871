"""The training loop end to end on tiny real models, real environments and real grading."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from rtl_trainer.backends import load_tokenizer
from rtl_trainer.backends.local import LocalServiceClient
from rtl_trainer.config import TrainConfig
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.loop.sft import reference_answer, run_sft, strip_comments
from rtl_trainer.loop.train import Trainer

pytestmark = pytest.mark.sandbox

IDS = ["cvdp_gym_gray_converter_0001", "cvdp_gym_priority_encoder_0001"]
REQUIRED_METRICS = {
    "env/all/reward/total", "env/all/format_rate", "env/all/syntax_rate", "env/all/pass_rate",
    "entropy", "tokens/sampled", "time/sample", "time/grade", "time/train", "time/grade_wait_share",
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, toolchain) -> Path:
    """A tiny model folder (offline Qwen tokenizer, compact vocabulary) built from a config."""
    from rtl_trainer.demo import build_models

    out = tmp_path_factory.mktemp("tiny")
    teacher_dir, _ = build_models(out, base_config(out))
    return teacher_dir


def base_config(run_dir: Path, **changes) -> TrainConfig:
    config = TrainConfig(
        backend="local", renderer="qwen3_instruct", teacher_renderer="qwen3_instruct",
        ids=IDS, full_finetune=True, max_prompt_tokens=48, max_tokens=24, groups_per_step=2,
        group_size=2, save_every=1, learning_rate=1e-3, run_dir=str(run_dir), student="unset",
    )
    return replace(config, **changes)


def service(model_dir: Path, run_dir: Path) -> LocalServiceClient:
    return LocalServiceClient(load_tokenizer(str(model_dir)), workdir=run_dir, full_finetune=True)


def test_config_files_and_validation(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"mode": "rl", "student": "m", "steps": 3}))
    config = TrainConfig.from_file(path)
    assert (config.mode, config.steps) == ("rl", 3)
    assert config.merged({"steps": 7, "seed": None}).steps == 7
    (tmp_path / "bad.json").write_text(json.dumps({"stepz": 1}))
    with pytest.raises(ValueError, match="unknown config keys: stepz"):
        TrainConfig.from_file(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="teacher"):
        TrainConfig(mode="distill", student="m").validate()
    with pytest.raises(ValueError, match="eval_samples"):
        TrainConfig(mode="rl", student="m", eval_every=2, eval_samples=0).validate()
    assert TrainConfig(learning_rate=1.0, steps=11, lr_schedule="linear").lr_at(10) == pytest.approx(0.1)


def test_learning_rate_schedule_with_warmup():
    config = TrainConfig(student="m", steps=11, learning_rate=1e-3, lr_schedule="linear", lr_warmup_steps=4)
    assert [round(config.lr_at(s) / 1e-3, 4) for s in (0, 1, 3, 4, 10)] == [0.25, 0.455, 0.73, 0.64, 0.1]
    flat = TrainConfig(student="m", steps=5, learning_rate=2e-4)
    assert [flat.lr_at(s) for s in range(5)] == [2e-4] * 5


def test_runlog_resume_bookkeeping(tmp_path):
    log = RunLog(tmp_path)
    for step in range(4):
        log.log_metrics(step, {"x": step})
    log.log_checkpoint(1, state_path="/s1")
    with open(log.metrics_path, "a") as handle:
        handle.write('{"step": 4, "x"')  # torn by an interruption
    assert [r["step"] for r in log.metrics()] == [0, 1, 2, 3]
    assert log.resume_point()["step"] == 1
    assert [r["step"] for r in log.metrics()] == [0, 1]
    # Cut before its first checkpoint: the stage starts over, so none of its rows are kept.
    early = RunLog(tmp_path / "early")
    early.log_metrics(0, {"x": 0})
    assert early.resume_point() is None and early.metrics() == []


def test_strip_comments_keeps_code():
    text = 'module m; // c\n  /* block\n  */ assign a = "//x"; // tail\n\nendmodule\n'
    assert strip_comments(text) == 'module m;\n   assign a = "//x";\nendmodule\n'


def test_sft_lowers_the_loss(tiny, tmp_path):
    config = base_config(tmp_path / "sft", mode="sft", student=str(tiny), steps=6, learning_rate=3e-3, batch_size=2)
    _, log = run_sft(config, service(tiny, tmp_path / "sft"))
    losses = [row["train/loss_per_token"] for row in log.metrics()]
    assert len(losses) == 6 and losses[-1] < losses[0]
    assert log.last_checkpoint()["step"] == 5
    assert Path(log.last_checkpoint()["state_path"]).is_dir()
    # From a saved state it continues from those weights (with a fresh optimiser, as RL does).
    more = tmp_path / "sft-more"
    _, again = run_sft(replace(config, student=log.last_checkpoint()["state_path"], steps=1, run_dir=str(more)),
                       service(tiny, more))
    assert again.metrics()[0]["train/loss_per_token"] < (losses[0] + losses[-1]) / 2


def test_rl_steps_write_metrics_rollouts_and_checkpoints(tiny, tmp_path):
    run = tmp_path / "rl"
    # Simulations in worker processes, with a per-answer grading deadline.
    config = base_config(run, mode="rl", student=str(tiny), steps=2, grade_executor="processes:2", grade_deadline_s=120)
    Trainer(config, service(tiny, run)).run()
    rows = RunLog(run).metrics()
    assert [r["step"] for r in rows] == [0, 1]
    for row in rows:
        assert set(row) >= REQUIRED_METRICS | {"grade/late", "grade/late_frac"}, REQUIRED_METRICS - set(row)
        assert row["grade/late"] == 0
        assert row["rollouts"] == 4 and row["tokens/sampled"] > 0
        assert 0.0 <= row["time/grade_wait_share"] <= 1.0
    rollouts = [json.loads(line) for line in (run / "rollouts" / "step_00000.jsonl").read_text().splitlines()]
    assert {r["problem_id"] for r in rollouts} == set(IDS) and all("reward" in r for r in rollouts)
    assert json.loads((run / "config.json").read_text())["mode"] == "rl"
    assert [c["step"] for c in map(json.loads, (run / "checkpoints.jsonl").read_text().splitlines())] == [0, 1]


TRAINING_SET = Path(__file__).resolve().parents[2] / "fixtures" / "training" / "generic.jsonl"


def test_rl_on_a_reference_only_training_set_is_rewarded_by_equivalence(tiny, tmp_path):
    """A made-up set of specifications and reference designs (no test bench) trains: the
    environments the trainer builds reward the reference fully, a broken copy partly, through
    the reference-equivalence grader; one RL step runs on the set's problems."""
    from rtl_trainer.loop.envs import make_env_factory

    run = tmp_path / "rl-reference"
    config = base_config(run, mode="rl", student=str(tiny), steps=1, dataset=str(TRAINING_SET), ids=None)
    env = make_env_factory(config)()
    env.reset(options={"problem_id": "reference-set.step_counter"})
    reference = next(p for p in env.unwrapped.problems if p.id == "reference-set.step_counter")
    code = next(iter(reference.reference.values()))
    assert "q + 4'd3" in code
    _, right, _, _, right_info = env.step(f"```verilog\n{code}```")
    env.reset(options={"problem_id": "reference-set.step_counter"})
    broken = code.replace("q + 4'd3", "q + 4'd2")
    _, wrong, _, _, wrong_info = env.step(f"```verilog\n{broken}```")
    env.close()
    assert right_info["passed"] and right_info["official"]["simulation"]["verdict"] == "match"
    # Shaped: format, syntax and the interface earn the broken copy part of the reward.
    assert not wrong_info["passed"] and wrong_info["failure_class"] == "test_failure" and 0.0 < wrong < right
    assert wrong_info["official"]["simulation"]["first"]["cycle"] >= 0

    Trainer(config, service(tiny, run)).run()
    rollouts = [json.loads(line) for line in (run / "rollouts" / "step_00000.jsonl").read_text().splitlines()]
    assert len(rollouts) == 4 and all(r["problem_id"].startswith("reference-set.") for r in rollouts)
    assert all(isinstance(r["reward"], float) for r in rollouts)
    assert [r["step"] for r in RunLog(run).metrics()] == [0]


def test_distill_from_an_identical_teacher_has_zero_kl(tiny, tmp_path):
    run = tmp_path / "distill"
    config = base_config(run, mode="distill", student=str(tiny), teacher=str(tiny), steps=1, kl_penalty_coef=1.0)
    # The teacher is the student's own starting weights: the KL estimate must be ~0.
    sft_state = tmp_path / "sft0"
    _, log = run_sft(base_config(sft_state, mode="sft", student=str(tiny), steps=1, batch_size=1), service(tiny, sft_state))
    state = log.last_checkpoint()["state_path"]
    config = replace(config, student=state, teacher=state)
    Trainer(config, service(tiny, run)).run()
    row = RunLog(run).metrics()[0]
    assert row["teacher_kl"] == pytest.approx(0.0, abs=1e-3)
    assert row["teacher_aligned_fraction"] == pytest.approx(1.0)


def test_two_teachers_each_score_the_problems_their_rule_names(tiny, tmp_path):
    """One teacher is the student's own weights (KL 0 on its problem), the other a
    different, untrained model (large KL): each problem's scores come from its rule's."""
    sft_state = tmp_path / "sft0"
    _, log = run_sft(base_config(sft_state, mode="sft", student=str(tiny), steps=1, batch_size=1), service(tiny, sft_state))
    state = log.last_checkpoint()["state_path"]
    other = tiny.parent / "student"  # build_models' other tiny model: 2 layers, width 128
    run = tmp_path / "two"
    teachers = [
        {"name": "same", "model": state, "problems": ["*gray_converter*"]},
        {"name": "other", "model": str(other), "renderer": "qwen3_instruct", "categories": ["cid016"]},
    ]
    # Streamed in two minibatches: the per-teacher sums of the two add up.
    config = base_config(run, mode="distill", student=state, teachers=teachers, steps=1, kl_penalty_coef=1.0,
                         num_minibatches=2)
    Trainer(config, service(tiny, run)).run()
    row = RunLog(run).metrics()[0]
    assert row["teacher_kl/same"] == pytest.approx(0.0, abs=1e-3)
    assert row["teacher_kl/other"] > 0.02  # 0.09 here: two near-uniform tiny models, but not the same one
    assert row["teacher_kl/same"] < row["teacher_kl"] < row["teacher_kl/other"]
    assert row["tokens/teacher"] > 0


def test_resume_continues_after_the_last_checkpoint(tiny, tmp_path):
    run = tmp_path / "resume"
    config = base_config(run, mode="rl", student=str(tiny), steps=2)
    Trainer(config, service(tiny, run)).run()
    # Pretend the run was cut after logging a third step that never got its checkpoint.
    RunLog(run).log_metrics(2, {"partial": True})
    Trainer(replace(config, steps=3), service(tiny, run)).run(resume=True)
    steps = [r["step"] for r in RunLog(run).metrics()]
    assert steps == [0, 1, 2]
    assert "partial" not in RunLog(run).metrics()[-1]


@pytest.mark.parametrize("mode", ["rl", "sft"])
def test_resume_before_the_first_checkpoint_logs_each_step_once(tiny, tmp_path, mode):
    run = tmp_path / f"early-{mode}"
    config = base_config(run, mode=mode, student=str(tiny), steps=2, save_every=0, batch_size=2)
    # An attempt cut before its first checkpoint (save_every=0: only after the last step).
    interrupted = RunLog(run)
    interrupted.log_metrics(0, {"interrupted": True})
    interrupted.log_metrics(1, {"interrupted": True})
    if mode == "sft":
        run_sft(config, service(tiny, run), resume=True)
    else:
        Trainer(config, service(tiny, run)).run(resume=True)
    rows = RunLog(run).metrics()
    assert [r["step"] for r in rows] == [0, 1]
    assert not any("interrupted" in r for r in rows)


def test_plot_and_cli(tiny, tmp_path):
    run = tmp_path / "p"
    Trainer(base_config(run, mode="rl", student=str(tiny), steps=1), service(tiny, run)).run()
    out = tmp_path / "m.png"
    cli = [sys.executable, "-m", "rtl_trainer.cli"]
    done = subprocess.run([*cli, "plot", str(run), "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    helptext = subprocess.run([*cli, "--help"], capture_output=True, text=True, timeout=120).stdout
    for command in ("rl", "distill", "sft", "eval", "plot"):
        assert command in helptext
    bad = subprocess.run([*cli, "distill", "--student", str(tiny)], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "teacher" in bad.stdout


def test_reference_answer_shapes():
    from cvdp_gym.data import load_dataset

    problems = load_dataset("bundled")
    single = reference_answer(problems["cvdp_gym_gray_converter_0001"])
    assert single.startswith("```systemverilog\n") and single.endswith("\n```")
    double = json.loads(reference_answer(problems["cvdp_gym_uart_tx_0001"]))
    assert [list(item) for item in double["code"]] == [["rtl/baud_gen.sv"], ["rtl/uart_tx.sv"]]


def test_sft_on_known_wrong_candidates_builds_the_weak_students_data(tmp_path):
    from rtl_trainer.loop.sft import supervised_examples
    from rtl_trainer.rendering import get_renderer, offline_tokenizer

    tokenizer = offline_tokenizer("qwen3_instruct")
    renderer = get_renderer("qwen3_instruct", tokenizer)
    config = base_config(tmp_path, ids=["cvdp_gym_priority_encoder_0001"], max_prompt_tokens=None)

    def answer(source: str) -> str:
        [(pid, tokens, weights)] = supervised_examples(replace(config, sft_source=source), renderer)
        assert pid == "cvdp_gym_priority_encoder_0001"
        return tokenizer.decode([t for t, w in zip(tokens, weights, strict=True) if w > 0])

    right, wrong = answer("reference"), answer("candidate:functional_bug")
    assert "assign valid = |req;" in right and "assign valid = |req;" not in wrong
    assert "assign valid = (idx != 0);" in wrong
    mixed = supervised_examples(replace(config, sft_source="2*candidate:functional_bug+reference"), renderer)
    decoded = [tokenizer.decode([t for t, w in zip(tokens, weights, strict=True) if w > 0]) for _, tokens, weights in mixed]
    assert decoded == [wrong, wrong, right]
    with pytest.raises(ValueError, match="no bundled candidate named 'nope'"):
        supervised_examples(replace(config, sft_source="candidate:nope"), renderer)
    with pytest.raises(ValueError, match="sft_source must be"):
        supervised_examples(replace(config, sft_source="teacher"), renderer)


@pytest.mark.parametrize(("env_id", "suffix"), [("RTL-Testbench-v0", ".testbench"), ("RTL-Assertion-v0", ".assertion")])
def test_an_rl_step_runs_on_each_verification_task(tiny, tmp_path, env_id, suffix):
    """The verification environments train like the others: the run's problems are the
    training set's designs posed as the task, rewarded by ``kills`` (in [0, 1])."""
    run = tmp_path / env_id
    config = base_config(run, mode="rl", student=str(tiny), steps=1, env=env_id, dataset=str(TRAINING_SET), ids=["reference-set.step_counter", "reference-set.maj3"])
    config.validate()
    assert config.chosen_reward == "kills"
    Trainer(config, service(tiny, run)).run()
    rollouts = [json.loads(line) for line in (run / "rollouts" / "step_00000.jsonl").read_text().splitlines()]
    assert len(rollouts) == 4 and all(r["problem_id"].endswith(suffix) for r in rollouts)
    assert all(0.0 <= r["reward"] <= 1.0 for r in rollouts)
    assert [r["step"] for r in RunLog(run).metrics()] == [0]
