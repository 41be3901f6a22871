"""veRL 0.9.1 adapter: ``compute_score`` in process and through ``cvdp-gym serve``, the Parquet
rows, and (in the separate veRL venv of ``scripts/verl_env.py``) veRL's own reward worker and
rollout worker driving our reward function and agent loop on bundled problems."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

import cvdp_gym  # noqa: F401  (registers the Gymnasium environments)
from cvdp_gym.data import load_dataset
from cvdp_gym.errors import UnknownProblemError
from cvdp_gym.integrations._shared import shared_grader
from cvdp_gym.integrations.verl import (
    AGENT_NAME,
    SCORE_KEYS,
    compute_score,
    dataset_rows,
)
from cvdp_gym.parsers import ToolCall, format_tool_call
from cvdp_gym.user_dirs import cache_dir
from tests.cvdp_gym.cli.test_cli import run_cli
from tests.support import BUNDLED, REPO, ServedApp, missing

pytestmark = pytest.mark.sandbox

PROBLEM, TARGET = "cvdp_gym_traffic_light_0001", "rtl/traffic_light.sv"  # the cheapest bundled harness
AGENTIC, AGENTIC_TARGET = "cvdp_gym_agentic_pwm_gen_0001", "rtl/pwm_gen.sv"
GROUND_TRUTH = json.dumps({"dataset": "bundled", "problem_id": PROBLEM})


def answer(folder: str) -> str:
    return f"```systemverilog\n{(BUNDLED / PROBLEM / folder / TARGET).read_text()}```"


def recorded_failure(problem: str, candidate: str) -> str:
    return json.loads((BUNDLED / problem / "candidates" / "expected.json").read_text())[candidate]["failure_class"]


def in_process(action: str) -> tuple[float, dict]:
    env = gym.make("CVDP-SingleShot-v0", ids=[PROBLEM], grader=shared_grader(cache=False))
    env.reset(options={"problem_id": PROBLEM})
    _, reward, _, _, info = env.step(action)
    env.close()
    return reward, info


def agentic_turns(folder: str) -> list[str]:
    """Two assistant turns: write ``folder``'s file into the workspace, then finish."""
    text = (BUNDLED / AGENTIC / folder / AGENTIC_TARGET).read_text()
    write = f"cat > {AGENTIC_TARGET} <<'EOF'\n{text.rstrip()}\nEOF"
    return [format_tool_call(ToolCall("execute_bash", {"command": write}), "qwen"),
            format_tool_call(ToolCall("finish", {}), "qwen")]


def agentic_in_process(turns: list[str]) -> tuple[float, dict]:
    env = gym.make("CVDP-Agentic-v0", ids=[AGENTIC], tool_format="qwen", grader=shared_grader(cache=False))
    env.reset(options={"problem_id": AGENTIC})
    total = 0.0
    for turn in turns:
        _, reward, terminated, truncated, info = env.step(turn)
        total += reward
        if terminated or truncated:
            break
    env.close()
    return total, info


@pytest.fixture(scope="module")
def answers(toolchain) -> dict[str, str]:
    return {"reference": answer("solution"), "functional_bug": answer("candidates/functional_bug")}


@pytest.fixture(scope="module")
def graded(answers) -> dict[str, tuple[float, dict]]:
    """Each answer's reward and info from ``CVDP-SingleShot-v0`` in this process."""
    return {name: in_process(text) for name, text in answers.items()}


@pytest.fixture(scope="module")
def scored(answers) -> dict[str, dict]:
    return {name: compute_score("bundled", text, GROUND_TRUTH, {"index": 0}, cache=False) for name, text in answers.items()}


def test_compute_score_is_the_in_process_grade(graded, scored):
    for name, (reward, info) in graded.items():
        assert tuple(scored[name]) == SCORE_KEYS
        assert scored[name]["score"] == reward and scored[name]["passed"] == float(info["passed"])
        assert scored[name]["tests_passed"] == info["tests"]["passed"]
    assert scored["reference"]["score"] == pytest.approx(1.4) and scored["reference"]["acc"] == 1.0
    assert scored["functional_bug"]["failure_class"] == recorded_failure(PROBLEM, "functional_bug")


def test_compute_score_with_the_quality_reward_measures_a_passing_design(answers, scored):
    from cvdp_gym.toolchain import quality_tools

    if not quality_tools.ready():
        missing(f"quality tools: {quality_tools.problem()}")
    liberty = str(Path(__file__).parents[2] / "fixtures" / "quality" / "tiny.lib")
    options = {"reward": "quality", "quality": {"liberty": liberty}, "cache": False}
    reference = compute_score("bundled", answers["reference"], GROUND_TRUTH, **options)
    bug = compute_score("bundled", answers["functional_bug"], GROUND_TRUTH, **options)
    assert reference["score"] == pytest.approx(1.4 + 0.5)  # the reference against itself: 0.5 of the quality part
    assert bug["score"] == scored["functional_bug"]["score"]  # a failing design: no quality part


