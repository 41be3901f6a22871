"""The grader's verdict on one answer: ``GradeResult``, its ``Stage`` list and their constants.

Contract: a verdict is plain data. ``to_dict()``/``from_dict()`` round-trip it through JSON,
the result cache and process or Ray node boundaries unchanged, and every stage of
``STAGES`` is present in order (``passed`` None when it did not run). A comprehension
answer (a text scored against a reference, :mod:`cvdp_gym.grading.comprehension`) uses the
same shape: ``format`` (the official JSON answer parsed), ``syntax`` and ``interface`` not
run, ``tests`` (the scoring: BLEU/ROUGE-2 or the judge over its threshold), with its
``scoring`` kind, ``scores`` and the official report's ``credit``. Rewards, feedback,
the environments and the reports read verdicts; only the grader makes them, so this module
sits at the bottom of ``cvdp_gym.grading`` and imports nothing of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from cvdp_gym.data.problems import Problem
from cvdp_gym.harness.results import (
    HARNESS_ERROR,
    INFRA_ERROR,
    INFRA_FAILURES,
    TIMEOUT,
    TOOLCHAIN_GAP,
    UNDECIDED,
    UNSUPPORTED,
    TestCounts,
)

#: 2: results carry the failing tests (``failures``); 3: the harness seed; 4: benchmark flows'
#: ``official``; 5: no pass without a verdict (issue 35: ``undecided``, runs cut short never
#: pass), so no verdict cached before it is served.
GRADER_VERSION = 5
#: Failure classes of the grader's own stages (the harness adds its classes).
FORMAT_ERROR = "format_error"
INTERFACE_ERROR = "interface_error"
#: Failure classes of comprehension answers: scored under the official threshold; a judge
#: problem graded with no judge (left out of scores unless asked); a judge that gave no
#: usable score; a problem the official scorer cannot score (a reference under two words).
LOW_SCORE = "low_score"
NOT_JUDGED = "not_judged"
JUDGE_ERROR = "judge_error"
SCORING_ERROR = "scoring_error"
#: Failure classes of ``verdict="testbench+reference"`` (:mod:`cvdp_gym.grading.backed`): the
#: test bench passed, but the answer differs from the reference; the problem has no reference
#: to compare with (``excluded``). Where the reference-equivalence grader could not decide, the
#: class is ``undecided`` (``harness.results``; ``excluded`` too): never a pass.
NOT_EQUIVALENT = "not_equivalent"
NO_REFERENCE = "no_reference"
#: ``GradeResult.scoring`` of answers graded by a problem's harness.
HARNESS_SCORING = "harness"
STAGES = ("format", "syntax", "interface", "tests")
#: Failure classes that are not the answer's fault (``GradeResult.excluded``).
EXCLUDED = (TOOLCHAIN_GAP, UNSUPPORTED, HARNESS_ERROR, NOT_JUDGED, JUDGE_ERROR, NO_REFERENCE, UNDECIDED)
LOG_TAIL_CHARS = 2000


@dataclass
class Stage:
    """One stage's verdict: ``passed`` is None when the stage did not run."""

    name: str
    passed: bool | None
    detail: str = ""
    seconds: float = 0.0


