"""Randomised harnesses: the static scan, the seed each run uses, reproducing it, and flaky verdicts.

The made-up harness (``randomised_problem``) draws its design parameter with
``random.randint`` at import, as some real CVDP harnesses do; the ``LEAKY`` design drives
its output for one value only, so its verdict depends on the draw, as in the real case of
issue 22 (passed here, failed in the official runner).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cvdp_gym.cli import app
from cvdp_gym.grading import Grader
from cvdp_gym.grading.seed_verdicts import combine
from cvdp_gym.harness.randomness import (
    SEED_DIR,
    SEED_VARIABLE,
    harness_randomness,
    seed_environment,
    write_seed_module,
)
from cvdp_gym.seeds import seed_list
from tests.cvdp_gym.harness import randomised_problem as made_up

BASE = {"docker-compose.yml": made_up.COMPOSE, "src/.env": made_up.ENV}


def scan(**files: str) -> tuple[str, ...]:
    return harness_randomness({**BASE, **{f"src/{name}": text for name, text in files.items()}})


# ------------------------------------------------------------------------ the static scan


def test_a_runner_that_draws_its_parameter_is_randomised():
    reasons = scan(**{"test_runner.py": made_up.RUNNER, "test_picker.py": made_up.TEST})
    assert len(reasons) == 1 and reasons[0].startswith("parameters: test_runner.py:7 random.randint")


def test_parametrize_with_a_draw_and_from_import_aliases_are_found():
    runner = "import pytest\nfrom random import randint as pick\n\n@pytest.mark.parametrize('w', [pick(1, 8) for _ in range(3)])\ndef test_w(w):\n    pass\n"
    assert scan(**{"test_runner.py": runner})[0].startswith("parameters: test_runner.py:4 random.randint")


def test_seeded_generators_and_a_fixed_module_seed_are_deterministic():
    seeded = "import random\nrng = random.Random(7)\nx = rng.randint(0, 3)\n"
    module_seed = "import random\nrandom.seed(1234)\nx = random.randint(0, 3)\n"
    assert scan(**{"test_runner.py": seeded, "test_x.py": module_seed}) == ()


def test_stimulus_draws_count_unless_cocotb_seed_is_pinned():
    test = "import cocotb\nimport random\n\n@cocotb.test()\nasync def t(dut):\n    dut.a.value = random.randint(0, 3)\n"
    helper = "import random\n\ndef value():\n    return random.getrandbits(8)\n"
    found = scan(**{"test_x.py": test, "harness_library.py": helper})
    assert [r.split(":")[0] for r in found] == ["stimulus", "stimulus"]
    pinned_env = {**BASE, "src/.env": made_up.ENV + "RANDOM_SEED = 5\n", "src/test_x.py": test}
    assert harness_randomness(pinned_env) == ()
    runner_seed = "from cocotb_tools.runner import get_runner\n\ndef test_r():\n    get_runner('icarus').test(hdl_toplevel='t', test_module='m', seed=3)\n"
    assert scan(**{"test_x.py": test, "test_runner.py": runner_seed}) == ()


def test_entropy_sources_are_reported():
    text = "import random, os, time\nrandom.seed(time.time())\nr = random.Random()\nkey = os.urandom(4)\n"
    found = scan(**{"test_x.py": text})
    assert [r.split(" ", 1)[0] for r in found] == ["entropy:"] * 3


def test_unparsable_python_is_skipped_not_raised():
    assert scan(**{"test_runner.py": "def broken(:\n"}) == ()


# ------------------------------------------------------------------------ the seed, in a real interpreter


def test_the_seed_module_seeds_random_and_then_runs_the_next_sitecustomize(tmp_path):
    """Our sitecustomize seeds ``random`` (also an unseeded ``seed()`` / ``Random()``) and
    hands over to the sitecustomize that would otherwise have run (the image's own)."""
    write_seed_module(tmp_path / "tmp")
    ours = tmp_path / "tmp" / Path(SEED_DIR).name
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os\nos.environ['THEIRS_RAN'] = '1'\n")
    program = "import os, random; a = random.random(); random.seed(); b = random.random(); c = random.Random().random(); print(a, b, c, os.environ.get('THEIRS_RAN'))"

    def draw(seed: int) -> list[str]:
        env = {"PATH": os.environ["PATH"], SEED_VARIABLE: str(seed), "PYTHONPATH": f"{ours}:{theirs}"}
        return subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True).stdout.split()

    first, again, other = draw(11), draw(11), draw(12)
    assert first == again and first[:3] != other[:3]
    assert first[3] == "1"  # the next sitecustomize ran


def test_seed_environment_keeps_the_harness_pythonpath_and_a_pinned_cocotb_seed():
    env = seed_environment(5, "cocotb2", {"PYTHONPATH": "/src"})
    assert env == {SEED_VARIABLE: "5", "PYTHONPATH": f"{SEED_DIR}:/src", "COCOTB_RANDOM_SEED": "5"}
    assert seed_environment(5, "cocotb1", {})["RANDOM_SEED"] == "5"
    assert "RANDOM_SEED" not in seed_environment(5, "cocotb1", {"RANDOM_SEED": "9"})


def test_seed_list_and_combine():
    assert seed_list(3, 10) == [10, 11, 12]
    assert len(set(seed_list(4))) == 4


# ------------------------------------------------------------------------ real harness runs


