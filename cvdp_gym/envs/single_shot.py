"""``CVDP-SingleShot-v0``: one prompt, one answer, graded by the problem's harness."""

from __future__ import annotations

from typing import Any

from cvdp_gym.envs.base import CVDPEnvBase
from cvdp_gym.envs.prompts import single_shot_messages


class SingleShotEnv(CVDPEnvBase):
    """A one-step text environment over non-agentic CVDP problems.

    Observation: the user prompt (context files quoted as the official tool quotes them,
    then the request), any Unicode string up to ``MAX_OBSERVATION_CHARS`` characters.
    Action: the model's whole answer (up to ``MAX_ACTION_CHARS`` characters): prose, fenced
    code blocks, ``<think>`` blocks, Harmony channels, or the JSON shape for several files.
    ``step`` extracts the target files, grades them (format → syntax → interface → tests)
    and ends the episode.

    Arguments: ``dataset`` ('bundled' by default, a JSONL path, 'hf[:pattern]' or a
    ``Dataset``), ``ids``/``categories``/``difficulty`` filters, ``sandbox``
    ('bubblewrap' or 'docker'), ``toolchain`` ('root': the pinned Icarus 13 root, the
    default; 'host': the machine's own simulators, an explicit fallback), ``reward`` ('shaped' | 'partial' | 'binary' | callable),
    ``interface_credit``, ``timeout_s`` per harness service, ``cache`` (True: the default
    SQLite file; a path; False), ``lint`` and ``interface_check`` stages, ``executor``
    (where simulations run: 'threads[:N]', 'processes[:N]', 'ray[:ADDRESS]' or an executor
    object; default: the calling thread).

    ``reset(seed=None, options={"problem_id": ..., "grading_deadline": ...})``: the optional
    deadline is a ``time.time()``; an answer not graded by then is scored ``timeout`` with
    ``info["late"]`` set (its simulation is cancelled). ``reset`` info:
        - ``messages``: ``[{"role": "system", ...}, {"role": "user", ...}]`` to render with a
          chat template.
        - ``problem``: id, category, difficulty, targets, context file names, source.

    ``step(answer)`` info:
        - ``problem``: as above.
        - ``passed``: every harness test passed.
        - ``failure_class``: None, ``format_error``, ``build_error``, ``interface_error``,
          ``test_failure``, ``timeout``, ``resource_limit``, ``harness_error``,
          ``toolchain_gap`` (host toolchain only) or ``unsupported``.
        - ``reason``: one line saying why.
        - ``stages``: ``{format|syntax|interface|tests: {passed, detail}}``;
          ``passed`` is None for a stage that did not run.
        - ``tests``: cocotb test counts ``{total, passed, failed}``.
        - ``extraction``: how the code was found (method, blocks, missing targets, think).
        - ``log_tail``: the end of the compiler or simulator output (bounded).
        - ``excluded``: not the answer's fault (toolchain gap, unsupported): leave it out.
        - ``late``: not graded by the ``grading_deadline`` (scored ``timeout``).
        - ``reward``: the reward returned.

    ``env.unwrapped.last_grade`` holds the full ``GradeResult`` (stage timings, cache hit,
    extracted files), kept out of ``info`` so equal answers give equal ``info``.
    """

    agentic = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.problem = self._choose(options)
        self._grading_deadline = self._deadline(options)
        messages = single_shot_messages(self.problem)
        self._done = False
        return messages[-1]["content"], {"messages": messages, "problem": self.problem.metadata()}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.problem is None or self._done:
            raise RuntimeError("call reset() before step(): each episode takes one answer")
        if not isinstance(action, str):
            raise TypeError(f"the action must be the answer text (str), got {type(action).__name__}")
        result = self.grader.grade_response(self.problem, action, deadline=self._grading_deadline)
        reward = float(self.reward_fn(result))
        self._done = True
        return "", reward, True, False, self._grade_info(result, reward)

    def render(self) -> str | None:
        if self.render_mode == "ansi" and self.problem is not None:
            return single_shot_messages(self.problem)[-1]["content"]
        return None
