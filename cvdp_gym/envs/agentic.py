"""``CVDP-Agentic-v0``: a model works in a sandboxed workspace with bash, then is graded."""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cvdp_gym.data import Dataset, Problem
from cvdp_gym.data.patch import PatchError, apply_multi_patch, extract_diff
from cvdp_gym.data.repos import RepoStore
from cvdp_gym.envs.base import CVDPEnvBase
from cvdp_gym.envs.compile_bonus import ERROR_WORD, compiles_a_target
from cvdp_gym.envs.messages import (
    assistant_message,
    call_problem,
    finish_message,
    missing_targets,
    tool_message,
    without_timings,
)
from cvdp_gym.envs.prompts import agent_task, agentic_messages
from cvdp_gym.envs.tools import EXECUTE_BASH_TOOL, FINISH_CALL, FINISH_TOOL
from cvdp_gym.errors import ArgumentTypeError, ConfigError, RepoUnavailable, UsageError
from cvdp_gym.parsers import (
    BASH_TOOL_NAME,
    ParsedTurn,
    format_tool_response,
    parse_assistant_message,
    parse_tool_calls,
)
from cvdp_gym.sandbox import BubblewrapSandbox
from cvdp_gym.sandbox.paths import WORKSPACE_DIRS
from cvdp_gym.sandbox.workspace import (
    MOUNT_POINT,
    CommandResult,
    Workspace,
    WorkspaceError,
    WorkspaceLimits,
)

#: Formats a model's tool calls may take (``auto`` detects each turn's format).
TOOL_FORMATS = ("qwen", "qwen3_coder", "harmony", "auto")
#: Step reward for the first ``iverilog`` command of an episode that compiles a target file
#: cleanly, confirmed by the environment's own compile (``step_reward_shaping=True`` only).
COMPILE_BONUS = 0.05
#: Tool calls run per turn; later ones are skipped with a note (bounds one turn's time).
MAX_CALLS_PER_TURN = 20
#: Default disk quota (MB) of a workspace of context files (``/code`` plus ``/tmp``).
WORKSPACE_MB = 256.0
#: Default disk quota (MB) of what an episode adds to a repository: the official tool's
#: ``DOCKER_QUOTA_THRESHOLD_MB`` (200 since its heavy-problem release).
REPO_WORKSPACE_MB = 200.0
#: The folders a repository problem's workspace gets besides the repository (the official
#: agent container mounts its run folder at ``/code/rundir``).
REPO_WORKSPACE_DIRS = ("rundir",)
def apply_final_diff(workspace: Workspace, targets: list[str], text: str) -> dict[str, Any] | None:
    """Apply the unified diff in an episode's final answer to its workspace, all files or
    none (a diff without file names patches ``targets``); None when the text holds none,
    else ``{"files", "applied", "already_applied", "detail"}`` (``info["patch"]``)."""
    diff = extract_diff(text)
    if not diff:
        return None
    # Read on demand: over a repository, only the files the diff names are read.
    current = workspace.texts()
    try:
        original = apply_multi_patch(workspace.start_texts(), diff, default_paths=targets)
    except PatchError:
        original = None
    if original is not None and all(current.get(p) == t for p, t in original.items()):
        return {"files": sorted(original), "applied": True, "already_applied": True, "detail": "the workspace already holds these changes"}
    try:
        changes = apply_multi_patch(current, diff, default_paths=targets)
        for path, content in changes.items():
            if content is None:
                workspace.delete(path)
            else:
                workspace.write_text(path, content)
    except (PatchError, WorkspaceError, OSError) as exc:
        return {"files": [], "applied": False, "already_applied": False, "detail": str(exc)[:500]}
    return {"files": sorted(changes), "applied": True, "already_applied": False, "detail": ""}