def drawn_mode(result) -> str:
    for service in result.services:
        for line in service.log_tail.splitlines():
            if "MODE=" in line:
                return "0" if "drawn MODE=0" in line else ("1" if "MODE=1" in line else "?")
    return "?"


@pytest.mark.sandbox
def test_a_seed_reproduces_the_draw_and_the_verdict(runner):
    problem = made_up.problem()
    leaky = {made_up.TARGET: made_up.LEAKY}
    results = {seed: runner.run(problem, leaky, seed=seed) for seed in (0, 1)}
    # With seed 0 the harness draws MODE=1 (the leaky design's undriven value), with 1 MODE=0.
    assert results[0].verdict == "test_failure" and results[1].verdict == "passed"
    assert [r.seed for r in results.values()] == [0, 1]
    again = runner.run(problem, leaky, seed=0)
    assert again.verdict == "test_failure" and again.seed == 0
    unseeded = runner.run(problem, {made_up.TARGET: made_up.CORRECT})
    assert unseeded.passed and isinstance(unseeded.seed, int)  # a fresh seed, recorded


@pytest.mark.docker
def test_the_seed_draws_the_same_in_docker(docker_runner):
    problem = made_up.problem()
    leaky = {made_up.TARGET: made_up.LEAKY}
    assert [docker_runner.run(problem, leaky, seed=s).verdict for s in (0, 1)] == ["test_failure", "passed"]


@pytest.mark.sandbox
def test_grader_caches_per_seed_and_never_an_unseeded_draw(runner, tmp_path):
    problem = made_up.problem()
    leaky = {made_up.TARGET: made_up.LEAKY}
    unseeded = Grader(runner, cache=tmp_path / "grades.sqlite")
    first = unseeded.grade_files(problem, leaky)
    assert first.randomised and first.seed is not None and len(unseeded.cache) == 0
    assert not unseeded.grade_files(problem, leaky).cached
    seeded = Grader(runner, cache=tmp_path / "grades.sqlite", harness_seed=0)
    assert seeded.grade_files(problem, leaky).verdict == "test_failure"
    hit = seeded.grade_files(problem, leaky)
    assert hit.cached and hit.seed == 0 and hit.verdict == "test_failure"
    assert not seeded.grade_files(problem, leaky, seed=1).cached  # another seed, another key


@pytest.mark.sandbox
def test_grader_with_several_seeds_reports_flaky(runner):
    problem = made_up.problem()
    grade = Grader(runner, cache=None, harness_seed=0, seeds=2).grade_files(problem, {made_up.TARGET: made_up.LEAKY})
    assert grade.flaky and not grade.passed and grade.verdict == "test_failure"
    assert grade.seed_verdicts == [{"seed": 0, "verdict": "test_failure"}, {"seed": 1, "verdict": "passed"}]
    assert combine([grade]).seed_verdicts == [{"seed": 0, "verdict": "test_failure"}]
    steady = Grader(runner, cache=None, harness_seed=0, seeds=2).grade_files(problem, {made_up.TARGET: made_up.CORRECT})
    assert steady.passed and not steady.flaky and len(steady.seed_verdicts) == 2


@pytest.mark.sandbox
def test_check_and_eval_report_flaky_and_reproduce_with_seed(toolchain, tmp_path):
    dataset = tmp_path / "ds.jsonl"
    dataset.write_text(json.dumps(made_up.record()) + "\n")
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text(json.dumps({"id": "cvdp_copilot_picker_0001", "name": "leaky", "files": {made_up.TARGET: made_up.LEAKY}, "expected": "test_failure"}) + "\n")
    cli = CliRunner()
    out = tmp_path / "check.jsonl"
    done = cli.invoke(app, ["check", str(dataset), "--candidates", str(candidates), "--seed", "0", "--seeds", "2", "--out", str(out)])
    assert done.exit_code == 1, done.output  # the flaky candidate does not always get its expected verdict
    rows = {r["name"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["leaky"]["flaky"] and [v["verdict"] for v in rows["leaky"]["seed_verdicts"]] == ["test_failure", "passed"]
    assert rows["reference"]["matches"] and not rows["reference"]["flaky"]
    assert "flaky (verdict changes with the seed): 1" in done.output

    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"id": "cvdp_copilot_picker_0001", "response": f"```verilog\n{made_up.LEAKY}```"}) + "\n")
    for seed, verdict in (("0", "test_failure"), ("1", "passed")):
        folder = tmp_path / f"eval{seed}"
        done = cli.invoke(app, ["eval", str(dataset), "--responses", str(responses), "--seed", seed, "--out", str(folder)])
        assert done.exit_code == 0, done.output
        row = json.loads((folder / "results.jsonl").read_text())
        assert (row["verdict"], row["seed"], row["flaky"]) == (verdict, int(seed), False)
    folder = tmp_path / "eval-flaky"
    done = cli.invoke(app, ["eval", str(dataset), "--responses", str(responses), "--seed", "0", "--seeds", "2", "--out", str(folder)])
    row = json.loads((folder / "results.jsonl").read_text())
    assert row["flaky"] and not row["passed"]
    assert "1 answer(s) are flaky" in (folder / "report.md").read_text()


def test_the_made_up_harness_is_in_the_official_shape():
    record = made_up.record()
    assert set(record) == {"id", "categories", "input", "output", "harness"}
    assert textwrap.dedent(made_up.COMPOSE).startswith("services:")
