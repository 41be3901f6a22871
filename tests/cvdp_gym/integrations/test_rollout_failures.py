"""NeMo-Gym's two rollout-failure rules (issue 47), through each consumer's own code path.

A real sandbox dies in the middle of a grade (``tests.support.DyingSandbox``: the format
stage has passed, then the bubblewrap process of the next stage's run is killed with SIGKILL
from outside while it runs, and the sandbox raises its own ``SandboxDied``), and every output format marks the answer
as not judged, never as a reward of 0, and leaves it out of its batch or statistics:

- the Gymnasium environment's ``info`` and ``rtl-train``'s pool, groups and step metrics;
- the service's ``/v1/grade``, NeMo-Gym's ``/verify`` and ``/aggregate_metrics`` over real
  HTTP, the answers read by NeMo-Gym's own models;
- TRL's reward function (None) and one real ``GRPOTrainer`` step fed that group, OpenEnv's
  app and client (reward None), verifiers' rollout (a failed trace), tinker-cookbook's
  ``RetryOnFailure`` (a ``RolloutError``, played again).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import gymnasium as gym
import httpx
import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.grading import Grader, make_reward
from cvdp_gym.harness import HarnessRunner
from tests.support import BUNDLED, DyingSandbox

pytestmark = pytest.mark.sandbox

# The scripted chat server verifiers' rollouts talk to (a module fixture); without
# verifiers its test skips.
with contextlib.suppress(pytest.skip.Exception):
    from tests.cvdp_gym.integrations.test_verifiers import endpoint  # noqa: F401
# The tiny Qwen3 model TRL's test trains (a module fixture); without TRL its test skips.
with contextlib.suppress(pytest.skip.Exception):
    from tests.cvdp_gym.integrations.test_trl import tiny_model_dir  # noqa: F401

PROBLEM_ID, TARGET = "cvdp_gym_traffic_light_0001", "rtl/traffic_light.sv"  # the cheapest bundled harness
#: The sandbox dies grading any answer that carries this line.
MARKER = "// the sandbox dies grading this answer"
PROBLEM = load_dataset("bundled", ids=[PROBLEM_ID]).problems[0]
#: The reference with the marker (it would pass) and a known-wrong answer (graded: 0.4 shaped).
DIES = f"Here it is.\n```systemverilog\n{PROBLEM.reference[TARGET]}{MARKER}\n```"
WRONG = f"Here it is.\n```systemverilog\n{(BUNDLED / PROBLEM_ID / 'candidates' / 'functional_bug' / TARGET).read_text()}```"
WRONG_REWARD = 0.4  # format 0.1 + syntax 0.3, tests failed


@pytest.fixture(scope="module")
def dying(sandbox) -> DyingSandbox:
    return DyingSandbox(sandbox, MARKER)


@pytest.fixture(scope="module")
def grader(dying, tmp_path_factory) -> Grader:
    """The grader on the dying sandbox; the wrong answer's real verdict is cached once."""
    return Grader(HarnessRunner(dying), cache=GradeCache(tmp_path_factory.mktemp("grades") / "grades.sqlite"))


def test_environment_info_and_rtl_train_leave_the_answer_out(grader) -> None:
    from rtl_trainer.loop.metrics import group_outcomes, infra_metrics, rollout_metrics
    from rtl_trainer.rollouts import EnvPool, Group, Rollout

    pool = EnvPool(lambda: gym.make("CVDP-SingleShot-v0", ids=[PROBLEM_ID], grader=grader), 1)
    try:
        dead_reward, dead, retried = pool.score_with_retry(PROBLEM_ID, DIES)
        wrong_reward, wrong, _ = pool.score_with_retry(PROBLEM_ID, WRONG)
    finally:
        pool.close()
    # The environment's info: not judged, and not the answer's fault either.
    assert (dead["failure_class"], dead["infra_failure"], dead["excluded"], dead["passed"]) == ("infra_error", True, False, False)
    assert dead["stages"]["format"]["passed"] and "killed by signal 9 in the middle of the run" in dead["reason"]
    assert (wrong["infra_failure"], wrong_reward) == (False, pytest.approx(WRONG_REWARD))
    # rtl-train graded it a second time (the sandbox died again), then left it out.
    assert retried
    rollouts = [Rollout(PROBLEM_ID, [], dead_reward, dead, retried=True), Rollout(PROBLEM_ID, [], wrong_reward, wrong)]
    assert [r.infra_failed for r in rollouts] == [True, False] and rollouts[0].excluded
    groups = [Group(PROBLEM_ID, rollouts)]
    metrics = rollout_metrics(groups)
    assert metrics["env/all/reward/total"] == pytest.approx(WRONG_REWARD)  # the mean of the judged answer only
    assert metrics["env/all/format_rate"] == 1.0 and metrics["env/all/excluded"] == 1
    assert infra_metrics(groups) == {"grade/infra_failed": 1, "grade/infra_frac": 0.5, "grade/infra_retried": 1}
    (outcome,) = group_outcomes(groups)
    assert outcome.scored == 1  # the group's statistics count the judged answer alone


