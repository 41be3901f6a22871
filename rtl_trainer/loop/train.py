"""The training loop for RL and on-policy distillation, written against Tinker's interfaces.

One step: pick ``groups_per_step`` problems; sample ``group_size`` answers to each from
the current student weights and grade them through the environment (overlapped); ask the
teacher for log-probabilities of the sampled tokens (distillation); turn rewards into
per-token advantages (reward − group mean, plus −λ·(log p_student − log p_teacher));
submit ``forward_backward`` and ``optim_step`` back to back; refresh the sampler. With
``num_minibatches`` N > 1 the groups reach training as they finish grading (in the step's
order, so the minibatches do not depend on which finishes first), and every
``groups_per_step / N`` of them are submitted to ``forward_backward`` at once while the
others still grade (``loop.stream``); the step's one ``optim_step`` follows the last.

Answers whose grading failed for reasons not theirs (``info["infra_failure"]``, re-graded
once by the rollouts) are left out of their group's mean and std and get no datum; when
more than ``max_infra_frac`` of a step's answers failed so, the run stops with an
``InfrastructureError`` after writing that step's metrics and a checkpoint. The check needs
the whole step, so with streaming it runs once the last group is in, before the last
minibatch and the ``optim_step``: minibatches already submitted are never applied.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from rich.console import Console
from tinker import types

from rtl_trainer.backends import is_saved_state
from rtl_trainer.backends.base import SamplingClient, ServiceClient, TrainingClient
from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import InfrastructureError
from rtl_trainer.loop import curriculum
from rtl_trainer.loop.envs import (
    grade_executor_for,
    grading_threads,
    is_multi_turn,
    make_env_factory,
    problem_ids,
    sampling_params,
)
from rtl_trainer.loop.evaluate import evaluate
from rtl_trainer.loop.metrics import group_outcomes, infra_metrics, late_metrics, rollout_metrics
from rtl_trainer.loop.objective import TeacherScore, step_datums, teacher_score
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.loop.stream import GroupStream, Minibatches
from rtl_trainer.loop.teachers import Teacher, TeacherRouter, load_teachers
from rtl_trainer.rendering import get_renderer
from rtl_trainer.rollouts import (
    EnvPool,
    Group,
    RolloutTiming,
    Turn,
    collect_multi_turn,
    collect_single_turn,
)
from rtl_trainer.teacher_rules import parse_rules, unused_rules
from rtl_trainer.tracking import JsonlLogger, Tracking

#: Token counts logged per step (and as running totals), by the price key that bills them.
TOKEN_METRICS = {
    "sample": "tokens/sampled",
    "prefill": "tokens/prompt",
    "train": "tokens/trained",
    "teacher_prefill": "tokens/teacher",
}


@dataclass
class Batch:
    """One step's graded rollouts, the sampler (weights ``version``) that drew them, and
    (distillation) the teacher's scoring of each turn, started as it arrived, by ``id(turn)``."""

    version: int
    sampler: SamplingClient
    groups: list[Group]
    timing: RolloutTiming
    teacher_scores: dict[int, Future[TeacherScore]] | None
    #: The problem sampler's state after observing this batch, and its metrics.
    sampler_state: dict[str, Any] | None = None
    sampler_metrics: dict[str, float] | None = None


@dataclass
class Collection:
    """Step ``step``'s rollouts, being collected on the producer thread with the weights of
    ``version``: the future ``Batch`` and, with ``num_minibatches`` > 1, the stream of its
    groups as they finish (teacher scores, by ``id(turn)``, fill in as turns arrive)."""

    step: int
    version: int
    sampler: SamplingClient
    teacher_scores: dict[int, Future[TeacherScore]] | None
    stream: GroupStream | None
    batch: Future[Batch] = field(init=False)


