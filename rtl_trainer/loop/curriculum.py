"""Which problems a step trains on: uniform, a difficulty curriculum, or adaptive sampling.

A group whose rewards are all equal has zero advantage everywhere: it costs sampling and
grading and teaches nothing (RL's reward part; distillation's KL term still applies).
Groups are classed as tinker-cookbook classes them: ``mixed`` (rewards differ),
``all_good`` (equal, and every sample passed) or ``all_bad`` (equal, none passed).

- ``uniform``: ``groups_per_step`` distinct problems drawn at random each step (seeded
  by step): the trainer's original behaviour, unchanged.
- ``difficulty``: easy, then medium, then hard problems (other labels last). The stage
  advances when the pass rate over the last ``curriculum_window`` samples of the current
  stage's problems reaches ``curriculum_threshold``. A stage with fewer problems than
  ``groups_per_step`` is filled from earlier stages, then by drawing its problems again.
- ``adaptive`` (after CodeV-R1): a problem whose last ``adaptive_patience`` groups were
  all all-good or all-bad is skipped for ``adaptive_skip_steps`` steps; problems whose
  last group was mixed are drawn ``adaptive_mixed_weight`` times as often. When too few
  problems are left, the ones whose skip ends soonest fill the step. A skipped problem
  that comes back and is still constant is skipped again after that one group.

Samplers are deterministic given the seed and what they observed; their state is a JSON
object, written each step to ``sampler.jsonl`` in the run directory so ``--resume``
continues the curriculum where the checkpoint left it.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvdp_gym.data.problems import DIFFICULTIES
from cvdp_gym.jsonl import read_objects
from rtl_trainer.errors import ConfigError
from rtl_trainer.losses import constant_group

SAMPLERS = ("uniform", "difficulty", "adaptive")
MIXED, ALL_GOOD, ALL_BAD = "mixed", "all_good", "all_bad"
STATE_FILE = "sampler.jsonl"


@dataclass(frozen=True)
class GroupOutcome:
    """What a step's group of samples of one problem says about that problem."""

    problem_id: str
    kind: str | None  # mixed | all_good | all_bad; None when no sample was scored
    passed: int
    scored: int


def classify_group(problem_id: str, rewards: Sequence[float], passed: Sequence[bool]) -> GroupOutcome:
    """A group's class from its scored samples' rewards and verdicts."""
    if not rewards:
        return GroupOutcome(problem_id, None, 0, 0)
    if not constant_group(rewards) and len(rewards) > 1:
        kind = MIXED
    else:
        kind = ALL_GOOD if all(passed) else ALL_BAD
    return GroupOutcome(problem_id, kind, sum(bool(p) for p in passed), len(rewards))


def by_group_metrics(outcomes: Iterable[GroupOutcome]) -> dict[str, float]:
    """``by_group/frac_mixed``, ``by_group/frac_all_good``, ``by_group/frac_all_bad``."""
    kinds = [o.kind for o in outcomes if o.kind is not None]
    n = max(1, len(kinds))
    return {f"by_group/frac_{kind}": kinds.count(kind) / n for kind in (MIXED, ALL_GOOD, ALL_BAD)}


def step_rng(seed: int, step: int) -> random.Random:
    """The per-step generator the trainer has always drawn problems with."""
    return random.Random(seed * 100_003 + step)


class UniformSampler:
    """``k`` distinct problems at random per step (the trainer's original draw)."""

    name = "uniform"

    def __init__(self, ids: Sequence[str], groups_per_step: int, seed: int) -> None:
        if not ids:
            raise ConfigError("no problems to sample from")
        self.ids = list(ids)
        self.k = min(groups_per_step, len(self.ids))
        self.seed = seed

    def choose(self, step: int) -> list[str]:
        return step_rng(self.seed, step).sample(self.ids, k=self.k)

    def observe(self, step: int, outcomes: Iterable[GroupOutcome]) -> None:
        """Uniform sampling ignores what it sees."""

    def state(self) -> dict[str, Any]:
        return {"sampler": self.name}

    def load_state(self, state: dict[str, Any]) -> None:
        """Nothing to restore."""

    def metrics(self) -> dict[str, float]:
        return {}


