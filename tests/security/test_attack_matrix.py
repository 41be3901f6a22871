"""The attack matrix (``attack_matrix.py``): every payload in every flow, each under one way of
hiding it, graded for real; and every hiding of every payload in every flow past the gate.

Each (flow, payload) cell plays one hiding, rotating through them so that every hiding is
played somewhere (``scripts/attack_matrix.py`` plays every hiding of every cell and writes the
table in ``docs/security.md``). Each answer rides on its flow's wrong design and must earn
nothing: ``passed`` false and no more reward than the wrong design alone; where the gate must
name it (a payload off the design allowlist, a conditional on a tool's macro, a pragma, an
include outside a one-file answer), ``reach_in`` and no more than a build error.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cvdp_gym.grading.feedback import feedback_text
from cvdp_gym.grading.rewards import FORMAT_REWARD
from tests.security.attack_matrix import (
    FLOWS,
    HIDINGS,
    PAYLOADS,
    Grading,
    answer,
    cells,
    expects_reach_in,
    gate,
    grade,
    plugin_flow,
    rotation,
    settings,
)

CHOSEN = rotation()
DOCS = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def test_the_rotation_plays_every_payload_flow_and_hiding():
    assert {h for _, _, h in CHOSEN} == set(HIDINGS)
    assert {p for _, p, _ in CHOSEN} == set(PAYLOADS) and {f for f, _, _ in CHOSEN} == set(FLOWS)
    assert len(CHOSEN) == len({(f, p) for f, p, _ in cells()})


def test_the_gate_names_every_answer_it_must():
    """Every answer of the full matrix, read by the gate as its flow's grading reads it (the
    flow's own call on its target, then the runner's over every file): named where the payload
    or the hiding is refused. In process, no simulator."""
    missed = [(f, p, h) for f, p, h in cells() if expects_reach_in(f, p, h) and not gate(f, answer(f, p, h)).findings]
    assert not missed


def test_the_documented_matrix_is_the_generated_one():
    """``docs/security.md`` holds the table ``scripts/attack_matrix.py`` wrote for this matrix."""
    text = DOCS.read_text()
    counts = re.search(r"(\d+) cells \(flow × payload\), (\d+) answers, (\d+) rewarded", text)
    assert counts, "run scripts/attack_matrix.py"
    pairs = {(f, p) for f, p, _ in cells()}
    assert (int(counts[1]), int(counts[2]), int(counts[3])) == (len(pairs), len(list(cells())), 0)


@pytest.fixture(scope="module")
def grading(sandbox):
    with plugin_flow():
        yield Grading(sandbox)


@pytest.fixture(scope="module")
def baseline(grading) -> dict[str, float]:
    """Each flow's wrong answer's own reward: what an attack riding on it may not raise."""
    return {flow: grade(grading, flow, settings(flow)[1])[1] for flow in FLOWS}


@pytest.mark.sandbox
@pytest.mark.parametrize(("flow", "payload", "hiding"), CHOSEN, ids=[f"{f}:{p}:{h}" for f, p, h in CHOSEN])
def test_a_hidden_attack_earns_nothing(grading, baseline, flow, payload, hiding):
    result, reward = grade(grading, flow, answer(flow, payload, hiding))
    assert not result.passed and reward <= baseline[flow], (result.failure_class, result.reason)
    if expects_reach_in(flow, payload, hiding):
        assert result.failure_class == "reach_in" and reward <= FORMAT_REWARD, (result.failure_class, result.reason)
        assert "reaches outside itself" in feedback_text(result, settings(flow)[0])
