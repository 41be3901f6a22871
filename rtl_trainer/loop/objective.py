"""A step's objective: graded groups become datums for the loss.

Advantage = ``reward_coef`` × (reward − group mean) (options: divide by the group's std,
drop constant groups), plus in distillation −λ·(log p_student − log p_teacher) per sampled token. The
advantages are per group, so datums built a few groups at a time (streaming minibatches)
are the datums of the whole step; ``DatumStats`` keeps sums so their statistics add up too.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from tinker import types

from rtl_trainer.backends.base import SamplingClient
from rtl_trainer.config import TrainConfig
from rtl_trainer.losses import (
    AlignedLogprobs,
    TeacherAligner,
    check_datum,
    constant_group,
    group_advantages,
    kl_penalty,
    pack_turns,
    teacher_completion_logprobs,
)
from rtl_trainer.losses import Turn as LossTurn
from rtl_trainer.rollouts import Group, Turn


@dataclass
class TeacherScore:
    """The teacher's view of one sampled turn, and the tokens it processed to get it."""

    aligned: AlignedLogprobs
    tokens: int
    #: The name of the teacher that scored it (``teacher_kl/NAME`` with several teachers).
    teacher: str = ""


@dataclass
class DatumStats:
    """Sums behind the per-step datum statistics, so minibatches add up to the step's."""

    groups_dropped: int = 0
    kl_sum: float = 0.0  # teacher KL summed over tokens
    kl_tokens: float = 0.0
    aligned_sum: float = 0.0  # teacher-aligned fraction summed over turns
    aligned_turns: int = 0
    #: teacher name -> [KL summed over its tokens, its tokens]
    by_teacher: dict[str, list[float]] = field(default_factory=dict)

    def __add__(self, other: DatumStats) -> DatumStats:
        by_teacher = {k: list(v) for k, v in self.by_teacher.items()}
        for name, (total, tokens) in other.by_teacher.items():
            mine = by_teacher.setdefault(name, [0.0, 0.0])
            mine[0] += total
            mine[1] += tokens
        return DatumStats(
            self.groups_dropped + other.groups_dropped, self.kl_sum + other.kl_sum,
            self.kl_tokens + other.kl_tokens, self.aligned_sum + other.aligned_sum,
            self.aligned_turns + other.aligned_turns, by_teacher,
        )

    def add_kl(self, teacher: str, kl_per_token: float, tokens: float) -> None:
        self.kl_sum += kl_per_token * tokens
        self.kl_tokens += tokens
        mine = self.by_teacher.setdefault(teacher, [0.0, 0.0])
        mine[0] += kl_per_token * tokens
        mine[1] += tokens

    def metrics(self, *, per_teacher: bool = False) -> dict[str, float]:
        """``groups_dropped``, and (distillation) ``teacher_kl`` per token and
        ``teacher_aligned_fraction`` per turn; with ``per_teacher`` (several teachers)
        ``teacher_kl/NAME``, the KL to each teacher over the tokens of its problems."""
        out: dict[str, float] = {"groups_dropped": self.groups_dropped}
        if self.kl_tokens:
            out["teacher_kl"] = self.kl_sum / self.kl_tokens
        if per_teacher:
            for name, (total, tokens) in sorted(self.by_teacher.items()):
                if tokens:
                    out[f"teacher_kl/{name}"] = total / tokens
        if self.aligned_turns:
            out["teacher_aligned_fraction"] = self.aligned_sum / self.aligned_turns
        return out


def step_datums(
    cfg: TrainConfig,
    groups: list[Group],
    sampler: SamplingClient,
    teacher_scores: dict[int, Future[TeacherScore]] | None,
) -> tuple[list[types.Datum], DatumStats]:
    """Datums for the loss, and the sums behind the teacher-KL statistics.

    ``sampler`` is the one that drew the samples (its log-probs are the behaviour
    policy's); ``teacher_scores`` (distillation) holds the teacher's scoring of each turn,
    by ``id(turn)`` (waited for here). A multi-turn episode becomes one datum when each
    prompt extends the previous prompt and action, and one datum per turn otherwise
    (``pack_turns``).
    """
    datums: list[types.Datum] = []
    stats = DatumStats()
    for group in groups:
        rollouts = [r for r in group.rollouts if not r.excluded and r.turns]
        if not rollouts:
            continue
        rewards = [r.reward for r in rollouts]
        if cfg.drop_constant_groups and constant_group(rewards) and teacher_scores is None:
            stats.groups_dropped += 1
            continue
        advantages = group_advantages(rewards, normalize_std=cfg.normalize_advantages_std)
        advantages = [cfg.reward_coef * a for a in advantages]
        for rollout, advantage in zip(rollouts, advantages, strict=True):
            turns: list[LossTurn] = []
            for turn in rollout.turns:
                n = len(turn.completion_tokens)
                if n == 0:
                    continue
                behaviour, policy = sampler_logprobs(cfg, turn, sampler)
                token_adv = [advantage] * n
                if teacher_scores is not None:
                    score = teacher_scores[id(turn)].result()
                    aligned = score.aligned
                    adjust, kl = kl_penalty(
                        policy, aligned.values, [True] * n,
                        coef=cfg.kl_penalty_coef, discount=cfg.kl_discount_factor,
                    )
                    token_adv = [a + b for a, b in zip(token_adv, adjust, strict=True)]
                    stats.add_kl(score.teacher, kl["teacher_kl"], kl["teacher_kl_tokens"])
                    stats.aligned_sum += aligned.aligned_fraction
                    stats.aligned_turns += 1
                turns.append(LossTurn(turn.prompt_tokens, turn.completion_tokens, behaviour, token_adv))
            for datum in pack_turns(turns):
                check_datum(datum, cfg.loss)
                datums.append(datum)
    return datums, stats


def sampler_logprobs(cfg: TrainConfig, turn: Turn, sampler: SamplingClient) -> tuple[list[float], list[float]]:
    """``(behaviour, policy)`` log-probs of the sampled tokens.

    ``behaviour``: what the sampler reported, the distribution the tokens were really drawn
    from (at the sampling temperature); the importance ratio divides by it, so samples
    drawn below temperature 1 are reweighted to the temperature-1 policy instead of being
    treated as its own. ``policy``: the same weights at temperature 1, which the KL term
    compares with the teacher (recomputed when the temperature was not 1).
    """
    n = len(turn.completion_tokens)
    reported = turn.completion_logprobs if len(turn.completion_logprobs) == n else None
    if reported is not None and cfg.temperature == 1.0:
        return reported, reported
    full = types.ModelInput.from_ints(turn.prompt_tokens + turn.completion_tokens)
    values = sampler.compute_logprobs(full).result()
    policy = [v if v is not None else 0.0 for v in values[-n:]]
    return (reported if reported is not None else policy), policy


def teacher_score(
    cfg: TrainConfig, aligner: TeacherAligner, turn: Turn, teacher: SamplingClient, teacher_renderer: Any,
    name: str = "",
) -> TeacherScore:
    """Teacher log-probs of the student's sampled tokens, scored with the teacher's own
    template; mapped by character spans when the tokenizers differ."""
    prompt = teacher_renderer.build_generation_prompt(turn.messages, tools=turn.tools)
    if cfg.max_prompt_tokens and len(prompt) > cfg.max_prompt_tokens:
        prompt = prompt[-cfg.max_prompt_tokens:]
    plan = aligner.plan(turn.completion_tokens)
    aligned = plan.map(teacher_completion_logprobs(teacher, prompt, plan.teacher_tokens))
    return TeacherScore(aligned, len(prompt) + len(plan.teacher_tokens), name)