class DifficultySampler(UniformSampler):
    """Easy, then medium, then hard; a stage advances on its rolling pass rate."""

    name = "difficulty"

    def __init__(
        self, ids: Sequence[str], groups_per_step: int, seed: int, difficulties: dict[str, str | None], *,
        threshold: float = 0.5, window: int = 32,
    ) -> None:
        super().__init__(ids, groups_per_step, seed)
        labels = sorted({difficulties.get(i) or "unknown" for i in self.ids},
                        key=lambda d: (DIFFICULTIES.index(d) if d in DIFFICULTIES else len(DIFFICULTIES), d))
        self.stages = [[i for i in self.ids if (difficulties.get(i) or "unknown") == label] for label in labels]
        self.labels = labels
        self.threshold = threshold
        self.window = window
        self.stage = 0
        self.recent: list[bool] = []  # verdicts of the current stage's latest samples
        self.advanced_at: list[int] = []  # the step after which each stage advance happened

    def choose(self, step: int) -> list[str]:
        rng = step_rng(self.seed, step)
        pool = self.stages[self.stage]
        chosen = rng.sample(pool, k=min(self.k, len(pool)))
        earlier = [i for stage in self.stages[: self.stage] for i in stage]
        if len(chosen) < self.k and earlier:
            chosen += rng.sample(earlier, k=min(self.k - len(chosen), len(earlier)))
        while len(chosen) < self.k:
            chosen.append(rng.choice(pool))
        return chosen

    def observe(self, step: int, outcomes: Iterable[GroupOutcome]) -> None:
        current = set(self.stages[self.stage])
        for outcome in outcomes:
            if outcome.problem_id in current and outcome.scored:
                self.recent += [True] * outcome.passed + [False] * (outcome.scored - outcome.passed)
        self.recent = self.recent[-self.window:]
        last_stage = self.stage == len(self.stages) - 1
        if not last_stage and len(self.recent) >= self.window and self.pass_rate >= self.threshold:
            self.stage += 1
            self.recent = []
            self.advanced_at.append(step)

    @property
    def pass_rate(self) -> float:
        return sum(self.recent) / len(self.recent) if self.recent else 0.0

    def state(self) -> dict[str, Any]:
        return {"sampler": self.name, "stage": self.stage, "label": self.labels[self.stage],
                "recent": [int(v) for v in self.recent], "advanced_at": list(self.advanced_at)}

    def load_state(self, state: dict[str, Any]) -> None:
        self.stage = min(int(state.get("stage", 0)), len(self.stages) - 1)
        self.recent = [bool(v) for v in state.get("recent", [])][-self.window:]
        self.advanced_at = [int(s) for s in state.get("advanced_at", [])]

    def metrics(self) -> dict[str, float]:
        return {"sampler/stage": float(self.stage), "sampler/stage_pass_rate": self.pass_rate,
                "sampler/stage_samples": float(len(self.recent))}


