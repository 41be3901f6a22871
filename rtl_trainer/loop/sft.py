"""Supervised warm start: teach a model the answer format (and, for tiny models, the answers).

Examples are the environments' own chat messages followed by an assistant answer, written
the way the prompt asks (one fenced block, or the JSON shape for several files): the
problem's reference solution (``sft_source="reference"``), or one of the bundled problems'
known-wrong candidates (``sft_source="candidate:functional_bug"``), or a mixture of sources
with repeat counts (``"3*candidate:functional_bug+reference"``): a student that mostly writes
plausible but wrong RTL and only sometimes the right design, a deliberately weak start.
"""

from __future__ import annotations

import random
import re
import time
from typing import Any

from rich.console import Console
from tinker import types

from cvdp_gym.data.problems import Problem
from cvdp_gym.envs.prompts import answer_text
from rtl_trainer.backends import is_saved_state
from rtl_trainer.backends.base import ServiceClient, TrainingClient
from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import ConfigError
from rtl_trainer.loop.envs import make_env_factory, problem_ids
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.losses import check_datum, sft_datum
from rtl_trainer.rendering import get_renderer
from rtl_trainer.tracking import Tracking


def strip_comments(text: str) -> str:
    """Verilog without comments and blank lines: shorter answers for tiny models to learn.

    ``//`` inside a string literal is kept; block comments are removed whole.
    """
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    lines = []
    for line in text.splitlines():
        in_string = False
        for i, ch in enumerate(line):
            if ch == '"':
                in_string = not in_string
            elif not in_string and line.startswith("//", i):
                line = line[:i]
                break
        if line.strip():
            lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


def reference_answer(problem: Problem, *, minify: bool = False) -> str:
    """The reference solution as the official prompt asks for it (optionally without comments)."""
    assert problem.reference is not None
    return _answer(problem, problem.reference, minify)


def _answer(problem: Problem, files: dict[str, str], minify: bool) -> str:
    return answer_text(problem, {p: strip_comments(t) if minify else t for p, t in files.items()})


def _sources(spec: str) -> list[str]:
    """``"3*a+b"`` -> ``["a", "a", "a", "b"]``."""
    out: list[str] = []
    for part in spec.split("+"):
        count, _, name = part.strip().rpartition("*")
        if count and not count.isdigit():
            raise ConfigError(f"sft_source part {part!r}: expected COUNT*SOURCE")
        out += [name.strip()] * (int(count) if count else 1)
    return out


def _answers(source: str, sft_strip_comments: bool, problems: list[Problem]) -> dict[str, str]:
    """problem id -> the answer to train on, from one source."""
    if source == "reference":
        return {
            p.id: reference_answer(p, minify=sft_strip_comments) for p in problems if p.reference is not None
        }
    if source.startswith("candidate:"):
        from cvdp_gym.data.bundle import bundled_candidates

        name = source.split(":", 1)[1]
        wanted = {p.id: p for p in problems}
        found = {c.problem_id: c for c in bundled_candidates() if c.name == name and c.problem_id in wanted}
        if not found:
            raise ConfigError(f"no bundled candidate named {name!r} for the training problems")
        return {pid: _answer(wanted[pid], c.files, sft_strip_comments) for pid, c in found.items()}
    raise ConfigError(f"sft_source must be 'reference' or 'candidate:NAME' (or COUNT*SOURCE+...), not {source!r}")


