"""A seeded demo gives the same figures on any machine: the same weights, to the bit, and
the same metrics, whatever the machine's cores (torch's default thread count) and whatever
order the verdicts come back in (a slow grader, a busy machine).

Two runs of the demo's first stages (models, both SFTs, a few distillation steps, streamed
one group a minibatch so the order groups reach training matters too): one on "a one-core
machine" grading at once, one on "a two-core machine" whose grader answers the step's first
problem last.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from rich.console import Console
from safetensors.torch import load_file

from rtl_trainer.demo import DemoSettings, build_models, sft_stage, train_stage
from rtl_trainer.demo.settings import STUDENT_SOURCE
from rtl_trainer.demo.stages import open_demo
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.loop.stream import GroupStream
from rtl_trainer.rollouts import EnvPool

pytestmark = pytest.mark.sandbox

#: Three problems, a few SFT steps (the models must move for rounding to show), two
#: distillation steps of three groups, sixteen-token answers (format failures: nothing
#: simulates, grading is the env's own work and the delays below).
SETTINGS = DemoSettings(
    ids=("cvdp_gym_edge_detector_0001", "cvdp_gym_gray_converter_0001", "cvdp_gym_priority_encoder_0001"),
    teacher_sft_steps=3, student_sft_steps=2, distill_steps=2, rl_steps=0, groups_per_step=3, group_size=2,
    max_tokens=16, eval_samples=1,
)
#: Metrics that are clocks, or how the step overlapped (which the timing decides by design).
TIMING = ("time/", "stream/early_minibatches")


@pytest.fixture
def machine_threads():
    """Put torch's thread count back after a test that plays machines with other cores."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def weights_digest(state: str) -> str:
    digest = hashlib.sha256()
    for file in sorted(Path(state).rglob("*.safetensors")):
        for name, tensor in sorted(load_file(file).items()):
            digest.update(name.encode())
            digest.update(tensor.numpy().tobytes())
    return digest.hexdigest()


def run(out: Path, cores: int, slow_first_s: float, monkeypatch) -> dict[str, Any]:
    """The demo's stages up to distillation on a machine with ``cores`` cores whose grader
    takes ``slow_first_s`` longer on each step's first problem; the weights of every stage,
    the distillation metrics, and the order its groups finished grading in."""
    torch.set_num_threads(cores)  # what torch starts with on such a machine: one per core
    grade, messages = EnvPool.score, EnvPool.messages
    prompts: list[str] = []  # every problem a step asked for, in order

    def score(pool: EnvPool, problem_id: str, text: str, deadline: float | None = None):
        if problem_id == prompts[-1 - (len(prompts) - 1) % SETTINGS.groups_per_step]:  # this step's first
            time.sleep(slow_first_s)
        return grade(pool, problem_id, text, deadline)

    def step_messages(pool: EnvPool, problem_id: str):
        prompts.append(problem_id)
        return messages(pool, problem_id)

    arrived: list[int] = []
    put = GroupStream.put
    monkeypatch.setattr(EnvPool, "score", score)
    monkeypatch.setattr(EnvPool, "messages", step_messages)
    monkeypatch.setattr(GroupStream, "put", lambda stream, group: (arrived.append(group.index), put(stream, group)))
    s, console, out, base = open_demo(out, SETTINGS, Console(quiet=True))
    base = replace(base, num_minibatches=SETTINGS.groups_per_step)  # each group its own forward_backward
    teacher_dir, student_dir = build_models(out, base)
    teacher = sft_stage("teacher-sft", teacher_dir, s.teacher_sft_steps, out, base, s, console)
    weak = sft_stage("student-sft", student_dir, s.student_sft_steps, out, base, s, console, source=STUDENT_SOURCE)
    distilled = train_stage("distill", weak, teacher, student_dir, s.distill_steps, out, base, s, console)
    monkeypatch.undo()
    metrics = [{k: v for k, v in row.items() if not k.startswith(TIMING)} for row in RunLog(out / "distill").metrics()]
    return {
        "weights": {name: weights_digest(state) for name, state in
                    (("teacher", teacher), ("weak", weak), ("distilled", distilled))},
        "metrics": metrics, "arrived": arrived,
    }


def test_a_seeded_demo_trains_the_same_bits_whatever_the_cores_and_the_grading_order(
    tmp_path, toolchain, monkeypatch, machine_threads,
):
    one_core = run(tmp_path / "one", 1, 0.0, monkeypatch)
    two_cores = run(tmp_path / "two", 2, 0.6, monkeypatch)
    # The delays did reorder the verdicts: each step's first group finished last.
    assert two_cores["arrived"] != one_core["arrived"]
    assert two_cores["arrived"][SETTINGS.groups_per_step - 1] == 0
    assert two_cores["weights"] == one_core["weights"]
    assert len(one_core["metrics"]) == SETTINGS.distill_steps and "teacher_kl" in one_core["metrics"][0]
    assert two_cores["metrics"] == one_core["metrics"]
