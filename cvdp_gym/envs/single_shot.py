"""``CVDP-SingleShot-v0``: one prompt, one answer, graded by the problem's harness (or, for a
comprehension problem, scored against its reference answer as the official tool scores it)."""

from __future__ import annotations

from typing import Any

from cvdp_gym.envs.base import CVDPEnvBase
from cvdp_gym.envs.prompts import single_shot_messages
from cvdp_gym.errors import ArgumentTypeError, UsageError


class SingleShotEnv(CVDPEnvBase):
    """
    ## Description

    A one-step text environment over non-agentic CVDP problems: one prompt, one answer,
    graded by the problem's harness. ``step`` extracts the target files from the answer
    (:func:`~cvdp_gym.parsers.extract_files`), grades them (format → syntax → interface →
    tests) and ends the episode.

    The other benchmarks' problems (``dataset="verilog-eval-v2:spec-to-rtl"``,
    ``"verilog-eval-v1"``, ``"rtllm-v2"``; also registered as ``RTL-SingleShot-v0``) are
    asked with their own prompts, extracted as their own scripts extract, and graded by
    their own test benches and rules on the simulator each requires
    (:mod:`cvdp_gym.harness.flows`); ``info["official"]`` holds the benchmark's own verdict.

    Comprehension problems (cid006/cid008/cid009/cid010, ``info["problem"]["scoring"]`` is
    not ``harness``) are asked for the official JSON answer ``{"response": "..."}``; ``step``
    finds the scored text as the official tool does (``parse_route``) and scores it against
    the reference answer: BLEU-2 and ROUGE-2 (cid006/cid008) or the LLM ``judge``
    (cid009/cid010), see :mod:`cvdp_gym.grading.comprehension`.

    ## Action Space

    The model's whole answer, a ``str`` of up to ``MAX_ACTION_CHARS`` characters: prose,
    fenced code blocks, ``<think>`` blocks, Harmony channels, or the official JSON shape
    ``{"code": [{"<path>": "<text>"}]}`` for several files; for a comprehension problem,
    the JSON object ``{"response": "<answer>"}``.

    ## Observation Space

    Any Unicode string up to ``MAX_OBSERVATION_CHARS`` characters. ``reset``: the user
    prompt (context files quoted as the official tool quotes them, then the request);
    ``step``: ``""`` (the episode is over).

    ## Rewards

    The only step returns ``reward`` applied to the grade (default ``shaped``: 0.0 with no
    code, 0.1 for code that does not compile, 0.4 for code that compiles but fails, 1.4
    when every test passes), plus ``interface_credit`` when the interface check passes; see
    :class:`~cvdp_gym.envs.base.CVDPEnvBase`. An answer not graded by the
    ``grading_deadline`` is scored ``timeout``.

    A comprehension answer's reward is its category's score, the credit the official report
    gives it: the BLEU-2 value (cid006/cid008) or the judge's score in [0, 1]
    (cid009/cid010), 0.0 when nothing could be scored; with ``reward="binary"``, its pass
    bit (BLEU-2 and ROUGE-2 above 0.40; a judge score of at least 0.7). Without a ``judge``,
    a cid009/cid010 answer gets 0.0 and ``excluded`` (``not_judged``).

    ## Starting State

    The problem named by ``options["problem_id"]``, else a seeded draw (see
    :class:`~cvdp_gym.envs.base.CVDPEnvBase`).
    ``reset(seed=None, options={"problem_id": ..., "grading_deadline": ...})``: the optional
    deadline is a ``time.time()``; an answer not graded by then is scored ``timeout`` with
    ``info["late"]`` set (its simulation is cancelled).

    ## Episode End

    The episode ends if any one of the following occurs:

    1. Termination: an answer was given (every episode is one step, whatever the grade).

    It is never truncated. ``step`` after the end raises ``RuntimeError`` until ``reset``.

    ## Info

    | Key | Type | When | Description |
    |-----|------|------|-------------|
    | `messages` | **list[dict[str, str]]** | reset | `[{"role": "system", ...}, {"role": "user", ...}]` to render with a chat template (the user message is the observation). |
    | `problem` | **dict** | reset, step | id, category, difficulty, agentic, targets, context file names, has_reference, unsupported, source, scoring, benchmark, task, grader, toolchain, defect (a known defect of the benchmark: a failure there is `excluded`). |
    | `passed` | **bool** | step | Every harness test passed (comprehension: the official pass bit). |
    | `failure_class` | **str or None** | step | None, `format_error`, `build_error`, `interface_error`, `reach_in` (the answer names or opens something outside its design), `test_failure`, `timeout`, `resource_limit`, `undecided` (the reference grader's stages decided nothing), `harness_error`, `infra_error`, `toolchain_gap` (host toolchain; or no nltk for BLEU) or `unsupported`; with `verdict='testbench+reference'` also `not_equivalent` or `no_reference`; comprehension: `format_error`, `low_score` (under the threshold), `not_judged`, `judge_error`, `scoring_error` (a reference under two words). |
    | `reason` | **str** | step | One line saying why. |
    | `stages` | **dict[str, dict]** | step | `{passed, detail}` for each of `format`, `syntax`, `interface`, `tests`; `passed` is None for a stage that did not run (comprehension: `format` is the JSON answer, `tests` the scoring). |
    | `tests` | **dict[str, int]** | step | cocotb test counts `{total, passed, failed}`; VerilogEval: the test bench's samples, matched and mismatched (partial credit 1 − mismatches/samples); RTLLM: one test. |
    | `official` | **dict** | step | The benchmark's own verdict by its own rule over the whole log (VerilogEval v2: its `class`; v1: its `result`; RTLLM: `auto_run` and `open`), which an answer's own printing can sway; `passed` reads only the test bench's lines. Empty for CVDP. |
    | `reference_check` | **dict** | step | `verdict='testbench+reference'`: the check against the problem's reference of an answer its test bench passed (`verdict`: `equivalent`, `different`, `undecided` or `no_reference`; `reason`, `formal`, `seconds`...); empty when none ran. |
    | `quality` | **dict** | step | With `quality` on, a passing answer's design quality against the reference (:mod:`cvdp_gym.grading.quality`): `flow`, `score` (0.5 at the reference's quality, 1.0 at half its area-delay-power, 0.0 at twice; None with `failure` when a design could not be measured), `index`, `ratios`, `extra_warnings`, `candidate` and `reference` measurements; empty when it did not run. |
    | `extraction` | **dict** | step | How the code was found: `method` (`fenced`, `raw`, `json`, `named_blocks`, `module_match`, joined by `+`, or `none`), `blocks_found`, `missing` (targets not found), `had_think`, `harmony`, `notes`; comprehension: `method` (`response`, `no_response`, `fallback`, `code` or `error`), `route`, `parsed`, `notes`. |
    | `log_tail` | **str** | step | The end of the compiler or simulator output (bounded). |
    | `scoring` | **str** | step | `harness`, `bleu` (cid006/cid008) or `judge` (cid009/cid010). |
    | `scores` | **dict[str, float]** | step | Comprehension scores: `bleu` and `rouge` (BLEU-2, ROUGE-2), or `judge`; `{}` for harness answers. |
    | `credit` | **float** | step | The answer's credit in the official report: BLEU-2 or the judge's score for comprehension, the pass bit (0.0 or 1.0) otherwise. |
    | `excluded` | **bool** | step | Not the answer's fault (toolchain gap, unsupported, not judged, judge error): leave it out. |
    | `late` | **bool** | step | Not graded by the `grading_deadline` (scored `timeout`). |
    | `infra_failure` | **bool** | step | The grading machinery failed, not the answer (`infra_error`, `late`; a broken harness is `excluded` instead): re-grade it or leave it out of group statistics. |
    | `reward` | **float** | step | The reward returned. |

    ``env.unwrapped.last_grade`` holds the full ``GradeResult`` (stage timings, cache hit,
    extracted files), kept out of ``info`` so equal answers give equal ``info``.

    ## Arguments

    ```python
    >>> import gymnasium as gym
    >>> import cvdp_gym  # registers the environments
    >>> env = gym.make("CVDP-SingleShot-v0", cache=False)
    >>> env
    <OrderEnforcing<SingleShotEnv<CVDP-SingleShot-v0>>>
    >>> observation, info = env.reset(seed=0)
    >>> info["problem"]["id"], info["problem"]["targets"]
    ('cvdp_gym_traffic_light_0001', ['rtl/traffic_light.sv'])
    >>> observation, reward, terminated, truncated, info = env.step("I would use a state machine.")
    >>> reward, terminated, truncated, info["failure_class"]
    (0.0, True, False, 'format_error')
    >>> env.close()

    ```

    ``SingleShotEnv`` has no arguments of its own: it takes those of
    :class:`~cvdp_gym.envs.base.CVDPEnvBase` (dataset and filters, sandbox, toolchain,
    reward, timeouts, cache, lint, interface check, grader, executor, judge, parse route,
    render mode), whose docstring has the table.

    ## Vectorized environment

    Grading blocks ``step``, so run environments side by side in processes. Text
    observations pass through Gymnasium's shared memory like arrays do (the observation
    space registers its own handlers; 8 MB per sub-environment), or through the pipes with
    ``vector_kwargs={"shared_memory": False}``.

    ```python
    >>> envs = gym.make_vec("CVDP-SingleShot-v0", num_envs=2, vectorization_mode="async", cache=False)
    >>> envs
    AsyncVectorEnv(CVDP-SingleShot-v0, num_envs=2)
    >>> observations, infos = envs.reset(seed=0)
    >>> len(observations), sorted(key for key in infos if not key.startswith("_"))
    (2, ['messages', 'problem'])
    >>> envs.close()

    ```

    ## Version History

    * v0: Initial version release.
    * v0 (issue 35): the `verdict` argument (`'testbench+reference'`) and the `reference_check` info key; with the default verdict nothing else changes.
    """

    agentic = False
    text_answers = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.problem = self._choose(options)
        self._grading_deadline = self._deadline(options)
        messages = single_shot_messages(self.problem)
        self._done = False
        return messages[-1]["content"], {"messages": messages, "problem": self.problem.metadata()}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.problem is None or self._done:
            raise UsageError("call reset() before step(): each episode takes one answer")
        if not isinstance(action, str):
            raise ArgumentTypeError(f"the action must be the answer text (str), got {type(action).__name__}")
        result = self.grader.grade_response(self.problem, action, deadline=self._grading_deadline)
        reward = self._reward(result)
        self._done = True
        info = self._grade_info(result, reward)
        info.update(scoring=result.scoring, scores=dict(result.scores), credit=result.official_credit)
        return "", reward, True, False, info

    def render(self) -> str | None:
        if self.render_mode == "ansi" and self.problem is not None:
            return single_shot_messages(self.problem)[-1]["content"]
        return None