class Trainer:
    """Runs RL or on-policy distillation for ``config.steps`` steps in ``config.run_dir``."""

    def __init__(
        self,
        config: TrainConfig,
        service: ServiceClient,
        *,
        console: Console | None = None,
        make_env: Callable[[], gym.Env] | None = None,
    ) -> None:
        config.validate()
        self.config = config
        self.service = service
        self.console = console or Console()
        self.log = RunLog(config.run_dir)
        #: The run's loggers: ``metrics.jsonl`` until ``run`` opens those of ``log_to``.
        self.tracking = Tracking(config, self.log, [JsonlLogger(self.log)], console=self.console)
        self.executor = None if make_env is not None else grade_executor_for(config)
        self.make_env = make_env or make_env_factory(config, executor=self.executor)
        self.grade_threads = grading_threads(config, self.executor)
        self.agentic = is_multi_turn(config.env)
        self.problem_sampler: curriculum.ProblemSampler | None = None
        self.teachers: TeacherRouter | None = None
        self._totals: dict[str, float] = {}
        self._student_tokenizer: Any = None
        self._renderer: Any = None

    # -- setup -------------------------------------------------------------------------
    def _training_client(self, resume: bool) -> tuple[TrainingClient, int]:
        checkpoint = self.log.resume_point() if resume else None
        if checkpoint is not None:
            client = self.service.create_training_client_from_state_with_optimizer(checkpoint["state_path"])
            self.console.print(f"resuming after step {checkpoint['step']} from {checkpoint['state_path']}")
            return client, checkpoint["step"] + 1
        self.log.write_config(self.config.to_json())
        student = self.config.student
        if is_saved_state(student):
            return self.service.create_training_client_from_state(student), 0
        return self.service.create_lora_training_client(student, rank=self.config.lora_rank), 0

    def _teachers(self, problems: list[Any]) -> TeacherRouter | None:
        """The teacher of each problem (distillation): ``teachers`` rules, then ``teacher``."""
        cfg = self.config
        if cfg.mode != "distill" or not (cfg.teacher or cfg.teachers):
            return None
        rules = parse_rules(cfg.teachers)
        for name in unused_rules(problems, rules):
            self.console.print(f"[yellow]warning:[/] teachers rule {name!r} matches none of this run's problems")
        router = load_teachers(
            self.service, problems, rules=rules, default_model=cfg.teacher, default_renderer=cfg.teacher_renderer,
            student_tokenizer=self._student_tokenizer,
        )
        if router.several:
            counts = {n: sum(1 for t in router.assignment().values() if t == n) for n in router.teachers}
            self.console.print("teachers: " + ", ".join(f"{n} ({c} problems)" for n, c in counts.items()))
        return router

    # -- the loop ----------------------------------------------------------------------
    def run(self, *, resume: bool = False) -> RunLog:
        """Train from step 0 (or after the last checkpoint with ``resume``) to ``steps``.

        With ``max_steps_off_policy`` = k > 0 the rollouts of the next k steps are sampled
        and graded on a producer thread while this step scores and trains, each with the
        newest weights at the time it starts; a batch is at most k steps stale. Streaming
        minibatches combine with it: a step's groups that were graded ahead of it train at
        once, the others as they finish.
        """
        cfg = self.config
        for note in cfg.warnings():
            self.console.print(f"[yellow]warning:[/] {note}")
        # Trackers first: a missing library or a refused run fails before any model loads.
        self.tracking = Tracking.open(cfg, self.log, resume=resume, console=self.console)
        failed = True
        try:
            log = self._run(resume)
            failed = False
        finally:
            self.tracking.close(failed=failed)
        return log

    def _run(self, resume: bool) -> RunLog:
        cfg = self.config
        training, start = self._training_client(resume)
        self._student_tokenizer = training.get_tokenizer()
        renderer = self._renderer = get_renderer(cfg.renderer or cfg.student, self._student_tokenizer)
        probe = self.make_env()
        ids = problem_ids(probe, cfg)
        self.teachers = self._teachers([p for p in probe.unwrapped.problems if p.id in set(ids)])
        difficulties = {p.id: p.difficulty for p in probe.unwrapped.problems}
        self.problem_sampler = curriculum.make_problem_sampler(cfg, ids, difficulties)
        saved = curriculum.load_state(cfg.run_dir, start) if start else None
        if saved:
            self.problem_sampler.load_state(saved)
        pool = None if self.agentic else EnvPool(self.make_env, self.grade_threads)
        probe.close()
        self._totals = self._previous_totals(start)
        sampler = training.save_weights_and_get_sampling_client(f"step{start:05d}")
        producer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollouts")
        scorer = ThreadPoolExecutor(max_workers=max(1, cfg.teacher_workers), thread_name_prefix="teacher")
        pending: deque[Collection] = deque()
        submitted = start
        try:
            for step in range(start, cfg.steps):
                while submitted < cfg.steps and submitted <= step + cfg.max_steps_off_policy:
                    collection = Collection(
                        submitted, step, sampler, {} if self.teachers is not None else None,
                        GroupStream() if cfg.num_minibatches > 1 else None,
                    )
                    collection.batch = producer.submit(
                        self._collect, collection, renderer, pool, scorer,
                    )
                    pending.append(collection)
                    submitted += 1
                blocked_from = time.monotonic()
                collection = pending.popleft()
                if collection.stream is None:
                    sampler = self._train_step(step, collection.batch.result(), blocked_from, training)
                else:
                    sampler = self._train_streamed(step, collection, blocked_from, training)
        finally:
            for collection in pending:
                collection.batch.cancel()
            producer.shutdown(wait=True, cancel_futures=True)
            scorer.shutdown(wait=True, cancel_futures=True)
            if pool is not None:
                pool.close()
            if self.executor is not None:
                self.executor.close()
        return self.log

    def _collect(self, c: Collection, renderer, pool, scorer) -> Batch:
        """Sample and grade step ``c.step``'s groups with the weights of ``c.version``;
        teacher scoring of each sample starts as soon as it arrives, while grading runs, and
        each graded group goes to ``c.stream`` (closed when this returns or fails)."""
        cfg = self.config
        assert self.problem_sampler is not None
        try:
            chosen = self.problem_sampler.choose(c.step)
            params = sampling_params(cfg, renderer, seed=cfg.seed * 100_003 + c.step)
            scores, on_turn, teachers = c.teacher_scores, None, self.teachers
            if scores is not None and teachers is not None:

                def on_turn(problem_id: str, turn: Turn) -> None:
                    scores[id(turn)] = scorer.submit(self._teacher_logprobs, turn, teachers.for_problem(problem_id))
            on_group = c.stream.put if c.stream is not None else None
            if self.agentic:
                groups, timing = collect_multi_turn(
                    chosen, make_env=self.make_env, sampler=c.sampler, renderer=renderer,
                    group_size=cfg.group_size, sampling_params=params, workers=cfg.grade_workers,
                    max_prompt_tokens=cfg.max_prompt_tokens, timeout_s=cfg.rollout_timeout_s, on_turn=on_turn,
                    on_group=on_group,
                )
            else:
                groups, timing = collect_single_turn(
                    chosen, sampler=c.sampler, renderer=renderer, pool=pool, group_size=cfg.group_size,
                    sampling_params=params, grade_workers=self.grade_threads,
                    max_prompt_tokens=cfg.max_prompt_tokens, timeout_s=cfg.rollout_timeout_s, on_turn=on_turn,
                    grade_deadline_s=cfg.grade_deadline_s, late_answers=cfg.late_answers, on_group=on_group,
                )
            outcomes = group_outcomes(groups)
            self.problem_sampler.observe(c.step, outcomes)
            sampler_metrics = {**curriculum.by_group_metrics(outcomes), **self.problem_sampler.metrics()}
            return Batch(c.version, c.sampler, groups, timing, scores, self.problem_sampler.state(), sampler_metrics)
        finally:
            if c.stream is not None:
                c.stream.close()

    def _minibatches(
        self, training: TrainingClient, sampler: SamplingClient, scores: dict[int, Future[TeacherScore]] | None
    ) -> Minibatches:
        cfg = self.config
        clip = {"clip_low_threshold": cfg.ppo_clip, "clip_high_threshold": cfg.ppo_clip} if cfg.loss == "ppo" else None
        return Minibatches(training, lambda groups: step_datums(cfg, groups, sampler, scores), cfg.loss, clip)

    def _train_streamed(self, step: int, c: Collection, blocked_from: float, training: TrainingClient) -> SamplingClient:
        """Train ``step`` on its groups as they finish grading: each ``groups_per_step /
        num_minibatches`` of them go to ``forward_backward`` at once; the last minibatch
        waits for the whole step, which ``_train_step`` checks for infrastructure first."""
        cfg = self.config
        size = cfg.groups_per_step // cfg.num_minibatches
        minibatches = self._minibatches(training, c.sampler, c.teacher_scores)
        held: list[Group] = []
        sent = 0
        assert c.stream is not None
        for group in c.stream:
            held.append(group)
            if len(held) == size and sent < cfg.num_minibatches - 1:
                minibatches.add(held)
                held, sent = [], sent + 1
        return self._train_step(step, c.batch.result(), blocked_from, training, minibatches, held)

    def _train_step(
        self, step: int, batch: Batch, blocked_from: float, training: TrainingClient,
        minibatches: Minibatches | None = None, rest: list[Group] | None = None,
    ) -> SamplingClient:
        """Train on the step (``rest``: its groups not yet in one of ``minibatches``' calls;
        without streaming, all of them), apply one ``optim_step``, log and checkpoint;
        returns a sampler of the new weights. Over ``max_infra_frac`` it stops instead."""
        cfg = self.config
        infra = infra_metrics(batch.groups)
        if infra["grade/infra_frac"] > cfg.max_infra_frac:
            self._stop_for_infrastructure(step, batch, infra, training)
        if minibatches is None:
            minibatches, rest = self._minibatches(training, batch.sampler, batch.teacher_scores), batch.groups
        t_train, scored_before = time.monotonic(), minibatches.score_s
        minibatches.add(rest or [])
        train_metrics = minibatches.finish(types.AdamParams(learning_rate=cfg.lr_at(step)))
        sampler = training.save_weights_and_get_sampling_client(f"step{step + 1:05d}")
        # Training the step still waited for once all of it was in (its scoring apart).
        train_s = time.monotonic() - t_train - (minibatches.score_s - scored_before)
        step_s = time.monotonic() - blocked_from
        timing = batch.timing
        grade_wait = timing.grade_wait_after(blocked_from)
        datums = minibatches.datums
        metrics = {
            **rollout_metrics(batch.groups),
            **(batch.sampler_metrics or {}),
            **minibatches.stats.metrics(per_teacher=bool(cfg.teachers)),
            **train_metrics,
            **self._accounting(batch, datums),
            "datums": len(datums),
            "off_policy/staleness": step - batch.version,
            "time/sample": timing.sample_s,
            "time/grade": timing.grade_s,
            "time/grade_wait": grade_wait,
            "time/score": minibatches.score_s,  # waiting on teacher scores and recomputed log-probs
            "time/train": train_s,
            "time/step": step_s,
            "time/grade_wait_share": grade_wait / step_s if step_s else 0.0,
            **minibatches.overlap_metrics(timing.graded_at),
            **late_metrics(batch.groups),
            **infra,
        }
        if cfg.eval_every and (step + 1) % cfg.eval_every == 0:
            metrics.update(self._periodic_eval(sampler))
        self.tracking.log_metrics(step, metrics)
        summaries = [r.summary() for g in batch.groups for r in g.rollouts]
        self.log.log_rollouts(step, summaries)
        self.tracking.log_samples(step, summaries)
        if batch.sampler_state is not None:
            curriculum.save_state(cfg.run_dir, step, batch.sampler_state)
        last = step == cfg.steps - 1
        if (cfg.save_every and (step + 1) % cfg.save_every == 0) or last:
            state = training.save_state(f"step{step:05d}").result()
            self.log.log_checkpoint(step, state_path=state.path)
            self.tracking.log_checkpoint(step, state.path, final=last)
        self.console.print(
            f"step {step}: reward {metrics['env/all/reward/total']:.3f}, pass {metrics['env/all/pass_rate']:.2f}, "
            + (f"teacher_kl {metrics['teacher_kl']:.3f}, " if "teacher_kl" in metrics else "")
            + f"{step_s:.1f} s (sample {timing.sample_s:.1f}, grade wait {grade_wait:.1f}, "
            + f"score {minibatches.score_s:.1f}, train {train_s:.1f})"
        )
        return sampler

    def _periodic_eval(self, sampler: SamplingClient) -> dict[str, float]:
        """``eval_samples`` answers to each of the run's problems from the weights ``sampler``
        holds, graded in the run's environments: the ``eval/`` metrics of the step."""
        cfg = self.config
        t_eval = time.monotonic()
        report = evaluate(cfg, sampler, self._renderer, samples=cfg.eval_samples, make_env=self.make_env)
        return {
            "eval/pass_rate": report["pass_rate"],
            "eval/mean_reward": report["mean_reward"],
            "eval/samples": report["samples"],
            "time/eval": time.monotonic() - t_eval,
        }

    def _stop_for_infrastructure(
        self, step: int, batch: Batch, infra: dict[str, float], training: TrainingClient
    ) -> None:
        """Write what ``step`` found (metrics, rollouts) and a checkpoint of the weights
        trained so far, then raise ``InfrastructureError``: this step is not trained on, and
        ``--resume`` redoes it from that checkpoint."""
        cfg = self.config
        self.tracking.log_metrics(step, {
            **rollout_metrics(batch.groups), **late_metrics(batch.groups), **infra, "datums": 0, "stopped": 1,
        })
        self.log.log_rollouts(step, [r.summary() for g in batch.groups for r in g.rollouts])
        saved = self.log.last_checkpoint()
        if step > 0 and (saved is None or saved["step"] < step - 1):
            state = training.save_state(f"step{step - 1:05d}").result()
            self.log.log_checkpoint(step - 1, state_path=state.path)
        failed = [r for g in batch.groups for r in g.rollouts if r.infra_failed]
        reasons = sorted({str(r.error or r.info.get("reason") or r.info.get("failure_class")) for r in failed})
        raise InfrastructureError(
            f"step {step}: {len(failed)} of {sum(len(g.rollouts) for g in batch.groups)} answers could not be "
            f"graded for reasons not theirs (share {infra['grade/infra_frac']:.2f} > max_infra_frac "
            f"{cfg.max_infra_frac}), even after a re-grade; e.g. {'; '.join(reasons[:3])}. "
            f"Metrics and checkpoints so far are in {cfg.run_dir}: fix the grading machine "
            f"(cvdp-gym doctor) and continue with --resume."
        )

    # -- accounting --------------------------------------------------------------------
    def _previous_totals(self, start: int) -> dict[str, float]:
        """Running totals up to ``start`` (from metrics.jsonl when resuming)."""
        rows = [r for r in self.log.metrics() if r.get("step", -1) < start]
        last = rows[-1] if rows else {}
        return {k: float(v) for k, v in last.items() if k.startswith(("total/", "cost/total"))}

    def _accounting(self, batch: Batch, datums: list[types.Datum]) -> dict[str, float]:
        """Tokens this step sent through each billed path, running totals, and (with
        ``prices``) an estimated cost."""
        turns = [t for g in batch.groups for r in g.rollouts for t in r.turns]
        scores = (batch.teacher_scores or {}).values()
        # price key -> tokens this step
        step_tokens = {
            "sample": float(sum(len(t.completion_tokens) for t in turns)),
            "prefill": float(sum(len(t.prompt_tokens) for t in turns)),
            "train": float(sum(d.model_input.length for d in datums)),
            "teacher_prefill": float(sum(f.result().tokens for f in scores)),
        }
        out: dict[str, float] = {}
        for key, value in step_tokens.items():
            name = TOKEN_METRICS[key]
            out[name] = value
            self._totals[f"total/{name}"] = self._totals.get(f"total/{name}", 0.0) + value
        out.update({k: v for k, v in self._totals.items() if k.startswith("total/")})
        prices = self.config.prices
        if prices:
            cost = sum(step_tokens[k] * prices.get(k, 0.0) / 1e6 for k in step_tokens)
            self._totals["cost/total_usd"] = self._totals.get("cost/total_usd", 0.0) + cost
            out["cost/step_usd"] = cost
            out["cost/total_usd"] = self._totals["cost/total_usd"]
        return out

    # -- objective (rtl_trainer.loop.objective) ---------------------------------------
    def training_data(
        self,
        groups: list[Group],
        sampler: SamplingClient,
        teacher_scores: dict[int, Future[TeacherScore]] | None,
    ) -> tuple[list[types.Datum], dict[str, float]]:
        """Datums for the loss, and teacher-KL statistics of the samples (``step_datums``)."""
        datums, stats = step_datums(self.config, groups, sampler, teacher_scores)
        return datums, stats.metrics(per_teacher=bool(self.config.teachers))

    def _teacher_logprobs(self, turn: Turn, teacher: Teacher) -> TeacherScore:
        """The scoring of one sampled turn by its problem's teacher (on the scorer threads)."""
        return teacher_score(self.config, teacher.aligner, turn, teacher.client, teacher.renderer, teacher.name)
