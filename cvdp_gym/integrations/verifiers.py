"""CVDP for verifiers 0.4.0 (the ``verifiers.v1`` stack: taskset, harness, runtime).

verifiers 0.4.0 has no ``SingleTurnEnv``/``ToolEnv``/``Rubric``: an environment is a
``Taskset`` of ``Task`` objects whose ``@vf.reward``/``@vf.metric`` methods score each
rollout, played by a harness program in a runtime. Here every task is one CVDP problem and
its reward is the staged grader's (``shaped`` | ``partial`` | ``binary``)::

    from cvdp_gym.integrations.verifiers import load_environment
    env = load_environment("bundled")                 # single turn: the `null` chat harness
    env = load_environment("bundled", agentic=True)   # agentic: the `bash` tool harness

- Single turn: the model's last reply is graded like ``CVDP-SingleShot-v0`` answers
  (``Grader.grade_response``).
- Agentic: ``setup`` writes the problem's files into the rollout's runtime folder, the
  ``bash`` harness lets the model edit them with its own ``bash``/``edit`` tools, and the
  reward reads the files back and grades them (``Grader.grade_files``). In the default
  ``subprocess`` runtime those tools run on this machine (verifiers warns); use
  ``runtime="docker"`` for an isolated agent. The harness itself always grades in the sandbox.

The harness programs are PEP 723 scripts that verifiers prepares with ``uv sync --script``
(their packages come from PyPI on the first rollout, then from uv's cache). ``uv`` comes
from this package's ``verifiers`` extra and is put on ``PATH`` here, so verifiers never
downloads it from astral.sh.

verifiers resolves a taskset by importing its id as a top-level package: the package
``cvdp_gym_verifiers`` (``TASKSET_ID``) re-exports this module's taskset, so verifiers' own
commands find it too (``vf-eval cvdp_gym_verifiers --env.taskset.dataset bundled ...``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.types import content_text

from cvdp_gym.data import Dataset, Problem
from cvdp_gym.envs.single_shot import SingleShotEnv
from cvdp_gym.errors import ConfigError, UnavailableError
from cvdp_gym.grading import GradeResult, make_reward
from cvdp_gym.grading.settings import GraderSettings
from cvdp_gym.integrations._shared import grade_metrics, problems, shared_grader

TASKSET_ID = "cvdp_gym_verifiers"

AGENTIC_NOTE = (
    "The files named above are in your current working directory. Edit them there with "
    "your tools; when the design is complete, reply with a short summary and no tool call."
)


class CVDPTaskConfig(vf.TaskConfig):
    """How a rollout is scored (shared by every task of the taskset)."""

    reward: str = "shaped"
    interface_credit: float = 0.0
    sandbox: str = "bubblewrap"
    toolchain: str | None = None
    timeout_s: float = 300.0


class CVDPTaskData(vf.TaskData):
    """One CVDP problem, named by its dataset and id (the wire half of a task)."""

    dataset: str = "bundled"
    problem_id: str = ""
    agentic: bool = False


class CVDPTasksetConfig(vf.TasksetConfig):
    """Which problems: a dataset spec (``bundled``, a JSONL path, ``hf:...``) and filters."""

    task: CVDPTaskConfig = CVDPTaskConfig()
    dataset: str = "bundled"
    agentic: bool = False
    ids: list[str] | None = None
    categories: list[str] | None = None
    difficulty: list[str] | None = None


class CVDPTask(vf.Task[CVDPTaskData, vf.State, CVDPTaskConfig]):
    """One CVDP problem; its reward and metrics come from one grade per rollout."""

    def __init__(self, data: CVDPTaskData, config: CVDPTaskConfig | None = None) -> None:
        super().__init__(data, config)
        self._grades: dict[str, asyncio.Task[GradeResult]] = {}

    @property
    def key(self) -> str:
        return f"{self.data.dataset}:{self.data.problem_id}"

    def problem(self) -> Problem:
        selected = problems(self.data.dataset, agentic=self.data.agentic, ids=[self.data.problem_id])
        return selected.problems[0]

    async def setup(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        """Agentic problems start from their context files in the runtime's folder."""
        if self.data.agentic:
            for path, text in self.problem().context.items():
                await runtime.write(path, text.encode())

    def _grade(self, trace: vf.Trace, runtime: vf.Runtime | None) -> asyncio.Task[GradeResult]:
        """The rollout's one grade, shared by the metric and the reward."""
        if trace.id not in self._grades:
            self._grades[trace.id] = asyncio.ensure_future(self._grade_now(trace, runtime))
        return self._grades[trace.id]

    async def _grade_now(self, trace: vf.Trace, runtime: vf.Runtime | None) -> GradeResult:
        config = self.config
        grader = shared_grader(GraderSettings(sandbox=config.sandbox, toolchain=config.toolchain, timeout_s=config.timeout_s))
        problem = self.problem()
        if not self.data.agentic:
            replies = [m for m in trace.messages if m.role == "assistant"]
            text = content_text(replies[-1].content) if replies else ""
            return await asyncio.to_thread(grader.grade_response, problem, text or "")
        if runtime is None:
            raise ConfigError("an agentic CVDP rollout is graded from its runtime's files")
        files: dict[str, str] = {}
        for path in sorted({*problem.context, *problem.targets}):
            try:
                files[path] = (await runtime.read(path)).decode(errors="replace")
            except (OSError, vf.SandboxError):
                continue  # a target the agent never wrote: the format stage reports it
        return await asyncio.to_thread(grader.grade_files, problem, files)

    @vf.metric
    async def cvdp(self, trace: vf.Trace, runtime: vf.Runtime | None = None) -> dict[str, float]:
        result = await self._grade(trace, runtime)
        return grade_metrics({
            "passed": result.passed,
            "stages": {s.name: {"passed": s.passed} for s in result.stages},
            "tests": {"passed": result.tests.passed, "total": result.tests.total},
            "excluded": result.excluded,
            "infra_failure": result.infra_failure,
        })

    @vf.reward
    async def cvdp_reward(self, trace: vf.Trace, runtime: vf.Runtime | None = None) -> float:
        """The grade's reward. An answer the grader could not judge (``infra_failure``: the
        sandbox died) raises verifiers' ``SandboxError`` instead: the rollout fails
        (``stop_condition`` ``sandbox_error``, ``ok`` False), which trainers leave out, and
        carries no reward of 0."""
        result = await self._grade(trace, runtime)
        self._grades.pop(trace.id, None)
        if result.infra_failure:
            raise vf.SandboxError(f"the grader could not judge the answer ({result.failure_class}): {result.reason}")
        score = make_reward(self.config.reward, interface_credit=self.config.interface_credit)
        return float(score(result))