class AdaptiveSampler(UniformSampler):
    """Skip problems whose recent groups were all-good or all-bad; oversample mixed ones."""

    name = "adaptive"

    def __init__(
        self, ids: Sequence[str], groups_per_step: int, seed: int, *,
        patience: int = 2, skip_steps: int = 4, mixed_weight: float = 3.0,
    ) -> None:
        super().__init__(ids, groups_per_step, seed)
        if patience < 1 or skip_steps < 0 or mixed_weight <= 0:
            raise ConfigError("adaptive sampling needs patience >= 1, skip_steps >= 0 and mixed_weight > 0")
        self.patience = patience
        self.skip_steps = skip_steps
        self.mixed_weight = mixed_weight
        self.history: dict[str, list[str]] = {i: [] for i in self.ids}  # latest group kinds
        self.skip_until: dict[str, int] = {}  # problem -> first step it may be drawn again
        self.skips = 0  # times a problem was put aside
        self.revived = 0  # skipped problems drawn anyway to fill a step

    def skipped(self, step: int) -> list[str]:
        return [i for i in self.ids if self.skip_until.get(i, 0) > step]

    def weight(self, problem_id: str) -> float:
        history = self.history.get(problem_id) or [None]
        return self.mixed_weight if history[-1] == MIXED else 1.0

    def choose(self, step: int) -> list[str]:
        rng = step_rng(self.seed, step)
        sitting_out = self.skipped(step)  # in ids' order: a set's order is the process's hash seed
        skipped = set(sitting_out)
        available = [i for i in self.ids if i not in skipped]
        # Weighted draw without replacement (Efraimidis–Spirakis): the k largest u^(1/w).
        keyed = sorted(available, key=lambda i: -math.log(1.0 - rng.random()) / self.weight(i))
        chosen = keyed[: self.k]
        if len(chosen) < self.k:
            order = sorted(sitting_out, key=lambda i: (self.skip_until[i], rng.random()))
            filler = order[: self.k - len(chosen)]
            self.revived += len(filler)
            chosen += filler
        return chosen

    def observe(self, step: int, outcomes: Iterable[GroupOutcome]) -> None:
        for outcome in outcomes:
            if outcome.kind is None or outcome.problem_id not in self.history:
                continue
            recent = (self.history[outcome.problem_id] + [outcome.kind])[-self.patience:]
            self.history[outcome.problem_id] = recent
            if len(recent) == self.patience and MIXED not in recent:
                self.skip_until[outcome.problem_id] = step + 1 + self.skip_steps
                self.skips += 1

    def state(self) -> dict[str, Any]:
        return {"sampler": self.name, "history": {k: v for k, v in self.history.items() if v},
                "skip_until": dict(self.skip_until), "skips": self.skips, "revived": self.revived}

    def load_state(self, state: dict[str, Any]) -> None:
        for pid, kinds in (state.get("history") or {}).items():
            if pid in self.history:
                self.history[pid] = [str(k) for k in kinds][-self.patience:]
        self.skip_until = {k: int(v) for k, v in (state.get("skip_until") or {}).items() if k in self.history}
        self.skips = int(state.get("skips", 0))
        self.revived = int(state.get("revived", 0))

    def metrics(self) -> dict[str, float]:
        latest = [h[-1] for h in self.history.values() if h]
        return {
            "sampler/skips": float(self.skips),
            "sampler/revived": float(self.revived),
            "sampler/known_mixed": float(latest.count(MIXED)),
            "sampler/known_constant": float(len(latest) - latest.count(MIXED)),
        }


ProblemSampler = UniformSampler  # the interface every sampler implements


def make_problem_sampler(config: Any, ids: Sequence[str], difficulties: dict[str, str | None]) -> ProblemSampler:
    """The sampler ``config.problem_sampler`` names, with its settings from ``config``."""
    kind = config.problem_sampler
    if kind == "uniform":
        return UniformSampler(ids, config.groups_per_step, config.seed)
    if kind == "difficulty":
        return DifficultySampler(ids, config.groups_per_step, config.seed, difficulties,
                                 threshold=config.curriculum_threshold, window=config.curriculum_window)
    if kind == "adaptive":
        return AdaptiveSampler(ids, config.groups_per_step, config.seed, patience=config.adaptive_patience,
                               skip_steps=config.adaptive_skip_steps, mixed_weight=config.adaptive_mixed_weight)
    raise ConfigError(f"problem_sampler must be one of {SAMPLERS}, not {kind!r}")


def save_state(run_dir: str | Path, step: int, state: dict[str, Any]) -> None:
    """Append the sampler's state after ``step`` to ``sampler.jsonl``."""
    with open(Path(run_dir) / STATE_FILE, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"step": step, "state": state}) + "\n")


def load_state(run_dir: str | Path, before_step: int) -> dict[str, Any] | None:
    """The state after the last step before ``before_step`` (a redone step's later line wins)."""
    rows = [r for r in read_objects(Path(run_dir) / STATE_FILE)
            if isinstance(r.get("step"), int) and r["step"] < before_step and isinstance(r.get("state"), dict)]
    latest = None
    for row in rows:
        if latest is None or row["step"] >= latest["step"]:
            latest = row
    return latest["state"] if latest else None
