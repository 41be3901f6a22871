"""Per-step metrics of a batch of rollouts (names as tinker-cookbook logs them)."""

from __future__ import annotations

from rtl_trainer.loop import curriculum
from rtl_trainer.rollouts import LATE, Group, Rollout


def group_outcomes(groups: list[Group]) -> list[curriculum.GroupOutcome]:
    """Each group's class (mixed, all-good, all-bad) over its scored, not excluded samples."""
    out = []
    for group in groups:
        scored = [r for r in group.rollouts if not r.excluded]
        out.append(curriculum.classify_group(
            group.problem_id, [r.reward for r in scored], [bool(r.info.get("passed")) for r in scored]
        ))
    return out


def late_metrics(groups: list[Group]) -> dict[str, float]:
    """Answers not graded by the step's grading deadline (dropped or scored ``timeout``)."""
    rollouts = [r for g in groups for r in g.rollouts]
    late = sum(bool(r.info.get("late")) for r in rollouts)
    return {"grade/late": late, "grade/late_frac": late / len(rollouts) if rollouts else 0.0}


def infra_metrics(groups: list[Group]) -> dict[str, float]:
    """Answers whose grading failed for reasons not theirs, after one retry (left out of
    their group: ``Rollout.infra_failed``), their share of the step's rollouts, and how
    many answers were graded a second time."""
    rollouts = [r for g in groups for r in g.rollouts]
    failed = sum(r.infra_failed for r in rollouts)
    return {
        "grade/infra_failed": failed,
        "grade/infra_frac": failed / len(rollouts) if rollouts else 0.0,
        "grade/infra_retried": sum(r.retried for r in rollouts),
    }


def rollout_metrics(groups: list[Group]) -> dict[str, float]:
    """Per-step environment metrics (names as tinker-cookbook logs them)."""
    rollouts: list[Rollout] = [r for g in groups for r in g.rollouts]
    scored = [r for r in rollouts if r.error is None and not r.infra_failed]
    n = max(1, len(scored))

    def stage_rate(name: str) -> float:
        return sum(bool(r.info.get("stages", {}).get(name, {}).get("passed")) for r in scored) / n

    logprobs = [lp for r in rollouts for t in r.turns for lp in t.completion_logprobs]
    return {
        "env/all/reward/total": sum(r.reward for r in scored) / n,
        "env/all/format_rate": stage_rate("format"),
        "env/all/syntax_rate": stage_rate("syntax"),
        "env/all/interface_rate": stage_rate("interface"),
        "env/all/pass_rate": sum(bool(r.info.get("passed")) for r in scored) / n,
        "env/all/excluded": sum(r.excluded for r in rollouts),
        "env/all/errors": sum(r.error is not None and r.error != LATE for r in rollouts),
        "rollouts": len(rollouts),
        "entropy": -sum(logprobs) / len(logprobs) if logprobs else 0.0,
    }