@dataclass
class GradeResult:
    """Everything a reward function or a report needs about one graded answer."""

    problem_id: str
    stages: list[Stage]
    failure_class: str | None
    reason: str
    tests: TestCounts = field(default_factory=TestCounts)
    files: dict[str, str] = field(default_factory=dict)
    extraction: dict[str, Any] = field(default_factory=dict)
    log_tail: str = ""
    wall_s: float = 0.0
    cached: bool = False
    late: bool = False  # not graded by the caller's deadline: scored ``timeout``, never cached
    #: Failing cocotb tests, ``{"test", "message"}`` (from the results files; bounded).
    failures: list[dict[str, str]] = field(default_factory=list)
    #: How the answer was scored: ``harness``, ``bleu`` (cid006/cid008) or ``judge`` (cid009/cid010).
    scoring: str = HARNESS_SCORING
    #: A comprehension answer's scores: ``bleu`` and ``rouge`` (BLEU-2, ROUGE-2), or ``judge``.
    scores: dict[str, float] = field(default_factory=dict)
    #: A comprehension answer's credit in the official report (BLEU, or the judge's score);
    #: None for harness answers (their credit is the pass bit: ``official_credit``).
    credit: float | None = None
    #: The seed the harness ran with (None: no harness ran); the same seed reproduces it.
    seed: int | None = None
    #: Why the harness's verdict can change from run to run (``harness.randomness``); empty: it cannot.
    randomised: list[str] = field(default_factory=list)
    #: Several seeds graded (``grading.seed_verdicts``): ``{"seed", "verdict"}`` per run, in order.
    seed_verdicts: list[dict[str, Any]] = field(default_factory=list)
    #: A benchmark flow's own verdict by the benchmark's own rule over the whole log
    #: (``harness.flows``: VerilogEval's class, RTLLM's rules); empty for CVDP answers.
    official: dict[str, Any] = field(default_factory=dict)
    #: The problem's known benchmark defect: a failure here is not the answer's (``excluded``).
    defect: str | None = None
    #: The harness's services, in order, ``{"name", "passed", "returncode", "log_tail"}`` (the
    #: tail bounded to ``LOG_TAIL_CHARS``); empty when no harness ran (and in a verdict cached
    #: before services were kept). NeMo-Gym's CVDP report scores each service's exit.
    services: list[dict[str, Any]] = field(default_factory=list)
    #: ``verdict="testbench+reference"``: the check against the reference of an answer its test
    #: bench passed (``grading.backed``: ``verdict`` equivalent, different, undecided or
    #: no_reference, and the reference grader's reason); empty when none ran.
    reference_check: dict[str, Any] = field(default_factory=dict)
    #: The quality stage's outcome on a passing answer (``grading.quality``: the score against
    #: the reference, its ratios and both measurements); empty when it did not run.
    quality: dict[str, Any] = field(default_factory=dict)

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    @property
    def format_ok(self) -> bool:
        return bool(self.stage("format").passed)

    @property
    def syntax_ok(self) -> bool:
        return bool(self.stage("syntax").passed)

    @property
    def interface_ok(self) -> bool:
        return bool(self.stage("interface").passed)

    @property
    def passed(self) -> bool:
        return bool(self.stage("tests").passed)

    @property
    def test_fraction(self) -> float:
        return self.tests.passed / self.tests.total if self.tests.total else float(self.passed)

    @property
    def official_credit(self) -> float:
        """What this answer adds to the official report: the comprehension credit, else the pass bit."""
        return self.credit if self.credit is not None else float(self.passed)

    @property
    def flaky(self) -> bool:
        """Graded with several seeds, and the verdicts differ."""
        return len({v["verdict"] for v in self.seed_verdicts}) > 1

    @property
    def verdict(self) -> str:
        return "passed" if self.passed else (self.failure_class or "failed")

    @property
    def excluded(self) -> bool:
        """Not the answer's fault (toolchain gap, unsupported, a broken harness, no judge or a
        judge that failed, a failure on a problem the benchmark itself gets wrong; under
        ``testbench+reference``, no reference or an undecided equivalence): leave out
        of training. Unlike ``infra_failure``, a harness answer's excluded verdict is the same
        on every try: cached like any verdict, never re-graded."""
        return self.failure_class in EXCLUDED or (
            self.defect is not None and not self.passed
        )

    @property
    def infra_failure(self) -> bool:
        """The grading machinery failed on this run, not the answer (``infra_error`` or
        ``late``): the verdict says nothing about the answer, and a second try of the same
        answer may give a real one. Never cached."""
        return self.late or self.failure_class in INFRA_FAILURES

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["passed"] = self.passed
        data["flaky"] = self.flaky
        data["infra_failure"] = self.infra_failure
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GradeResult:
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["stages"] = [Stage(**s) for s in data["stages"]]
        fields["tests"] = TestCounts(**data.get("tests", {}))
        return cls(**fields)


def late_result(problem: Problem, files: Mapping[str, str]) -> GradeResult:
    """The verdict of an answer that was not graded by the deadline."""
    stages = [Stage("format", True, f"{len(files)} file(s)")] + [Stage(n, None) for n in STAGES[1:]]
    return GradeResult(problem.id, stages, TIMEOUT, "not graded by the grading deadline", files=dict(files), late=True)


def infra_result(problem: Problem, files: Mapping[str, str], reason: str) -> GradeResult:
    """The verdict of an answer the grading machinery failed to grade (``infra_error``): the
    sandbox would not start, or the worker grading it was lost."""
    stages = [Stage("format", True, f"{len(files)} file(s)")] + [Stage(n, None) for n in STAGES[1:]]
    return GradeResult(problem.id, stages, INFRA_ERROR, reason, files=dict(files))
