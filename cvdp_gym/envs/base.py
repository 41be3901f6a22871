"""What both CVDP environments share: a problem set, seeded problem choice, a grader, a reward."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym

from cvdp_gym.data import Dataset, Problem, load_dataset
from cvdp_gym.data.problems import SCORING_HARNESS
from cvdp_gym.envs.spaces import UnicodeText
from cvdp_gym.errors import ArgumentTypeError, ConfigError, UnknownProblemError
from cvdp_gym.grading import Grader, GradeResult, make_reward
from cvdp_gym.grading.backed import BACKED, require_references
from cvdp_gym.grading.quality import QualitySettings, QualityStage
from cvdp_gym.grading.rewards import RewardFn
from cvdp_gym.grading.settings import GraderSettings
from cvdp_gym.sandbox import Sandbox
from cvdp_gym.tasks.names import DESIGN
from cvdp_gym.tasks.posing import TaskOptions, pose

#: Longest prompt an observation may hold (context files included), in characters.
MAX_OBSERVATION_CHARS = 2_000_000
#: Longest answer an action may hold, in characters.
MAX_ACTION_CHARS = 1_000_000


#: The environments' grading keywords and the ``GraderSettings`` field each one sets.
GRADER_OPTIONS: dict[str, str] = {
    "sandbox": "sandbox", "toolchain": "toolchain", "timeout_s": "timeout_s", "cache": "cache", "lint": "lint",
    "interface_check": "interface", "executor": "executor", "judge": "judge", "parse_route": "parse_route",
    "repos": "repos", "harness_seed": "harness_seed", "verdict": "verdict", "quality": "quality",
}


def make_grader(sandbox: str | Sandbox | None = None, **fields: Any) -> Grader:
    """A grader from ``GraderSettings`` fields given as keywords (``sandbox`` may come first),
    each left out at its default there."""
    if sandbox is not None:
        fields["sandbox"] = sandbox
    return Grader.from_settings(GraderSettings(**fields))


def grader_settings(owner: str, settings: GraderSettings | None, options: dict[str, Any]) -> GraderSettings:
    """``settings`` (None: the defaults) with the environments' grading keywords in ``options``
    set on them; any other keyword is a ``TypeError``, as an unknown argument of ``owner``."""
    unknown = sorted(set(options) - set(GRADER_OPTIONS))
    if unknown:
        raise TypeError(f"{owner}.__init__() got an unexpected keyword argument {unknown[0]!r}")
    fields = {GRADER_OPTIONS[name]: value for name, value in options.items()}
    return dataclasses.replace(settings or GraderSettings(), **fields)


class CVDPEnvBase(gym.Env[str, str]):
    """
    ## Description

    What every CVDP environment shares: the problem set, the seeded choice of a problem at
    ``reset``, the text spaces, a grader and a reward function. Subclasses define the
    episode: ``CVDP-SingleShot-v0`` (:class:`~cvdp_gym.envs.single_shot.SingleShotEnv`),
    ``CVDP-Refine-v0`` (:class:`~cvdp_gym.envs.refine.RefineEnv`) and ``CVDP-Agentic-v0``
    (:class:`~cvdp_gym.envs.agentic.AgenticEnv`). A subclass sets ``agentic`` to say which
    problems it takes (agentic ones, or the others); the environment refuses to start
    (``ValueError``) when the dataset and filters leave none.

    ## Action Space

    ``UnicodeText(0, MAX_ACTION_CHARS)``: any ``str`` of at most ``MAX_ACTION_CHARS``
    (1,000,000) characters (Gymnasium's ``Text`` only holds a fixed charset).

    ## Observation Space

    ``UnicodeText(0, MAX_OBSERVATION_CHARS)``: any ``str`` of at most
    ``MAX_OBSERVATION_CHARS`` (2,000,000) characters, so a prompt quoting every context file
    fits.

    ## Starting State

    ``reset(seed=None, options={"problem_id": ...})`` takes the problem named by
    ``options["problem_id"]`` (``KeyError`` for an id not in the set), else draws one
    uniformly with ``self.np_random``, so a seed reproduces the choice.

    ## Arguments

    Every environment takes these keywords (the subclasses add their own), by
    ``gymnasium.make(env_id, **kwargs)`` or the class:

    | Parameter | Type | Default | Description |
    |-----------|------|---------|-------------|
    | `dataset` | **str, Path, Dataset or None** | `None` | `None` or `'bundled'`: the problems this package ships; a JSONL path (or a folder of them); `'hf[:PATTERN[@REVISION]]'`: the CVDP files on the Hugging Face hub; a benchmark (`'verilog-eval-v2:spec-to-rtl'`, `'verilog-eval-v1'`, `'rtllm-v2'`, ...; or the path of a copy of one); or a loaded `Dataset` (then the three filters below are not applied). A `#testbench` or `#assertion` fragment (`#testbench?coverage=1`) poses a dataset's problems as that verification task, as `task` does. |
    | `benchmark_dir` | **str, Path or None** | `None` | A copy of the benchmark `dataset` names; `None`: its environment variable (`CVDP_GYM_VERILOG_EVAL`, ...), then the copy `cvdp-gym benchmarks fetch` made. |
    | `ids` | **Iterable[str] or None** | `None` | Keep only these problem ids. |
    | `categories` | **Iterable[str] or None** | `None` | Keep only these categories (`cid002`, ...). |
    | `difficulty` | **Iterable[str], str or None** | `None` | Keep only these difficulties (`easy`, `medium`, `hard`). |
    | `sandbox` | **str or BubblewrapSandbox** | `'bubblewrap'` | Where harnesses run: `'bubblewrap'`, `'docker'`, or a sandbox object. |
    | `toolchain` | **str or None** | `None` | `'root'` (the default, unless `CVDP_GYM_TOOLCHAIN_KIND=host`): the pinned Icarus 13 root; `'host'`: the machine's own simulators, an explicit fallback. |
    | `reward` | **str or Callable[[GradeResult], float]** | `'shaped'` | `'shaped'` (0.1 for extractable code + 0.3 if it compiles + 1.0 if every test passes; at most 1.4), `'partial'` (the shaping, with the fraction of tests passed in place of the 1.0), `'binary'` (1.0 if every test passes), or any callable (see :mod:`cvdp_gym.grading.rewards`). |
    | `interface_credit` | **float** | `0.0` | Added to the reward when the interface check passes. |
    | `timeout_s` | **float** | `300.0` | Wall-clock limit of one harness service, in seconds. |
    | `cache` | **bool, str, Path, GradeCache or None** | `True` | `True`: the default SQLite cache (`~/.cache/cvdp-gym/grades.sqlite`); a path or a `GradeCache`; `False` or `None`: grade without a cache. |
    | `lint` | **bool** | `True` | Run the syntax (lint) stage before simulating. |
    | `interface_check` | **bool** | `True` | Run the interface stage (the ports the harness expects) before simulating. |
    | `grader` | **Grader or None** | `None` | A ready grader (shared by several environments); when given, `settings`, `sandbox`, `toolchain`, `timeout_s`, `cache`, `lint`, `interface_check`, `executor`, `judge`, `parse_route`, `repos`, `harness_seed` and `verdict` are not used (its runner's and its own are). |
    | `settings` | **GraderSettings or None** | `None` | The grader's settings in one object (:class:`~cvdp_gym.grading.settings.GraderSettings`, whose defaults are the ones listed here); the keywords of this table that describe the grader are set on them. |
    | `executor` | **str, GradeExecutor or None** | `None` | Where simulations run: `'threads[:N]'`, `'processes[:N]'`, `'ray[:ADDRESS]'` or an executor object shared by several graders; `None`: the calling thread. |
    | `judge` | **JudgeSettings, LLMJudge or None** | `None` | The LLM judge of cid009/cid010 answers (an OpenAI-compatible endpoint, :mod:`cvdp_gym.grading.judge`); `None`: those answers are graded `not_judged` (reward 0, `excluded`). Only environments that take comprehension problems use it. |
    | `parse_route` | **str** | `'chat'` | How comprehension answers are parsed: `'chat'`, as the official tool's OpenAI-chat route (JSON repaired first), or `'import'`, its local-import route. |
    | `repos` | **str, Path, RepoStore or None** | `None` | The folder of the repositories (`NAME/` or `NAME.bundle`) that repository-context problems name (or a `RepoStore`); `None`: `$CVDP_HEAVY_REPOS_PATH`, the official tool's variable. |
    | `harness_seed` | **int or None** | `None` | The seed of the harnesses' Python randomness and cocotb's (`RANDOM_SEED`): a harness that draws its parameters or stimulus at random then draws the same values every time, so its verdicts are reproducible and cached per seed; `None`: a fresh seed per run, as the official runner, and such verdicts are not cached. The seed of the last grade is `env.unwrapped.last_grade.seed`. |
    | `verdict` | **str** | `'testbench'` | `'testbench'`: the problem's own test bench decides. `'testbench+reference'`: an answer passes only when its test bench passes **and** the reference-equivalence grader finds it equivalent to the problem's reference design (run only after the test bench passed; :mod:`cvdp_gym.grading.backed`); otherwise `failure_class` is `not_equivalent`, or `undecided` / `no_reference` (never a pass, `excluded`). `official` stays the benchmark's own reading. A dataset none of whose problems has a reference is a `ConfigError`. |
    | `quality` | **QualitySettings, dict, str or None** | `None` | Measure every passing answer's design quality against the problem's reference (:mod:`cvdp_gym.grading.quality`): `'asic'` (Yosys + ABC to a liberty, OpenSTA), `'fpga'` (Yosys + nextpnr-ice40), or settings (`flow`, `liberty`, `clock_ns`, `device`, `package`); the outcome is `info["quality"]`. `reward='quality'` turns it on with the defaults (ASIC, Nangate45, 10 ns). |
    | `task` | **str** | `'design'` | `'design'`: the problems as their benchmarks pose them. `'testbench'` (`'testbench-cocotb'`: in cocotb) or `'assertion'`: each problem with a reference design asked for a self-checking test bench or for SVA properties instead, graded by the seeded bugs they catch (:mod:`cvdp_gym.tasks.posing`; use `reward='kills'`); what `RTL-Testbench-v0` and `RTL-Assertion-v0` set. `'testbench?coverage=1'` also measures a bench's coverage of the reference (the options a `#testbench` fragment and `--task` take). |
    | `render_mode` | **str or None** | `None` | `'ansi'`: `render()` returns the latest observation text (see each environment). |

    ## Info

    Every step that grades an answer carries these keys (:meth:`_grade_info`); each
    environment's own docstring lists them again with the rest of its ``info``:

    | Key | Type | Description |
    |-----|------|-------------|
    | `problem` | **dict** | The problem's metadata: `id`, `category`, `difficulty`, `agentic`, `targets`, `context_files`, `has_reference`, `unsupported`, `source`, `scoring`, `benchmark`, `task`, `grader`, `toolchain`, `defect`. |
    | `passed` | **bool** | Every harness test passed. |
    | `failure_class` | **str or None** | None, `format_error`, `build_error`, `interface_error`, `reach_in` (the answer names or opens something outside its design), `test_failure`, `timeout`, `resource_limit`, `undecided` (the reference grader's stages decided nothing), `harness_error`, `infra_error`, `toolchain_gap` (host toolchain only) or `unsupported`; with `verdict='testbench+reference'` also `not_equivalent` or `no_reference`. |
    | `reason` | **str** | One line saying why. |
    | `stages` | **dict[str, dict]** | One `{passed, detail}` per stage, `format`, `syntax`, `interface`, `tests`, then any stage a plug-in adds (:mod:`cvdp_gym.grading.stages`); `passed` is None for a stage that did not run. |
    | `tests` | **dict[str, int]** | cocotb test counts `{total, passed, failed}` (VerilogEval: the test bench's samples, matched and mismatched). |
    | `official` | **dict** | A benchmark's own verdict by its own rule over the whole log (empty for CVDP). |
    | `reference_check` | **dict** | `verdict='testbench+reference'`: the check against the reference of an answer its test bench passed: `verdict` (`equivalent`, `different`, `undecided` or `no_reference`), `reason`, the reference grader's `failure_class`, `formal` and `simulation` verdicts, `label`, `seconds`; empty when none ran. |
    | `quality` | **dict** | With `quality` on, a passing answer's design quality against the reference (:mod:`cvdp_gym.grading.quality`): `flow`, `score` (0.5 at the reference's quality, 1.0 at half its area-delay-power, 0.0 at twice; None with `failure` when a design could not be measured), `index`, `ratios`, `extra_warnings`, `candidate` and `reference` measurements; empty when it did not run. |
    | `extraction` | **dict** | How the code was found (each environment says which keys). |
    | `log_tail` | **str** | The end of the compiler or simulator output (bounded). |
    | `excluded` | **bool** | Not the answer's fault (toolchain gap, unsupported, a broken harness; for comprehension answers, not judged or a judge error): leave it out of training and scores. |
    | `late` | **bool** | Not graded by the `grading_deadline` (then scored `timeout`). |
    | `infra_failure` | **bool** | The grading machinery failed, not the answer (`infra_error`: a sandbox that would not start or a lost worker, or `late`): the verdict says nothing about the answer and is not cached; re-grade the same answer, or leave it out of group statistics. |
    | `reward` | **float** | The reward (each environment says which). |

    ``env.unwrapped.last_grade`` holds the last full ``GradeResult`` (stage timings, cache
    hit, extracted files), kept out of ``info`` so that equal answers give equal ``info``,
    as Gymnasium's determinism check expects.

    ## Version History

    * v0: Initial version release.
    * v0 (issue 35): the `verdict` argument (`'testbench+reference'`) and the `reference_check` info key; with the default verdict nothing else changes.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    agentic: bool = False
    #: Whether the environment takes comprehension problems (text answers scored against a reference).
    text_answers: bool = False

    def __init__(
        self,
        dataset: str | Path | Dataset | None = None,
        *,
        benchmark_dir: str | Path | None = None,
        ids: Iterable[str] | None = None,
        categories: Iterable[str] | None = None,
        difficulty: Iterable[str] | str | None = None,
        reward: str | RewardFn = "shaped",
        interface_credit: float = 0.0,
        grader: Grader | None = None,
        settings: GraderSettings | None = None,
        task: str = DESIGN,
        render_mode: str | None = None,
        **grading: Any,
    ) -> None:
        """``grading``: the grader's keywords of the Arguments table (``sandbox``, ...,
        ``quality``), set on ``settings``; any other keyword is a ``TypeError``."""
        chosen = grader_settings(type(self).__name__, settings, grading)
        if isinstance(dataset, Dataset):
            problems = dataset.problems
        else:
            problems = load_dataset(
                dataset, ids=ids, categories=categories, difficulty=difficulty, benchmark_dir=benchmark_dir
            ).problems
        posing = TaskOptions.parse(task, agentic=self.agentic)
        # the same designs, asked for a test bench or assertions (those with a reference)
        problems = pose(problems, posing)
        self.problems: list[Problem] = [
            p for p in problems if p.agentic == self.agentic and (self.text_answers or p.scoring == SCORING_HARNESS)
        ]
        if not self.problems:
            kind = ("agentic" if self.agentic else "non-agentic") + ("" if posing.task == DESIGN else f" {posing.task}")
            why = "" if posing.task == DESIGN else " (a verification task needs problems with a reference design)"
            raise ConfigError(f"no {kind} problems in {dataset or 'the bundled set'} with these filters{why}")
        self._by_id = {p.id: p for p in self.problems}
        quality = QualitySettings.of(chosen.quality, reward=reward)
        if grader is None:
            grader = Grader.from_settings(dataclasses.replace(chosen, quality=quality))
        elif quality is not None:
            grader = grader.with_quality(quality)
        self.grader = grader
        if self.grader.verdict == BACKED:
            require_references(self.problems)
        self.reward_fn = make_reward(reward, interface_credit=interface_credit)
        self.render_mode = render_mode
        self.observation_space = UnicodeText(MAX_OBSERVATION_CHARS)
        self.action_space = UnicodeText(MAX_ACTION_CHARS)
        self.problem: Problem | None = None
        #: The last ``GradeResult`` (timings, cache hit, files): kept out of ``info`` so that
        #: equal answers give equal info, as Gymnasium's determinism check expects.
        self.last_grade: GradeResult | None = None

    def _deadline(self, options: dict[str, Any] | None) -> float | None:
        """``options["grading_deadline"]``: a ``time.time()`` after which grading stops."""
        value = (options or {}).get("grading_deadline")
        if value is not None and not isinstance(value, (int, float)):
            raise ArgumentTypeError(f"grading_deadline must be a time.time() number, got {type(value).__name__}")
        return None if value is None else float(value)

    def _choose(self, options: dict[str, Any] | None) -> Problem:
        problem_id = (options or {}).get("problem_id")
        if problem_id is not None:
            if problem_id not in self._by_id:
                raise UnknownProblemError(f"unknown problem_id {problem_id!r}")
            return self._by_id[problem_id]
        return self.problems[int(self.np_random.integers(len(self.problems)))]

    @property
    def quality(self) -> QualityStage | None:
        """The grader's quality stage, run on passing answers (``grading.quality``), or None."""
        return self.grader.quality

    def _reward(self, result: GradeResult) -> float:
        """The reward of a verdict (the grader's stages, quality included, have run)."""
        return float(self.reward_fn(result))

    def _grade_info(self, result: GradeResult, reward: float) -> dict[str, Any]:
        """The ``info`` keys a graded step carries (documented in each env's docstring)."""
        self.last_grade = result
        return {
            "problem": self.problem.metadata() if self.problem else None,
            "passed": result.passed,
            "failure_class": result.failure_class,
            "reason": result.reason,
            "stages": {s.name: {"passed": s.passed, "detail": s.detail} for s in result.stages},
            "tests": {"total": result.tests.total, "passed": result.tests.passed, "failed": result.tests.failed},
            "official": result.official,
            "reference_check": result.reference_check,
            "quality": result.quality,
            "extraction": result.extraction,
            "log_tail": result.log_tail,
            "excluded": result.excluded,
            "late": result.late,
            "infra_failure": result.infra_failure,
            "reward": reward,
        }