def nemo_gym_request(text: str) -> dict[str, Any]:
    from tests.cvdp_gym.service.test_nemo_gym_models import responses_api

    params, response = responses_api(text)
    return {"responses_create_params": params, "response": response, "verifier_metadata": {"problem_id": PROBLEM_ID}}


def test_the_service_marks_it_in_every_answer_and_leaves_it_out_of_the_metrics(grader, sandbox, tmp_path) -> None:
    pytest.importorskip("fastapi")
    from cvdp_gym.service.core import ServiceConfig
    from tests.cvdp_gym.service.test_nemo_gym_models import models_dir, validate
    from tests.cvdp_gym.service.test_service import DATA, Served

    server = Served(ServiceConfig(grader, DATA, workers=2, queue=4))
    try:
        post = lambda route, body: httpx.post(f"{server.url}{route}", json=body, timeout=120)  # noqa: E731
        own = post("/v1/grade", {"problem_id": PROBLEM_ID, "response": DIES})
        verified = [post("/verify", nemo_gym_request(text)) for text in (DIES, WRONG)]
        assert [r.status_code for r in (own, *verified)] == [200] * 3, [r.text for r in (own, *verified)]
        dead, wrong = (r.json() for r in verified)
        aggregate_request = {"verify_responses": [dead, wrong]}
        aggregate = post("/aggregate_metrics", aggregate_request)
        assert aggregate.status_code == 200, aggregate.text
    finally:
        server.stop()
    graded = own.json()
    assert (graded["infra_failure"], graded["excluded"], graded["failure_class"]) == (True, False, "infra_error")
    # NeMo-Gym's /verify: a masked sample of a failed verifier, never a measured 0.
    assert (dead["mask_sample"], dead["failure_kind"]) == (True, "verifier_error") and "sandbox" in dead["failure_reason"]
    assert (wrong["mask_sample"], wrong["failure_kind"], wrong["reward"]) == (False, None, pytest.approx(WRONG_REWARD))
    # /aggregate_metrics: the masked row is counted, never averaged.
    metrics = aggregate.json()
    assert metrics["agent_metrics"]["count"] == 1 and metrics["agent_metrics"]["coverage/masked_rollouts"] == 1
    assert metrics["key_metrics"]["mean/reward"] == pytest.approx(WRONG_REWARD)
    assert [g["count"] for g in metrics["group_level_metrics"]] == [1]
    # NeMo-Gym's own models take them as they are (a registered failure_kind: no warning).
    if not (models_dir() / "nemo_gym" / "base_resources_server.py").exists() or sandbox.toolchain.root is None:
        pytest.skip("NeMo-Gym's models are not built (scripts/nemo_gym_models.py) or no simulation root python3")
    payloads = [("BaseVerifyResponse", dead), ("BaseMultiRewardVerifyResponse", dead), ("BaseVerifyResponse", wrong),
                ("AggregateMetricsRequest", aggregate_request), ("AggregateMetrics", metrics)]
    assert validate(sandbox, tmp_path, payloads) == [(name, None) for name, _ in payloads]


def test_trl_reward_function_gives_none(dying) -> None:
    pytest.importorskip("trl")
    from cvdp_gym.integrations.trl import reward_function

    logged: dict[str, float] = {}
    score = reward_function("shaped", sandbox=dying, cache=False)
    rewards = asyncio.run(score(
        prompts=[None, None], completions=[DIES, WRONG], problem_id=[PROBLEM_ID] * 2, log_metric=logged.__setitem__,
    ))
    # None: GRPOTrainer leaves the completion out of its group baseline, its reward
    # statistics and the update (``_calculate_rewards``: None -> NaN, nan-aware means).
    assert rewards == [None, pytest.approx(WRONG_REWARD)]
    assert logged == {"cvdp/infra_failures": 1.0, "cvdp/pass_rate": 0.0, "cvdp/format_rate": 1.0, "cvdp/syntax_rate": 1.0}