def test_compute_score_through_the_grading_service_gives_the_same_result(answers, scored, monkeypatch):
    from cvdp_gym.service.app import ServiceConfig, create_app

    served = ServedApp(create_app(ServiceConfig(shared_grader(cache=False), load_dataset("bundled", ids=[PROBLEM]))))
    try:
        assert compute_score("bundled", answers["reference"], GROUND_TRUTH, url=served.url) == scored["reference"]
        monkeypatch.setenv("CVDP_GYM_VERL_URL", served.url)  # the reward workers' way; a bare id too
        assert compute_score("bundled", answers["functional_bug"], PROBLEM) == scored["functional_bug"]
    finally:
        served.stop()


def test_an_unknown_problem_raises():
    with pytest.raises(UnknownProblemError):
        compute_score("bundled", "x", json.dumps({"dataset": "bundled", "problem_id": "nope"}))


def test_write_dataset_writes_verl_rows(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    # `cvdp-gym export verl` writes through write_dataset.
    done = run_cli("export", "verl", "bundled", str(tmp_path / "train.parquet"), "--id", PROBLEM)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = pq.read_table(tmp_path / "train.parquet").to_pylist()
    assert row["data_source"] == "bundled" and [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert json.loads(row["reward_model"]["ground_truth"]) == {"dataset": "bundled", "problem_id": PROBLEM}
    assert row["extra_info"] == {"index": 0, "split": "train", "dataset": "bundled", "problem_id": PROBLEM}
    (agentic,) = dataset_rows("bundled", agentic=True, ids=[AGENTIC])
    assert agentic["agent_name"] == AGENT_NAME and agentic["extra_info"]["problem_id"] == AGENTIC


def verl_python() -> Path:
    """The veRL venv's Python, where ``scripts/verl_env.py`` puts it."""
    venv = Path(os.environ.get("CVDP_GYM_VERL_VENV") or cache_dir() / "verl-venv")
    return venv / "bin" / "python"


@pytest.fixture(scope="module")
def through_verl(answers, tmp_path_factory) -> Iterator[dict]:
    """veRL's own reward worker and rollout worker on the same answers (one subprocess)."""
    python = verl_python()
    if not python.exists():
        pytest.skip(f"no veRL venv at {python.parent.parent}: run .venv/bin/python scripts/verl_env.py")
    work = tmp_path_factory.mktemp("verl")
    spec = {
        "single": {"problem": PROBLEM, "answers": answers},
        "agentic": {"problem": AGENTIC, "turns": {"reference": agentic_turns("solution"),
                                                   "functional_bug": agentic_turns("candidates/functional_bug")}},
    }
    (work / "answers.json").write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_DISABLE_IMPORT_WARNING": "1", "TOKENIZERS_PARALLELISM": "false"}
    check = Path(__file__).with_name("verl_check.py")
    run = subprocess.run([str(python), str(check), str(work), str(work / "answers.json")], capture_output=True,
                         text=True, timeout=600, env=env, cwd=work)
    assert run.returncode == 0, run.stderr[-4000:]
    yield {**json.loads(run.stdout.strip().splitlines()[-1]), "spec": spec}


def test_verl_reward_worker_scores_as_the_grader_does(graded, scored, through_verl):
    assert through_verl["verl"] == "0.9.1" and through_verl["reward_manager"] == "NaiveRewardManager"
    for name, (reward, _) in graded.items():
        assert through_verl["single"][name]["reward_score"] == reward
        assert through_verl["single"][name]["reward_extra_info"] == scored[name]
    assert through_verl["single"]["reference"]["reward_score"] == pytest.approx(1.4)
    assert through_verl["single"]["functional_bug"]["reward_extra_info"]["failure_class"] == recorded_failure(PROBLEM, "functional_bug")


def test_verl_rollout_worker_plays_the_agent_loop(through_verl):
    for name, turns in through_verl["spec"]["agentic"]["turns"].items():
        played = through_verl["agentic"][name]
        reward, info = agentic_in_process(turns)
        assert played["requests"] == 2 and played["end_reason"] == "finish"
        assert played["reward_score"] == pytest.approx(reward)
        assert played["reward_extra_info"]["passed"] == float(info["passed"])
        # the tool result went back as a tool message, rendered by the chat template, and the
        # response mask marks exactly the model's tokens (a byte each, plus an end token a turn)
        assert played["last_prompt_tail"].endswith("<|im_start|>tool\n[exit code: 0]<|im_end|>\n<|im_start|>assistant\n")
        assert played["generated"] == sum(len(turn.encode()) + 1 for turn in turns)
    assert through_verl["agentic"]["reference"]["reward_extra_info"]["passed"] == 1.0
    # out of response length after the turn that wrote the file: graded as the workspace stands
    short = through_verl["agentic"]["short"]
    assert short["requests"] == 1 and short["end_reason"] == "response_length"
    assert short["reward_extra_info"]["passed"] == 1.0 and short["generated"] == 600
    failed = through_verl["agentic"]["functional_bug"]["reward_extra_info"]["failure_class"]
    assert failed == recorded_failure(AGENTIC, "functional_bug")