class CVDPTaskset(vf.Taskset[CVDPTask, CVDPTasksetConfig]):
    """The CVDP problems of one kind (single turn or agentic) from a dataset."""

    def load(self) -> Any:
        config = self.config
        selected = problems(
            config.dataset,
            agentic=config.agentic,
            ids=config.ids,
            categories=config.categories,
            difficulty=config.difficulty,
        )
        prompts = _agentic_prompts(selected) if config.agentic else _single_turn_prompts(selected)
        for problem, (system, prompt) in zip(selected.problems, prompts, strict=True):
            data = CVDPTaskData(
                id=problem.id,
                name=problem.id,
                dataset=config.dataset,
                problem_id=problem.id,
                agentic=config.agentic,
                system_prompt=system,
                prompt=prompt,
            )
            yield CVDPTask(data, config.task)


def _single_turn_prompts(selected: Dataset) -> list[tuple[str | None, str]]:
    """The system and user text ``CVDP-SingleShot-v0`` opens each problem with."""
    env = SingleShotEnv(selected, grader=shared_grader())
    prompts = []
    try:
        for problem in selected.problems:
            _, info = env.reset(options={"problem_id": problem.id})
            messages = info["messages"]
            system = next((m["content"] for m in messages if m["role"] == "system"), None)
            user = "\n\n".join(m["content"] for m in messages if m["role"] == "user")
            prompts.append((system, user))
    finally:
        env.close()
    return prompts


def _agentic_prompts(selected: Dataset) -> list[tuple[str | None, str]]:
    return [(p.system_message, f"{p.prompt}\n\n{AGENTIC_NOTE}") for p in selected.problems]


def ensure_uv_on_path() -> str:
    """The ``uv`` verifiers will run: one already on ``PATH``, else the ``uv`` package's."""
    found = shutil.which("uv")
    if found:
        return found
    try:
        import uv
    except ImportError as e:
        raise UnavailableError(
            "verifiers' harnesses need `uv`; install it with `pip install uv` "
            "(the cvdp-gym[verifiers] extra does) so that verifiers does not download it"
        ) from e
    binary = uv.find_uv_bin()
    os.environ["PATH"] = f"{Path(binary).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return binary


def load_environment(
    dataset: str = "bundled",
    *,
    agentic: bool = False,
    ids: list[str] | None = None,
    categories: list[str] | None = None,
    difficulty: list[str] | None = None,
    reward: str = "shaped",
    harness: str | None = None,
    runtime: str = "subprocess",
    **task: Any,
) -> vf.Env:
    """A verifiers ``Env`` over CVDP: the ``null`` chat harness for single-turn problems,
    the ``bash`` tool harness for agentic ones (or ``harness``), in ``runtime``.
    ``task`` sets ``CVDPTaskConfig`` fields (``sandbox``, ``timeout_s``, ...)."""
    ensure_uv_on_path()
    taskset = {
        "id": TASKSET_ID,
        "dataset": str(dataset),
        "agentic": agentic,
        "ids": ids,
        "categories": categories,
        "difficulty": [difficulty] if isinstance(difficulty, str) else difficulty,
        "task": {"reward": reward, **task},
    }
    agent = {"harness": {"id": harness or ("bash" if agentic else "null")}, "runtime": {"type": runtime}}
    return vf.load_environment(vf.resolve_env_config({"taskset": taskset, "agent": agent}))


__all__ = [
    "TASKSET_ID",
    "CVDPTask",
    "CVDPTaskConfig",
    "CVDPTaskData",
    "CVDPTaskset",
    "CVDPTasksetConfig",
    "ensure_uv_on_path",
    "load_environment",
]