def test_a_trl_grpo_step_leaves_the_answer_out_of_its_statistics(dying, tmp_path, request, monkeypatch) -> None:
    """One real ``GRPOTrainer`` step on a tiny model whose group is the answer the sandbox
    dies on and a judged one (TRL's ``rollout_func`` plays them): TRL's own reward
    statistics are the judged answer's alone."""
    pytest.importorskip("trl")
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    from cvdp_gym.integrations.trl import grpo_dataset, reward_function
    from tests.cvdp_gym.integrations.test_trl import grpo_args, short_prompts

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL 1.16
    model_dir = request.getfixturevalue("tiny_model_dir")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    # Short answers (a long one costs the 151k-token vocabulary per token on CPU): the first
    # dies with the sandbox, the second compiles and fails the interface stage, a real verdict.
    dies, judged = (f"```systemverilog\nmodule traffic_light(input clk);\nendmodule\n{tail}```" for tail in (MARKER + "\n", ""))
    judged_grade = Grader(HarnessRunner(dying)).grade_response(PROBLEM, judged)
    assert not judged_grade.infra_failure

    def rollout(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        texts = [dies if i % 2 == 0 else judged for i in range(len(prompts))]
        prompt_ids = [tokenizer(tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=False))["input_ids"] for p in prompts]
        completion_ids = [tokenizer(t + "<|im_end|>")["input_ids"] for t in texts]
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": [[0.0] * len(c) for c in completion_ids]}

    trainer = GRPOTrainer(
        model=str(model_dir), reward_funcs=reward_function("shaped", sandbox=dying, cache=False),
        args=grpo_args(tmp_path, max_completion_length=64), train_dataset=short_prompts(grpo_dataset("bundled", ids=[PROBLEM_ID])),
        processing_class=tokenizer, rollout_func=rollout,
    )
    trainer.train()
    logs = {k: v for entry in trainer.state.log_history for k, v in entry.items()}
    expected = make_reward("shaped")(judged_grade)
    assert expected > 0 and logs["reward"] == pytest.approx(expected)  # a reward of 0 beside it would halve the mean
    assert logs["rewards/cvdp_shaped/mean"] == pytest.approx(expected) and logs["cvdp/infra_failures"] == 1.0


def test_openenv_step_has_no_reward(grader) -> None:
    pytest.importorskip("openenv.core")
    from cvdp_gym.integrations.openenv import CVDPAction, CVDPEnvClient, make_app
    from tests.support import ServedApp

    served = ServedApp(make_app("CVDP-SingleShot-v0", ids=[PROBLEM_ID], grader=grader))
    try:
        with CVDPEnvClient(served.url).sync() as client:
            client.reset(problem_id=PROBLEM_ID)
            dead = client.step(CVDPAction(text=DIES))
            client.reset(problem_id=PROBLEM_ID)
            wrong = client.step(CVDPAction(text=WRONG))
    finally:
        served.stop()
    assert dead.reward is None and dead.observation.reward is None and dead.done
    assert (dead.observation.info["infra_failure"], dead.observation.info["failure_class"]) == (True, "infra_error")
    assert wrong.reward == pytest.approx(WRONG_REWARD) and wrong.observation.info["infra_failure"] is False


def test_tinker_cookbook_retries_the_trajectory_and_never_scores_it(sandbox) -> None:
    pytest.importorskip("tinker_cookbook")
    from tinker_cookbook import renderers
    from tinker_cookbook.rl.rollout_strategy import RetryOnFailure

    from cvdp_gym.integrations.tinker_cookbook import CVDPEnvGroupBuilder, EnvOptions
    from rtl_trainer.rendering import offline_tokenizer
    from tests.cvdp_gym.integrations.test_tinker_cookbook import ScriptedPolicy

    renderer = renderers.get_renderer("qwen3_disable_thinking", offline_tokenizer("qwen3"))
    dies_once = DyingSandbox(sandbox, MARKER, times=1)
    builder = CVDPEnvGroupBuilder(PROBLEM_ID, renderer, group_size=2, options=EnvOptions(sandbox=dies_once, cache=False))
    # Two episodes, one played again: the marked answer the sandbox died on, the wrong one,
    # and the marked one again, which the sandbox now grades (it would pass).
    policy = ScriptedPolicy(renderer, [DIES, WRONG, DIES])
    result = asyncio.run(RetryOnFailure(max_retries=1).execute(builder, policy))
    assert [(e.error_type, "could not judge" in e.error_message) for e in result.errors] == [("GradingError", True)]
    assert dies_once.refused == 1
    rewards = sorted(sum(t.reward for t in trajectory.transitions) for trajectory in result.trajectories)
    assert rewards == [pytest.approx(WRONG_REWARD), pytest.approx(1.4)]


def test_verifiers_rollout_fails_instead_of_scoring(sandbox, monkeypatch, request) -> None:
    pytest.importorskip("verifiers.v1")
    import cvdp_gym.integrations.verifiers as adapter
    from tests.cvdp_gym.integrations.test_verifiers import rollouts

    # The scripted agent answers the reference as it is: the sandbox dies on every answer
    # of this problem, and the task's grader is the one on that sandbox.
    dying = Grader(HarnessRunner(DyingSandbox(sandbox, "module traffic_light")))
    monkeypatch.setattr(adapter, "shared_grader", lambda *args, **kwargs: dying)
    _, base_url = request.getfixturevalue("endpoint")
    (episode,) = rollouts(adapter.load_environment("bundled", ids=[PROBLEM_ID]), base_url, ["correct"], monkeypatch)
    (trace,) = episode.traces
    # A failed rollout (verifiers' ``ok`` False: its eval resume plays it again), its reward
    # left unset (None, not 0), and the metrics say why.
    assert not episode.ok and not trace.ok and trace.has_error
    assert [e.type for e in trace.errors] == ["SandboxError"] and "could not judge" in trace.errors[0].message
    assert trace.rewards == {"cvdp_reward": None}
    assert (trace.metrics["infra_failure"], trace.metrics["excluded"]) == (1.0, 0.0)
    json.dumps(trace.model_dump(mode="json"))  # still a record verifiers can write
