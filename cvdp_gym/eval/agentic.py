"""Agentic evaluation: ``CVDP-Agentic-v0`` episodes driven by an OpenAI-compatible chat endpoint.

Each episode (one sample of one problem) runs in its own environment and sandboxed
workspace; at most ``concurrency`` run at once. The model works in one of two tool modes:

- ``native``: the request offers ``tools`` (execute_bash, finish); the assistant's
  ``tool_calls`` go to the environment as a chat message and each result comes back as a
  ``tool`` message with its ``tool_call_id``;
- ``qwen`` / ``qwen3_coder`` / ``harmony``: for servers without tool support. The system
  message describes the tools and the call syntax of that format; the assistant's text is
  parsed by the environment and the formatted results come back as a user message.

When an episode ends its whole transcript (messages, tool calls, outputs, final diff,
grade) is written to ``transcripts/<id>.<sample>.json``, then its row is appended to
``results.jsonl``, so ``--resume`` never replays a finished episode. An episode cut short
by a failed request or a crash is recorded as ``request_error`` / ``grader_error`` and
played again on resume. A repository-context problem whose repository cannot be found is
not played: each of its samples is recorded as ``unsupported`` with the reason (where the
repository was looked for), and played on a resume that finds it.

``Episode`` and ``play_episodes`` are the episode driver of every multi-turn evaluation
(:mod:`cvdp_gym.eval.refine` subclasses ``Episode`` for ``CVDP-Refine-v0``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cvdp_gym.data import Dataset
from cvdp_gym.data.patch import make_patch
from cvdp_gym.data.problems import Problem
from cvdp_gym.envs.agentic import AgenticEnv
from cvdp_gym.envs.base import CVDPEnvBase
from cvdp_gym.errors import ConfigError
from cvdp_gym.eval.run import (
    GRADER_ERROR,
    REQUEST_ERROR,
    Evaluator,
    failed_grade,
    result_row,
    sample_key,
)
from cvdp_gym.eval.sources import ChatClient, ChatSettings, Completion, RequestFailed
from cvdp_gym.grading.grader import Grader
from cvdp_gym.grading.result import GradeResult
from cvdp_gym.grading.rewards import RewardFn
from cvdp_gym.harness.results import UNSUPPORTED
from cvdp_gym.parsers import ToolCall, format_tool_call, parse_tool_calls

#: How the model calls tools: the server's function calling, or one of the text formats.
TOOL_MODES = ("native", "qwen", "qwen3_coder", "harmony")
NATIVE = "native"
TRANSCRIPTS = "transcripts"
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")

MakeEnv = Callable[[], CVDPEnvBase]
#: Makes one episode to play (tool calls, or a command-line agent): ``(chat, problem, sample)``.
NewEpisode = Callable[["ChatClient", Problem, int], "Episode"]
#: Per-episode transcript fields an agentic episode's results row carries.
EPISODE_ROW_FIELDS = ("tool_mode", "turns", "tool_calls", "malformed_calls", "commands_run", "end_reason", "episode_s")
#: How the reason of a sample left unplayed for want of its repository starts.
REPO_UNAVAILABLE = "repository unavailable"


@dataclass(frozen=True)
class AgenticSettings:
    """How episodes run: tool mode, turn limit, episodes at once, per-command time limit."""

    tool_mode: str = NATIVE
    max_turns: int = 50
    concurrency: int = 8
    command_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if self.tool_mode not in TOOL_MODES:
            raise ConfigError(f"unknown tool mode {self.tool_mode!r}; expected one of {', '.join(TOOL_MODES)}")
        if self.max_turns < 1 or self.concurrency < 1:
            raise ConfigError("max_turns and concurrency must be at least 1")


def playable_problems(problems: list[Problem]) -> tuple[list[Problem], list[str]]:
    """The agentic problems among ``problems``, and a note on those left out; ValueError if none."""
    playable = [p for p in problems if p.agentic]
    if not playable:
        raise ConfigError("--agentic: no agentic problems among the selected ones")
    left_out = len(problems) - len(playable)
    notes = [f"left out {left_out} non-agentic problem(s): --agentic plays agentic ones only"] if left_out else []
    return playable, notes


def env_factory(problems: list[Problem], grader: Grader, reward: RewardFn, settings: AgenticSettings) -> MakeEnv:
    """A maker of environments over ``problems`` that share one grader (one per episode)."""
    dataset = Dataset(list(problems), source="eval")
    tool_format = "auto" if settings.tool_mode == NATIVE else settings.tool_mode

    def make() -> AgenticEnv:
        return AgenticEnv(
            dataset, grader=grader, reward=reward, tool_format=tool_format,
            max_turns=settings.max_turns, command_timeout_s=settings.command_timeout_s,
        )

    return make


def tool_instructions(tools: list[dict[str, Any]], fmt: str) -> str:
    """What a text-mode model is told about the tools: their schemas and the call syntax."""
    schemas = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    example = format_tool_call(ToolCall("execute_bash", {"command": "ls rtl"}), fmt)
    return (
        "# Tools\n\nYou may call these functions (JSON schemas):\n<tools>\n"
        f"{schemas}\n</tools>\n\n"
        "To call one, write the call exactly in this form (several calls per reply are allowed):\n"
        f"{example}\n\n"
        "The results come back in the next message. When the work is done, call finish or "
        "reply without a call."
    )


def opening_messages(info: dict[str, Any], tool_mode: str) -> list[dict[str, Any]]:
    """The episode's first chat messages; text modes get the tool instructions in the system message."""
    messages = [dict(m) for m in info["messages"]]
    if tool_mode != NATIVE:
        messages[0]["content"] = f"{messages[0]['content']}\n\n{tool_instructions(info['tools'], tool_mode)}"
    return messages