def supervised_examples(config: TrainConfig, renderer: Any) -> list[tuple[str, list[int], list[float]]]:
    """``(problem_id, tokens, weights)`` for every training problem with an answer from
    ``config.sft_source``."""
    env = make_env_factory(config, cache=False)()
    try:
        ids = set(problem_ids(env, config))
        problems = [p for p in env.unwrapped.problems if p.id in ids]
        examples = []
        for source in _sources(config.sft_source):
            answers = _answers(source, config.sft_strip_comments, problems)
            for problem in problems:
                answer = answers.get(problem.id)
                if answer is None:
                    continue
                _, info = env.reset(options={"problem_id": problem.id})
                messages = [*info["messages"], {"role": "assistant", "content": answer}]
                tokens, weights = renderer.build_supervised_example(messages)
                tokens, weights = _truncate_prompt(tokens, weights, config.max_prompt_tokens)
                examples.append((problem.id, tokens, weights))
    finally:
        env.close()
    if not examples:
        raise ConfigError(f"no training problem has an answer from sft_source={config.sft_source!r}")
    return examples


def _truncate_prompt(tokens: list[int], weights: list[float], limit: int | None) -> tuple[list[int], list[float]]:
    """Keep at most ``limit`` prompt tokens before the answer (as sampling prompts are cut)."""
    if not limit:
        return tokens, weights
    first = next((i for i, w in enumerate(weights) if w > 0), len(tokens))
    cut = max(0, first - limit)
    return tokens[cut:], weights[cut:]


def run_sft(
    config: TrainConfig,
    service: ServiceClient,
    *,
    console: Console | None = None,
    resume: bool = False,
    training: TrainingClient | None = None,
) -> tuple[TrainingClient, RunLog]:
    """``config.steps`` optimiser steps of cross-entropy on the examples, in ``batch_size`` batches."""
    console = console or Console()
    log = RunLog(config.run_dir)
    tracking = Tracking.open(config, log, resume=resume, console=console)
    failed = True
    try:
        training = _sft_steps(config, service, log, tracking, console, resume, training)
        failed = False
    finally:
        tracking.close(failed=failed)
    return training, log


def _sft_steps(
    config: TrainConfig,
    service: ServiceClient,
    log: RunLog,
    tracking: Tracking,
    console: Console,
    resume: bool,
    training: TrainingClient | None,
) -> TrainingClient:
    start = 0
    if training is None:
        checkpoint = log.resume_point() if resume else None
        if checkpoint is not None:
            training = service.create_training_client_from_state_with_optimizer(checkpoint["state_path"])
            start = checkpoint["step"] + 1
        else:
            log.write_config(config.to_json())
            if is_saved_state(config.student):  # continue from a run's checkpoint (fresh optimiser), as RL does
                training = service.create_training_client_from_state(config.student)
            else:
                training = service.create_lora_training_client(config.student, rank=config.lora_rank)
    renderer = get_renderer(config.renderer or config.student, training.get_tokenizer())
    examples = supervised_examples(config, renderer)
    rng = random.Random(config.seed)
    order: list[int] = []
    for step in range(start, config.steps):
        t0 = time.monotonic()
        batch = []
        while len(batch) < min(config.batch_size, len(examples)):
            if not order:
                order = list(range(len(examples)))
                rng.shuffle(order)
            batch.append(examples[order.pop()])
        datums = []
        for _, tokens, weights in batch:
            datum = sft_datum(tokens, weights)
            check_datum(datum, "cross_entropy")
            datums.append(datum)
        fb = training.forward_backward(datums, "cross_entropy")
        opt = training.optim_step(types.AdamParams(learning_rate=config.lr_at(step)))
        result = fb.result()
        opt.result()
        trained = sum(sum(w > 0 for w in weights) for _, _, weights in batch)
        loss = result.metrics.get("loss:sum", 0.0) / max(1, trained)
        tracking.log_metrics(step, {"train/loss_per_token": loss, "tokens/trained": trained, "time/train": time.monotonic() - t0})
        last = step == config.steps - 1
        if (config.save_every and (step + 1) % config.save_every == 0) or last:
            state = training.save_state(f"sft{step:05d}").result()
            log.log_checkpoint(step, state_path=state.path)
            tracking.log_checkpoint(step, state.path, final=last)
        if step % 10 == 0 or step == config.steps - 1:
            console.print(f"sft step {step}: loss/token {loss:.4f}")
    return training
