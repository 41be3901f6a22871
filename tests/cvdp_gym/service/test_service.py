"""``cvdp-gym serve``: a real uvicorn server on 127.0.0.1 grading with the real toolchain."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx
from typer.testing import CliRunner

from cvdp_gym.cli import app as cli_app
from cvdp_gym.data import bundled_candidates, load_dataset
from cvdp_gym.errors import ConfigError
from cvdp_gym.execution.cache import GradeCache
from cvdp_gym.grading import Grader, make_reward
from cvdp_gym.service.app import ServiceConfig, create_app
from cvdp_gym.service.client import GradingClient
from tests.support import ServedApp

pytestmark = pytest.mark.sandbox

DATA = load_dataset("bundled")
PROBLEMS = ["cvdp_gym_edge_detector_0001", "cvdp_gym_gray_converter_0001"]
EDGE = DATA["cvdp_gym_edge_detector_0001"]


def answers(problem_id: str) -> list[tuple[str, dict[str, str]]]:
    """The reference and two known-wrong candidates (one that does not build, one that fails)."""
    wrong = {c.name: c.files for c in bundled_candidates() if c.problem_id == problem_id}
    return [("reference", DATA[problem_id].reference), ("syntax_error", wrong["syntax_error"]),
            ("functional_bug", wrong["functional_bug"])]


def unique(files: dict[str, str], n: int) -> dict[str, str]:
    """The same answer with a comment that makes its cache key new."""
    return {path: text + f"\n// variant {n} {time.time_ns()}\n" for path, text in files.items()}


class Served(ServedApp):
    """The grading service on a free loopback port (``tests.support.ServedApp``)."""

    def __init__(self, config: ServiceConfig) -> None:
        super().__init__(create_app(config))


def serve(runner, tmp_path, **options) -> Served:
    grader = Grader(runner, cache=GradeCache(tmp_path / "grades.sqlite"))
    return Served(ServiceConfig(grader, DATA, **options))


@pytest.fixture(scope="module")
def served(runner, tmp_path_factory):
    server = serve(runner, tmp_path_factory.mktemp("serve"), workers=2, queue=8, max_body=64 * 1024)
    yield server
    server.stop()


@pytest.mark.parametrize("problem_id", PROBLEMS)
def test_the_service_gives_the_graders_verdicts(served, runner, problem_id):
    problem = DATA[problem_id]
    here = Grader(runner)  # no cache: a fresh verdict in this process
    shaped = make_reward("shaped")
    for name, files in answers(problem_id):
        expected = here.grade_files(problem, files)
        got = httpx.post(f"{served.url}/v1/grade", json={"problem_id": problem_id, "files": files}, timeout=120)
        assert got.status_code == 200, got.text
        body = got.json()
        assert (body["verdict"], body["failure_class"], body["passed"]) == (expected.verdict, expected.failure_class, expected.passed), name
        assert body["tests"] == vars(expected.tests), name
        assert body["reward"] == pytest.approx(shaped(expected)) and body["reward_kind"] == "shaped"
        assert [s["name"] for s in body["stages"]] == ["format", "syntax", "interface", "tests"]
        assert body["grade_s"] > 0 and body["total_s"] >= body["grade_s"] and not body["late"]
    # A model's text answer is extracted as grading extracts it.
    text = "Here it is:\n" + "".join(f"```systemverilog\n// {p}\n{t}```\n" for p, t in problem.reference.items())
    body = httpx.post(f"{served.url}/v1/grade", json={"problem_id": problem_id, "response": text, "reward": "binary"}, timeout=120).json()
    assert (body["verdict"], body["reward"]) == (here.grade_response(problem, text).verdict, 1.0)


def test_a_second_identical_request_is_answered_from_the_cache(served):
    files = unique(EDGE.reference, 0)
    first = httpx.post(f"{served.url}/v1/grade", json={"problem_id": EDGE.id, "files": files}, timeout=120).json()
    second = httpx.post(f"{served.url}/v1/grade", json={"problem_id": EDGE.id, "files": files}, timeout=120).json()
    assert (first["cached"], second["cached"]) == (False, True)
    assert first["verdict"] == second["verdict"] == "passed"
    metrics = httpx.get(f"{served.url}/metrics").text
    assert "cvdp_gym_cache_hits_total" in metrics and 'route="/v1/grade",status="200"' in metrics


def test_bad_requests_get_one_line_4xx_never_500(served):
    url = f"{served.url}/v1/grade"
    missing = httpx.post(url, json={"problem_id": "no_such_problem", "files": {"rtl/x.sv": ""}})
    assert missing.status_code == 404 and missing.json() == {"detail": "no problem 'no_such_problem' in bundled"}
    assert httpx.post(url, content=b'{"problem_id": ', headers={"content-type": "application/json"}).status_code == 422
    assert httpx.post(url, json={"problem_id": 5, "files": ["x"]}).status_code == 422
    assert httpx.post(url, json={"problem_id": EDGE.id}).status_code == 422  # neither response nor files
    assert httpx.post(url, json={"problem_id": EDGE.id, "response": "x", "reward": "nope"}).status_code == 422
    too_big = httpx.post(url, json={"problem_id": EDGE.id, "response": "x" * (65 * 1024)})
    assert too_big.status_code == 413 and "bytes" in too_big.json()["detail"]

    def chunks():
        yield b'{"problem_id": "x", "response": "'
        for _ in range(70):
            yield b"y" * 1024
        yield b'"}'

    assert httpx.post(url, content=chunks(), headers={"content-type": "application/json"}).status_code == 413
    assert httpx.get(f"{served.url}/nowhere").status_code == 404
    assert httpx.get(f"{served.url}/openapi.json").json()["paths"]["/v1/grade"]
    metrics = httpx.get(f"{served.url}/metrics").text
    for status in ("404", "413", "422"):
        assert f'status="{status}"' in metrics
    assert 'status="500"' not in metrics


def test_the_problem_list_and_health(served):
    problems = httpx.get(f"{served.url}/v1/problems").json()
    assert problems["count"] == len(DATA) and {p["id"] for p in problems["problems"]} == set(DATA.ids)
    edge = next(p for p in problems["problems"] if p["id"] == EDGE.id)
    assert (edge["category"], edge["difficulty"]) == ("cid002", "easy")
    assert httpx.get(f"{served.url}/healthz").json()["status"] == "ok"


def test_a_job_past_its_deadline_is_scored_timeout_and_not_cached(served):
    files = unique(DATA["cvdp_gym_uart_tx_0001"].reference, 1)
    body = {"problem_id": "cvdp_gym_uart_tx_0001", "files": files, "deadline_s": 0.05}
    first = httpx.post(f"{served.url}/v1/grade", json=body, timeout=60).json()
    assert (first["verdict"], first["late"], first["infra_failure"], first["cached"]) == ("timeout", True, True, False)
    again = httpx.post(f"{served.url}/v1/grade", json=body, timeout=60).json()
    assert again["cached"] is False


def test_nemo_gym_routes(served):
    assert httpx.post(f"{served.url}/seed_session", json={}).json() == {}
    text = "".join(f"```verilog\n{t}```\n" for t in EDGE.reference.values())
    request = {
        "responses_create_params": {"input": [{"role": "user", "content": EDGE.prompt[:100]}]},
        "response": {"id": "resp_1", "output": [{"type": "message", "role": "assistant",
                                                 "content": [{"type": "output_text", "text": text}]}]},
        "verifier_metadata": {"problem_id": EDGE.id},
    }
    answer = httpx.post(f"{served.url}/verify", json=request, timeout=120).json()
    assert answer["reward"] == pytest.approx(1.4) and answer["passed"] and not answer["mask_sample"]
    assert answer["response"] == request["response"] and answer["responses_create_params"] == request["responses_create_params"]
    assert answer["reward_components"]["tests"] == 1.0 and answer["failure_kind"] is None
    deep: object = "leaf"
    for _ in range(600):  # an extra field nested deeper than FastAPI's serialiser goes is echoed
        deep = [deep]
    echoed = httpx.post(f"{served.url}/verify", json={**request, "trace": deep}, timeout=120)
    assert echoed.status_code == 200 and echoed.json()["trace"] == deep and echoed.json()["cached"]
    wrong = dict(request, verifier_metadata={"problem_id": EDGE.id, "rtl_files": answers(EDGE.id)[2][1]})
    failed = httpx.post(f"{served.url}/verify", json=wrong, timeout=120).json()
    # A wrong answer is a measured reward, not a NeMo-Gym failure (the verdict says what it was).
    assert failed["failure_kind"] is None and failed["verdict"] == "test_failure" and failed["reward"] == pytest.approx(0.4)
    metrics = httpx.post(f"{served.url}/aggregate_metrics", json={"verify_responses": [answer, failed]}).json()
    assert metrics["agent_metrics"]["pass_rate"] == 0.5 and metrics["group_level_metrics"][0]["count"] == 2
    assert httpx.post(f"{served.url}/verify", json={"response": {}}).status_code == 422


def test_a_token_is_required_when_set(runner, tmp_path):
    server = serve(runner, tmp_path, token="s3cret")
    try:
        assert httpx.get(f"{server.url}/v1/problems").status_code == 401
        assert httpx.get(f"{server.url}/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(f"{server.url}/v1/problems", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert httpx.get(f"{server.url}/healthz").status_code == 200
        with GradingClient(server.url, token="s3cret") as client:
            assert len(client.problems()) == len(DATA)
    finally:
        server.stop()
    with pytest.raises(ConfigError):
        ServiceConfig(Grader(runner), DATA).check_host("0.0.0.0")
    ServiceConfig(Grader(runner), DATA).check_host("::1")
    done = CliRunner().invoke(cli_app, ["serve", "--host", "0.0.0.0"], env={"CVDP_GYM_SERVE_TOKEN": ""})
    assert done.exit_code == 2 and "not a loopback address" in done.output


def test_a_full_queue_answers_429_with_retry_after_then_recovers(runner, tmp_path):
    server = serve(runner, tmp_path, workers=1, queue=1, retry_after_s=1)
    try:
        def post(n: int) -> httpx.Response:
            body = {"problem_id": EDGE.id, "files": unique(EDGE.reference, 100 + n)}
            return httpx.post(f"{server.url}/v1/grade", json=body, timeout=120)

        known = {"problem_id": EDGE.id, "files": EDGE.reference}
        assert httpx.post(f"{server.url}/v1/grade", json=known, timeout=120).status_code == 200

        def cached(_n: int) -> httpx.Response:
            return httpx.post(f"{server.url}/v1/grade", json=known, timeout=120)

        with ThreadPoolExecutor(9) as pool:
            burst = [pool.submit(post, n) for n in range(6)]
            during = [pool.submit(cached, n) for n in range(3)]
            replies, hits = [f.result() for f in burst], [f.result() for f in during]
        # A cache hit is answered at once, never queued nor refused.
        assert [(h.status_code, h.json()["cached"]) for h in hits] == [(200, True)] * 3
        statuses = sorted(r.status_code for r in replies)
        assert set(statuses) == {200, 429} and statuses.count(200) >= 2, statuses
        throttled = next(r for r in replies if r.status_code == 429)
        assert throttled.headers["retry-after"] == "1" and "queue is full" in throttled.json()["detail"]
        assert post(99).status_code == 200  # recovered
        # The client waits out the 429s.
        with GradingClient(server.url) as client, ThreadPoolExecutor(4) as pool:
            verdicts = list(pool.map(lambda n: client.grade(EDGE.id, files=unique(EDGE.reference, 200 + n))["verdict"], range(4)))
        assert verdicts == ["passed"] * 4
        metrics = httpx.get(f"{server.url}/metrics").text
        assert 'status="429"' in metrics and "cvdp_gym_rejected_total" in metrics and "cvdp_gym_queue_depth 0" in metrics
    finally:
        server.stop()


def test_one_client_past_its_limit_gets_429_while_another_is_graded(runner, tmp_path):
    server = serve(runner, tmp_path, workers=2, queue=8, per_client=1, retry_after_s=1)
    try:
        def post(n: int, client: str) -> httpx.Response:
            body = {"problem_id": EDGE.id, "files": unique(EDGE.reference, 300 + n)}
            return httpx.post(f"{server.url}/v1/grade", json=body, headers={"x-client-id": client}, timeout=120)

        with ThreadPoolExecutor(4) as pool:
            first = pool.submit(post, 0, "trainer-a")
            deadline = time.monotonic() + 300
            while "cvdp_gym_grading_in_progress 0" in httpx.get(f"{server.url}/metrics").text:
                assert time.monotonic() < deadline and not first.done(), "the first answer never started"
                time.sleep(0.02)
            same, other = pool.submit(post, 1, "trainer-a"), pool.submit(post, 2, "trainer-b")
            replies = first.result(), same.result(), other.result()
        assert replies[0].status_code == 200 and replies[2].status_code == 200, [r.text for r in replies]
        assert replies[1].status_code == 429 and "per-client limit" in replies[1].json()["detail"]
        assert replies[1].headers["retry-after"] == "1"
        assert post(3, "trainer-a").status_code == 200  # its first job is done: in again
    finally:
        server.stop()


def test_the_service_grades_a_benchmark_beside_cvdp(runner, tmp_path):
    """``serve --dataset verilog-eval-v2`` (a made-up copy): the problem list names the benchmark,
    and /v1/grade gives the flow's verdict with the benchmark's own (``official``) beside it."""
    from pathlib import Path

    from cvdp_gym.envs.prompts import answer_text

    copy = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks" / "verilog-eval"
    data = load_dataset("verilog-eval-v2:spec-to-rtl", benchmark_dir=copy)
    problem = data.problems[0]
    server = Served(ServiceConfig(Grader(runner, cache=GradeCache(tmp_path / "grades.sqlite")), data, workers=1))
    try:
        listed = httpx.get(f"{server.url}/v1/problems", timeout=30).json()
        assert {p["benchmark"] for p in listed["problems"]} == {"verilog-eval-v2"} and listed["count"] == len(data)
        here = Grader(runner).grade_response(problem, answer_text(problem, problem.reference))
        body = httpx.post(f"{server.url}/v1/grade", json={"problem_id": problem.id, "response": answer_text(problem, problem.reference)}, timeout=120).json()
        assert (body["verdict"], body["official"]["class"]) == (here.verdict, here.official["class"]) == ("passed", ".")
        assert body["tests"] == vars(here.tests) and body["tests"]["total"] > 1  # the test bench's samples
    finally:
        server.stop()


def test_the_service_grades_a_verification_task(runner, tmp_path):
    """``serve --task testbench --default-reward kills``: a bench is graded by the bugs it catches,
    the same as in process, each seeded draw named by the request's ``seed``."""
    from cvdp_gym.data import Dataset
    from cvdp_gym.tasks.names import TESTBENCH
    from cvdp_gym.tasks.posing import TaskOptions, pose
    from tests.cvdp_gym.tasks.verification_problems import (
        THOROUGH_BENCH,
        WEAK_BENCH,
        counter_problem,
        fenced,
    )

    data = Dataset(pose([counter_problem()], TaskOptions(TESTBENCH)))
    server = Served(ServiceConfig(Grader(runner, cache=GradeCache(tmp_path / "grades.sqlite")), data, workers=1, reward="kills"))
    try:
        graded = {
            name: httpx.post(f"{server.url}/v1/grade", json={"problem_id": data.problems[0].id, "response": fenced(bench), "seed": 3}, timeout=120).json()
            for name, bench in (("thorough", THOROUGH_BENCH), ("weak", WEAK_BENCH))
        }
    finally:
        server.stop()
    here = Grader(runner).grade_response(data.problems[0], fenced(WEAK_BENCH), seed=3)
    assert graded["thorough"]["reward"] == 1.0 and graded["thorough"]["reward_kind"] == "kills"
    assert graded["weak"]["reward"] == make_reward("kills")(here) < 1.0
    assert graded["weak"]["tests"] == vars(here.tests)