def workspace_diff(before: dict[str, str], after: dict[str, str]) -> str:
    """A unified diff of every text file the episode created, changed or deleted."""
    return "".join(
        make_patch(before.get(path, ""), after.get(path, ""), path)
        for path in sorted(set(before) | set(after))
        if before.get(path) != after.get(path)
    )


class AgenticEvaluator(Evaluator):
    """An ``Evaluator`` whose samples are whole episodes (agentic or refine), each with a transcript file."""

    def __init__(self, grader: Grader, reward: RewardFn, out_dir: Path, *, resume: bool = False, on_done: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.transcripts_dir = Path(out_dir) / TRANSCRIPTS
        super().__init__(grader, reward, out_dir, resume=resume, on_done=on_done)

    def _start(self, resume: bool) -> None:
        super()._start(resume)
        if not resume:
            shutil.rmtree(self.transcripts_dir, ignore_errors=True)
        self.transcripts_dir.mkdir(parents=True, exist_ok=True)

    def transcript_path(self, problem_id: str, sample: int) -> Path:
        return self.transcripts_dir / f"{_UNSAFE_NAME.sub('_', problem_id)}.{sample}.json"

    def record_episode(self, problem: Problem, sample: int, transcript: dict[str, Any], grade: GradeResult | None, verdict: str = "", reason: str = "", *, row_fields: tuple[str, ...] = EPISODE_ROW_FIELDS) -> dict[str, Any]:
        """Write the transcript (atomically), then append the episode's row (with the
        transcript's ``row_fields``); return the row."""
        if grade is None:
            grade = failed_grade(problem, verdict, reason)
        path = self.transcript_path(problem.id, sample)
        row = result_row(
            problem, sample, transcript["final_answer"], grade, self.reward,
            **{key: transcript[key] for key in row_fields},
            transcript=str(path.relative_to(self.results_path.parent)),
        )
        stored = grade.to_dict()
        stored.pop("files", None)
        # The files graded, as graded: what ``cvdp-gym debug --run`` lays out again.
        transcript.update(
            verdict=row["verdict"], passed=row["passed"], reward=row["reward"], reason=row["reason"], grade=stored,
            answer_files=dict(grade.files),
        )
        partial = path.with_suffix(".json.part")
        partial.write_text(json.dumps(transcript, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(partial, path)
        return self._finish(row)


class Episode:
    """One agentic episode's conversation with the model and its record.

    Subclasses play other multi-turn environments through the same loop by overriding
    ``_fields``, ``_opening``, ``_log_step`` and ``_finish`` (and ``row_fields``).
    """

    row_fields = EPISODE_ROW_FIELDS

    def __init__(self, ev: AgenticEvaluator, chat: ChatClient, problem: Problem, sample: int, tool_mode: str, **settings: Any) -> None:
        """``settings``: the episode's limits, kept in its record (``max_turns``, ``max_attempts``, ...)."""
        self.ev, self.chat, self.problem, self.sample = ev, chat, problem, sample
        self.tool_mode = tool_mode
        self.env: CVDPEnvBase | None = None
        self.started = time.monotonic()
        self.record: dict[str, Any] = {
            "id": problem.id, "sample": sample, "category": problem.category, "difficulty": problem.difficulty,
            "model": chat.settings.model, "tool_mode": tool_mode, "messages": [], "steps": [], "end_reason": None,
            "final_answer": "", "graded_files": [], "episode_s": 0.0, "error": None,
        }
        self.record.update(self._fields(), **settings)

    def _fields(self) -> dict[str, Any]:
        """The record's fields particular to this kind of episode, at their start values."""
        return {
            "tools": None, "turns": 0, "tool_calls": 0, "malformed_calls": 0,
            "commands_run": 0, "final_diff": "", "patch": None,
        }

    async def run(self, make_env: MakeEnv) -> dict[str, Any]:
        """Play the episode to its end; a failure is recorded, never raised."""
        try:
            self.env = await asyncio.to_thread(make_env)
            grade = await self._play(self.env)
        except RequestFailed as exc:
            return self._failed(REQUEST_ERROR, exc.reason)
        except Exception as exc:  # a crash is this episode's, not the run's
            return self._failed(GRADER_ERROR, f"{type(exc).__name__}: {exc}")
        finally:
            if self.env is not None:
                await asyncio.to_thread(self.env.close)
        self.record["episode_s"] = round(time.monotonic() - self.started, 3)
        return self.ev.record_episode(self.problem, self.sample, self.record, grade, row_fields=self.row_fields)

    def _failed(self, verdict: str, reason: str) -> dict[str, Any]:
        self.record.update(error=reason, episode_s=round(time.monotonic() - self.started, 3))
        return self.ev.record_episode(self.problem, self.sample, self.record, None, verdict, reason, row_fields=self.row_fields)

    def _opening(self, info: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        """The first chat messages and the tools offered with every request (None: no tools)."""
        tools = info["tools"] if self.tool_mode == NATIVE else None
        self.record["tools"] = tools
        return opening_messages(info, self.tool_mode), tools

    async def _play(self, env: CVDPEnvBase) -> GradeResult:
        _, info = await asyncio.to_thread(env.reset, options={"problem_id": self.problem.id})
        native = self.tool_mode == NATIVE
        messages, tools = self._opening(info)
        self.record["messages"] = messages
        while True:
            asked = time.monotonic()
            choices = await self.chat.request(messages, 1, tools=tools)
            if not choices:
                raise RequestFailed("the server returned no choices")
            completion = choices[0]
            answered = time.monotonic()
            assistant, action = self._assistant(completion)
            observation, _, terminated, truncated, info = await asyncio.to_thread(env.step, action)
            messages.append(assistant)
            self._log_step(completion, assistant, info, answered - asked, time.monotonic() - answered)
            if terminated or truncated:
                return await asyncio.to_thread(self._finish, env, info)
            if native:
                messages.extend({"role": "tool", "tool_call_id": m.get("tool_call_id", ""), "content": m["content"]} for m in info["tool_messages"])
            else:
                messages.append({"role": "user", "content": observation})

    def _assistant(self, completion: Completion) -> tuple[dict[str, Any], str | dict[str, Any]]:
        """The assistant message to keep in the conversation, and the environment's action."""
        message: dict[str, Any] = {"role": "assistant", "content": completion.text}
        if self.tool_mode != NATIVE:
            return message, completion.text
        if completion.tool_calls:
            message["tool_calls"] = [dict(c) for c in completion.tool_calls]
        action = dict(message)
        if completion.reasoning:
            action["reasoning_content"] = completion.reasoning
        return message, action

    def _log_step(self, completion: Completion, assistant: dict[str, Any], info: dict[str, Any], request_s: float, step_s: float) -> None:
        if self.tool_mode == NATIVE:
            calls = len(completion.tool_calls)
        else:
            parsed = parse_tool_calls(completion.text, self.tool_mode)
            calls = len(parsed.calls) + len(parsed.errors)
        self.record["tool_calls"] += calls
        self.record.update(
            turns=info["turn"], malformed_calls=info["malformed_calls"], commands_run=info["commands_run"],
            final_answer=completion.text,
        )
        self.record["steps"].append({
            "turn": info["turn"],
            "assistant": assistant,
            "reasoning": completion.reasoning,
            "finish_reason": completion.finish_reason,
            "tool_calls": info["assistant_message"]["tool_calls"],
            "outputs": info["tool_messages"],
            "format": info["format"],
            "cwd": info["cwd"],
            "request_s": round(request_s, 3),
            "step_s": round(step_s, 3),
        })

    def _finish(self, env: CVDPEnvBase, info: dict[str, Any]) -> GradeResult:
        """Collect the end of the episode (in a worker thread, before the workspace goes)."""
        workspace = getattr(env, "workspace", None)
        before, after = workspace.changes() if workspace is not None else ({}, {})
        self.record.update(
            end_reason=info["end_reason"], patch=info["patch"], graded_files=info["graded_files"],
            final_diff=workspace_diff(before, after),
        )
        if self.problem.repo is not None and workspace is not None:
            self.record["workspace_copy"] = workspace.strategy
        grade = env.last_grade
        if grade is None:
            raise RuntimeError("the environment ended the episode without a grade")
        return grade


PlayEpisode = Callable[[ChatClient, Problem, int], Awaitable[dict[str, Any]]]


async def play_episodes(ev: AgenticEvaluator, problems: list[Problem], chat_settings: ChatSettings, samples: int, concurrency: int, play: PlayEpisode, *, client: ChatClient | None = None) -> list[dict[str, Any]]:
    """Play ``samples`` episodes per problem (only those not finished yet), ``concurrency`` at once."""
    slots = asyncio.Semaphore(concurrency)

    async def episode(chat: ChatClient, problem: Problem, sample: int) -> None:
        async with slots:
            await play(chat, problem, sample)

    todo = [(p, s) for p in problems for s in range(samples) if sample_key(p.id, s) not in ev.rows]
    async with client or ChatClient(chat_settings) as chat:
        await asyncio.gather(*(episode(chat, p, s) for p, s in todo))
    return ev.collect((p.id, s) for p in problems for s in range(samples))


async def eval_agentic(ev: AgenticEvaluator, problems: list[Problem], chat_settings: ChatSettings, settings: AgenticSettings, make_env: MakeEnv, samples: int, *, client: ChatClient | None = None) -> list[dict[str, Any]]:
    """Play ``samples`` agentic episodes per problem, ``concurrency`` at once; a repository
    problem whose repository cannot be found is recorded ``unsupported`` without playing."""

    def new_episode(chat: ChatClient, problem: Problem, sample: int) -> Episode:
        return Episode(ev, chat, problem, sample, settings.tool_mode, max_turns=settings.max_turns)

    return await play_agentic(ev, problems, chat_settings, samples, settings.concurrency, settings.tool_mode, new_episode, make_env, client=client)


async def play_agentic(
    ev: AgenticEvaluator, problems: list[Problem], chat_settings: ChatSettings, samples: int, concurrency: int,
    tool_mode: str, new_episode: NewEpisode, make_env: MakeEnv, *, client: ChatClient | None = None,
) -> list[dict[str, Any]]:
    """Play each problem's ``samples`` episodes made by ``new_episode`` (an agentic
    episode's kind: tool calls, or a command-line agent), ``concurrency`` at once; a
    repository problem whose repository cannot be found is recorded ``unsupported``
    (under ``tool_mode``) without playing."""

    def play(chat: ChatClient, problem: Problem, sample: int) -> Awaitable[dict[str, Any]]:
        return new_episode(chat, problem, sample).run(make_env)

    playable = [p for p in problems if not _unplayable(ev, p, samples, chat_settings, tool_mode)]
    await play_episodes(ev, playable, chat_settings, samples, concurrency, play, client=client)
    return ev.collect((p.id, s) for p in problems for s in range(samples))


def _unplayable(ev: AgenticEvaluator, problem: Problem, samples: int, chat_settings: ChatSettings, tool_mode: str) -> bool:
    """Record a repository problem whose repository is missing (each sample not yet done)
    and return True; for one whose repository is found, forget rows of an earlier run that
    lacked it, so that they are played now."""
    if problem.repo is None:
        return False
    runner = getattr(ev.grader, "runner", None)
    missing = runner.repos.missing(problem) if runner is not None else None
    for sample in range(samples):
        key = sample_key(problem.id, sample)
        row = ev.rows.get(key)
        if missing is None:
            if row is not None and str(row.get("reason", "")).startswith(REPO_UNAVAILABLE):
                del ev.rows[key]
        elif row is None:
            episode = Episode(ev, _NoChat(chat_settings), problem, sample, tool_mode)
            episode._failed(UNSUPPORTED, f"{REPO_UNAVAILABLE}: {missing}")
    return missing is not None


class _NoChat:
    """What an episode that is never played needs of a chat client: its settings."""

    def __init__(self, settings: ChatSettings) -> None:
        self.settings = settings