class AgenticEnv(CVDPEnvBase):
    """
    ## Description

    A multi-turn text environment over agentic CVDP problems: the model works in a
    sandboxed workspace with bash, then the workspace is graded. ``reset`` copies the
    problem's context files (``docs/``, ``rtl/``, ``verif/``) into a fresh workspace. Each
    ``step`` takes one assistant turn, parses its tool calls in ``tool_format``
    (:func:`~cvdp_gym.parsers.parse_tool_calls`), runs each ``execute_bash`` command in
    order in the sandbox (files and the working directory persist between commands;
    ``/tmp`` lasts the episode; commands always run in bubblewrap, whatever sandbox grades),
    and returns the tool results rendered for that format. At most ``MAX_CALLS_PER_TURN``
    (20) calls run per turn; later ones are skipped with a note. A turn whose calls are all
    malformed is not an answer: the model is told what was wrong.

    When the episode terminates, a unified diff in the final answer (one or several files,
    with or without ``---/+++`` headers, fenced or not) is applied to the workspace first
    (all files or none). Terminated or truncated, the workspace's target files are then
    graded by the problem's harness (copied in fresh: the agent never sees or touches it)
    and the last step returns the reward.

    Repository-context ("heavy") problems (``problem.repo``: a git repository and commit
    instead of context files) start from the repository's ``external/`` folder at that
    commit (the whole tree for ``_ext_`` repositories), never ``.git`` and never the
    record's golden patch, plus an empty ``rundir/``. The repository is found in the
    ``repos`` folder (``NAME/`` or ``NAME.bundle``; default ``$CVDP_HEAVY_REPOS_PATH``),
    checked out once and cached; each episode's workspace is a copy-on-write layer over the
    cached tree (an overlay mount where the process may mount, else a copy:
    ``env.unwrapped.workspace.strategy``), so that nothing an episode writes reaches another.
    The harness then runs in the official heavy layout (``/code`` the workspace, ``/src``
    and ``/rundir`` beside it, working directory ``/rundir``). A repository that cannot be
    found is not an error: the episode runs in an empty workspace, ``info["problem"]
    ["unsupported"]`` says where the repository was looked for, and the grade is
    ``unsupported`` (``excluded``).

    ## Action Space

    The assistant's raw text for one turn (tool-call markup included), a ``str`` of up to
    ``MAX_ACTION_CHARS`` characters; the tools are :data:`~cvdp_gym.envs.tools.TOOLS`
    (``execute_bash`` with a ``command``, ``finish`` with an optional ``message``). Or, for
    native function calling, its chat message as an OpenAI-compatible server returns it:
    ``{"content": str | None, "tool_calls": [{"id", "type": "function", "function":
    {"name", "arguments": JSON text or object}}]}`` (see
    :func:`~cvdp_gym.parsers.parse_assistant_message`; the content is then never searched
    for calls, and ``tool_format`` only sets how the observation is rendered). A message is
    outside ``action_space``, which describes the text form.

    ## Observation Space

    Any Unicode string up to ``MAX_OBSERVATION_CHARS`` characters. ``reset``: the system
    message, a blank line, the prompt; ``step``: the formatted tool results of the turn,
    joined by newlines (``""`` when there were none). In ``auto`` mode results are rendered
    in the format the turn used (``qwen`` when it used none, or was a message).

    ## Rewards

    With ``step_reward_shaping=False`` (the default) every step but the last returns 0.0,
    and the last returns ``reward`` applied to the grade (see
    :class:`~cvdp_gym.envs.base.CVDPEnvBase`). With ``step_reward_shaping=True``, the first
    turn with a compile that really ran also earns ``COMPILE_BONUS`` (0.05), once per episode
    (``info["shaping"]``), so the return can exceed the grade by that much. A command's text
    and output are the model's to write (``echo iverilog`` exits 0 and prints no "error"), so
    neither is the evidence: a bash command that exits 0 with no "error" in its output is a
    candidate when one of its simple commands runs ``iverilog`` (its command word, after
    assignments and ``time``/``env``/``timeout N``..., read with a shell's quoting; ``cd``
    followed; here-document bodies skipped) with a target file of the problem among its sources
    (or in its ``-c``/``-f`` command file), and no ``-V``/``-h``/``-E`` (nor ``-B``, nor a ``-t``
    but ``vvp``/``null``: parts of the model's own in place of Icarus's); the environment then
    runs that same ``iverilog`` command again itself, in a sandbox of its own with the workspace
    read-only (``-o /dev/null``; globs expanded as the shell would, an argument with ``$`` or a
    backquote is not replayed), and the bonus is paid when that compile exits 0 with no
    "error" in its output.

    ## Starting State

    The problem named by ``options["problem_id"]``, else a seeded draw (see
    :class:`~cvdp_gym.envs.base.CVDPEnvBase`); a fresh workspace holding its context files
    (a repository problem: its repository's files), the working directory ``/code``; no
    turns taken.

    ## Episode End

    The episode ends if any one of the following occurs:

    1. Termination: a turn has no tool call (and no malformed one): ``end_reason``
       ``no_tool_call``; its text is the final answer.
    2. Termination: a turn calls ``finish`` (or ``submit``): ``end_reason`` ``finish``;
       calls before it in the turn run, calls after it do not, and its ``message`` is part
       of the final answer.
    3. Truncation: ``max_turns`` turns were taken: ``end_reason`` ``max_turns``.
    4. Termination: with ``agent``, the first step: the agent ran until it exited or its
       time was up: ``end_reason`` ``agent_exited``, ``agent_failed`` (a non-zero exit) or
       ``agent_timeout``.

    Either way the workspace is graded on that step. ``step`` after the end raises
    ``RuntimeError`` until ``reset``.

    ## Info

    | Key | Type | When | Description |
    |-----|------|------|-------------|
    | `messages` | **list[dict[str, str]]** | reset | `[{"role": "system", ...}, {"role": "user", ...}]`. |
    | `tools` | **list[dict]** | reset | `[EXECUTE_BASH_TOOL, FINISH_TOOL]` in the OpenAI function shape (:mod:`cvdp_gym.envs.tools`). |
    | `problem` | **dict** | reset, step | id, category, difficulty, agentic, targets, context file names, has_reference, unsupported, source, scoring, benchmark, task, grader, toolchain, defect (a known defect of the benchmark: a failure there is `excluded`). |
    | `tool_format` | **str** | reset | The format the environment parses and answers in. |
    | `turn` | **int** | step | Turns taken so far (this one included). |
    | `commands_run` | **int** | step | bash commands run so far in the episode. |
    | `malformed_calls` | **int** | step | Malformed tool calls so far (bad JSON, unknown tool, missing `command`); each is explained to the model in the observation. |
    | `tool_messages` | **list[dict[str, str]]** | step | This turn's results as `{"role": "tool", "name", "content"}` chat messages (unformatted, for a trainer's own chat template); for a message action each also has the `tool_call_id` it answers. |
    | `assistant_message` | **dict** | step | The turn as `{"role": "assistant", "content", "tool_calls": [{"type": "function", "function": {"name", "arguments"}}]}` (plus `reasoning_content` when the turn had thinking). |
    | `format` | **str** | step | The tool-call format found in this turn: `qwen`, `qwen3_coder`, `harmony`, `bash` (a fenced shell block in `auto` mode), `native` (a message action) or `none`. |
    | `cwd` | **str** | step | The working directory the next command starts in. |
    | `shaping` | **float** | step | The step-shaping bonus in this step's reward (0.0 unless enabled). |
    | `end_reason` | **str** | last step | `no_tool_call`, `finish` or `max_turns` (with `agent`: `agent_exited`, `agent_failed` or `agent_timeout`). |
    | `patch` | **dict or None** | last step | None, or `{"files", "applied", "already_applied", "detail"}` for a diff in the final answer (`applied` False: it did not apply; the workspace was graded as it was). |
    | `dropped` | **list[str]** | last step | Symlinks and special files removed before grading. |
    | `graded_files` | **list[str]** | last step | The target paths found in the workspace and graded. |
    | `passed` | **bool** | last step | Every harness test passed. |
    | `failure_class` | **str or None** | last step | As in `CVDP-SingleShot-v0`; `format_error` when no target file exists. |
    | `reason` | **str** | last step | One line saying why. |
    | `stages` | **dict[str, dict]** | last step | As in `CVDP-SingleShot-v0`. |
    | `tests` | **dict[str, int]** | last step | cocotb test counts `{total, passed, failed}`; VerilogEval: the test bench's samples, matched and mismatched (partial credit 1 − mismatches/samples); RTLLM: one test. |
    | `official` | **dict** | last step | The benchmark's own verdict by its own rule over the whole log (VerilogEval v2: its `class`; v1: its `result`; RTLLM: `auto_run` and `open`), which an answer's own printing can sway; `passed` reads only the test bench's lines. Empty for CVDP. |
    | `reference_check` | **dict** | last step | `verdict='testbench+reference'`: the check against the problem's reference of an answer its test bench passed (`verdict`: `equivalent`, `different`, `undecided` or `no_reference`; `reason`, `formal`, `seconds`...); empty when none ran. |
    | `quality` | **dict** | last step | With `quality` on, a passing answer's design quality against the reference (:mod:`cvdp_gym.grading.quality`): `flow`, `score` (0.5 at the reference's quality, 1.0 at half its area-delay-power, 0.0 at twice; None with `failure` when a design could not be measured), `index`, `ratios`, `extra_warnings`, `candidate` and `reference` measurements; empty when it did not run. |
    | `extraction` | **dict** | last step | `{"method": "workspace", "missing": [target paths not in the workspace], "patch": bool}`. |
    | `log_tail` | **str** | last step | The end of the compiler or simulator output (bounded), wall-clock numbers replaced by `<t>`. |
    | `excluded` | **bool** | last step | Not the answer's fault: leave it out. |
    | `late` | **bool** | last step | Always False here (no grading deadline). |
    | `infra_failure` | **bool** | last step | The grading machinery failed, not the answer (`infra_error`). |
    | `reward` | **float** | last step | The grade's reward; the step returns it plus `shaping`. |
    | `agent` | **dict** | last step with agent | How the agent's run ended: `name`, `command`, `exit_code`, `timed_out`, `end_reason`, `status` (its own word, where it leaves one), `wall_s`, `output` (head and tail), `requests`, `refused`, `prompt_tokens`, `completion_tokens`. |
    | `agent_exchanges` | **list[dict]** | last step with agent | Every request the agent sent through the proxy and its answer (see docs/agents.md). |

    Timings stay out of ``info`` (equal actions give equal ``info``); ``env.unwrapped``
    holds ``last_grade`` (the full ``GradeResult``) and ``workspace`` (the live
    :class:`Workspace`, until the next reset or ``close``).

    ## Arguments

    ```python
    >>> import gymnasium as gym
    >>> import cvdp_gym  # registers the environments
    >>> env = gym.make("CVDP-Agentic-v0", tool_format="qwen", max_turns=10, cache=False)
    >>> env
    <OrderEnforcing<AgenticEnv<CVDP-Agentic-v0>>>
    >>> observation, info = env.reset(seed=0)
    >>> info["problem"]["id"], [tool["function"]["name"] for tool in info["tools"]]
    ('cvdp_gym_agentic_rr_arbiter_0001', ['execute_bash', 'finish'])
    >>> call = '<tool_call>{"name": "execute_bash", "arguments": {"command": "ls"}}</tool_call>'
    >>> observation, reward, terminated, truncated, info = env.step(call)
    >>> print(observation)
    <tool_response>
    docs
    rtl
    rundir
    verif
    [exit code: 0]
    </tool_response>
    >>> finish = '<tool_call>{"name": "finish", "arguments": {}}</tool_call>'
    >>> observation, reward, terminated, truncated, info = env.step(finish)
    >>> reward, terminated, info["end_reason"], info["failure_class"]
    (0.0, True, 'finish', 'format_error')
    >>> env.close()

    ```

    Its own arguments; it also takes every argument of
    :class:`~cvdp_gym.envs.base.CVDPEnvBase` (dataset, filters, sandbox, toolchain,
    reward, timeouts, cache, lint, interface_check, grader, executor, repos, render_mode).

    | Parameter | Type | Default | Description |
    |-----------|------|---------|-------------|
    | `tool_format` | **str** | `'auto'` | `qwen`, `qwen3_coder`, `harmony` or `auto` (each turn's format detected). |
    | `max_turns` | **int** | `50` | Turns per episode, at least 1; then the episode is truncated. |
    | `command_timeout_s` | **float** | `60.0` | Wall-clock limit of one command, in seconds. |
    | `max_output_chars` | **int** | `20000` | Longest output of one command the model reads; head and tail are kept. |
    | `max_workspace_mb` | **float or None** | `None` | Disk quota of `/code` plus `/tmp`; what pushes it over is deleted and the model told. `None`: 256 MB, and for a repository problem 200 MB (the official tool's quota) over what the episode adds to the repository. |
    | `command_memory_mb` | **int** | `4096` | Memory limit of one command. |
    | `command_processes` | **int** | `256` | Process limit of one command. |
    | `step_reward_shaping` | **bool** | `False` | Give `COMPILE_BONUS` once per episode, for a compile of a target file the environment confirms by compiling it again (see Rewards). |
    | `system_message` | **str or None** | `None` | Overrides the problem's system message. |
    | `agent` | **object or None** | `None` | A command-line coding agent that plays each episode: `cvdp_gym.agents.AgentPlayer(recipe, endpoint=..., model=...)` (any object with `play(workspace, task) -> dict`). The first `step` then runs it in the workspace until it exits or its time is up, ignoring the action, and grades: one step per episode (docs/agents.md). |

    ## Vectorized environment

    As for ``CVDP-SingleShot-v0``: ``gym.make_vec("CVDP-Agentic-v0", num_envs=N,
    vectorization_mode="async")``, with text
    actions. A sub-environment whose episode ended is reset on the next ``step``
    (Gymnasium's next-step autoreset), which ignores its action.

    ## Version History

    * v0: Initial version release.
    * v0 (issue 35): the `verdict` argument (`'testbench+reference'`) and the `reference_check` info key; with the default verdict nothing else changes.
    """

    agentic = True

    def __init__(
        self,
        dataset: str | Path | Dataset | None = None,
        *,
        tool_format: str = "auto",
        max_turns: int = 50,
        command_timeout_s: float = 60.0,
        max_output_chars: int = 20_000,
        max_workspace_mb: float | None = None,
        command_memory_mb: int = 4096,
        command_processes: int = 256,
        step_reward_shaping: bool = False,
        system_message: str | None = None,
        agent: Any = None,
        **kwargs: Any,
    ) -> None:
        if tool_format not in TOOL_FORMATS:
            raise ConfigError(f"unknown tool_format {tool_format!r}; expected one of {TOOL_FORMATS}")
        if max_turns < 1:
            raise ConfigError("max_turns must be at least 1")
        super().__init__(dataset, **kwargs)
        self.tool_format = tool_format
        self.max_turns = max_turns
        self.step_reward_shaping = step_reward_shaping
        self.system_message = system_message
        self.agent = agent
        self.limits = WorkspaceLimits(
            command_timeout_s=command_timeout_s,
            max_output_chars=max_output_chars,
            max_workspace_mb=WORKSPACE_MB if max_workspace_mb is None else max_workspace_mb,
            memory_mb=command_memory_mb,
            processes=command_processes,
        )
        self._repo_limits = self.limits if max_workspace_mb is not None else dataclasses.replace(
            self.limits, max_workspace_mb=REPO_WORKSPACE_MB
        )
        self.tools = [EXECUTE_BASH_TOOL, FINISH_TOOL]
        self.workspace: Workspace | None = None
        self._sandbox: BubblewrapSandbox | None = None
        self._done = True
        self._last_observation = ""

    # -- episode -----------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._close_workspace()
        self.problem, base = self._starting_tree(self._choose(options))
        sandbox = self._sandbox_for_commands()
        if self.problem.repo is None:
            self.workspace = Workspace(self.problem.context, sandbox=sandbox, limits=self.limits, dirs=WORKSPACE_DIRS)
        else:
            self.workspace = Workspace({}, base=base, sandbox=sandbox, limits=self._repo_limits, dirs=REPO_WORKSPACE_DIRS)
        self._turn = self._commands_run = self._malformed = 0
        self._compile_bonus_given = False
        self._done = False
        messages = agentic_messages(self.problem, self.system_message)
        observation = f"{messages[0]['content']}\n\n{messages[1]['content']}"
        self._last_observation = observation
        info = {
            "messages": messages,
            "tools": list(self.tools),
            "problem": self.problem.metadata(),
            "tool_format": self.tool_format,
        }
        return observation, info

    def step(self, action: str | Mapping[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.problem is None or self.workspace is None or self._done:
            raise UsageError("call reset() before step(): the episode is over or not started")
        played = None
        if self.agent is not None:  # the agent plays the whole episode; then it is finished
            played = self.agent.play(self.workspace, agent_task(self.problem, self.system_message))
            action = FINISH_CALL
        if isinstance(action, str):
            parsed, call_ids = parse_tool_calls(action, self.tool_format), None
        elif isinstance(action, Mapping):
            parsed, call_ids = parse_assistant_message(action)
        else:
            raise ArgumentTypeError(f"the action must be the assistant's text (str) or chat message (dict), got {type(action).__name__}")
        self._turn += 1
        fmt = self._response_format(parsed)
        messages, finished, bonus = self._run_calls(parsed)
        for message, call_id in zip(messages, call_ids or (), strict=False):
            message["tool_call_id"] = call_id
        observation = "\n".join(format_tool_response(m["content"], fmt, m["name"]) for m in messages)
        self._last_observation = observation
        info: dict[str, Any] = {
            "problem": self.problem.metadata(),
            "turn": self._turn,
            "commands_run": self._commands_run,
            "malformed_calls": self._malformed,
            "tool_messages": messages,
            "assistant_message": assistant_message(parsed),
            "format": parsed.format,
            "cwd": self.workspace.cwd,
            "shaping": bonus,
        }
        no_call = not parsed.calls and not parsed.errors
        terminated = finished or no_call
        truncated = not terminated and self._turn >= self.max_turns
        reward = bonus
        if terminated or truncated:
            end_reason = "finish" if finished else "no_tool_call" if no_call else "max_turns"
            final_text = parsed.content if terminated else ""
            if finished:
                final_text += "\n" + finish_message(parsed)
            reward += self._finish(final_text, end_reason, info)
        if played is not None:
            info.update(end_reason=played["end_reason"], agent=played["agent"], agent_exchanges=played["exchanges"])
        return observation, reward, terminated, truncated, info

    @property
    def repos(self) -> RepoStore:
        """Where repository problems' repositories are found: the grader's runner's store."""
        store = getattr(getattr(self.grader, "runner", None), "repos", None)
        return store if isinstance(store, RepoStore) else RepoStore()

    def _starting_tree(self, problem: Problem) -> tuple[Problem, Path | None]:
        """The problem and, for a repository problem, its checked-out tree. A repository
        that cannot be found makes the problem ``unsupported`` for this episode (the reason
        in ``info["problem"]``; its grade is ``unsupported``, excluded), never an error."""
        if problem.repo is None:
            return problem, None
        try:
            return problem, self.repos.problem_tree(problem)
        except RepoUnavailable as exc:
            return dataclasses.replace(problem, unsupported=str(exc)), None

    def _run_calls(self, parsed: ParsedTurn) -> tuple[list[dict[str, str]], bool, float]:
        """Run the turn's calls in order; returns tool messages, whether finish was called
        and the shaping bonus earned."""
        messages: list[dict[str, str]] = []
        for error in parsed.errors:
            self._malformed += 1
            messages.append(tool_message(BASH_TOOL_NAME, f"error: {error}"))
        bonus = 0.0
        for number, call in enumerate(parsed.calls, start=1):
            if call.is_finish:
                return messages, True, bonus
            if number > MAX_CALLS_PER_TURN:
                messages.append(tool_message(call.name, f"skipped: at most {MAX_CALLS_PER_TURN} tool calls run per turn"))
                continue
            problem = call_problem(call)
            if problem:
                self._malformed += 1
                messages.append(tool_message(call.name, f"error: {problem}"))
                continue
            cwd = self.workspace.cwd  # type: ignore[union-attr]
            result = self.workspace.run(call.command)  # type: ignore[union-attr,arg-type]
            self._commands_run += 1
            if self._earns_compile_bonus(call.command or "", result, cwd):
                self._compile_bonus_given = True
                bonus = COMPILE_BONUS
            messages.append(tool_message(call.name, result.observation))
        return messages, False, bonus

    def _earns_compile_bonus(self, command: str, result: CommandResult, cwd: str) -> bool:
        """Whether ``command`` (started in ``cwd``) compiled a target file: it exited 0 with no
        "error" in its output, and one of its ``iverilog`` commands, run again here, compiles
        cleanly (see Rewards)."""
        if not (self.step_reward_shaping and not self._compile_bonus_given and result.ok):
            return False
        if ERROR_WORD.search(result.output) or self.workspace is None or self.problem is None:
            return False
        targets = {posixpath.join(MOUNT_POINT, target) for target in self.problem.targets}
        return compiles_a_target(command, cwd, self.workspace, targets, self.limits)

    def _finish(self, final_text: str, end_reason: str, info: dict[str, Any]) -> float:
        """Apply a final diff, grade the workspace, fill the final ``info``; return the reward."""
        assert self.problem is not None and self.workspace is not None
        self._done = True
        info["end_reason"] = end_reason
        info["patch"] = self._apply_final_diff(final_text)
        workspace_dir = self.workspace.snapshot_dir
        info["dropped"] = list(self.workspace.dropped)
        files = self.workspace.read_texts(self.problem.targets)
        info["graded_files"] = sorted(files)
        missing = [t for t in self.problem.targets if t not in files]
        if self.problem.targets and not files and not self.problem.unsupported:
            result = missing_targets(self.problem.id, missing)
        else:
            result = self.grader.grade_files(self.problem, files, workspace=workspace_dir)
        result.extraction = {"method": "workspace", "missing": missing, "patch": info["patch"] is not None}
        reward = self._reward(result)
        info.update(self._grade_info(result, reward))
        info["log_tail"] = without_timings(info["log_tail"])
        return reward

    def _apply_final_diff(self, text: str) -> dict[str, Any] | None:
        """Apply the unified diff in the final answer, all files or none."""
        assert self.problem is not None and self.workspace is not None
        return apply_final_diff(self.workspace, list(self.problem.targets), text)

    # -- helpers -----------------------------------------------------------------------

    def _response_format(self, parsed: ParsedTurn) -> str:
        if self.tool_format != "auto":
            return self.tool_format
        return parsed.format if parsed.format in ("qwen", "qwen3_coder", "harmony", "bash") else "qwen"

    def _sandbox_for_commands(self) -> BubblewrapSandbox:
        """The grader's sandbox (one toolchain detection per env), or a new one."""
        if self._sandbox is None:
            runner = getattr(self.grader, "runner", None)
            sandbox = getattr(runner, "sandbox", None)
            if not isinstance(sandbox, BubblewrapSandbox):  # agents' commands always run in bubblewrap
                sandbox = BubblewrapSandbox(getattr(runner, "toolchain", None))
            self._sandbox = sandbox
        return self._sandbox

    def _close_workspace(self) -> None:
        if self.workspace is not None:
            self.workspace.close()
            self.workspace = None

    def close(self) -> None:
        """Remove the workspace folder."""
        self._close_workspace()
        self._done = True
        super().close()

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._last_observation
        return None


# -- the compile bonus: which iverilog commands a bash command ran, to compile them again ---------
