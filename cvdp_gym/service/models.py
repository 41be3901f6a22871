"""The service's request and answer bodies (pydantic models: FastAPI validates them, 422 on
a wrong shape, and writes them into ``/openapi.json``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cvdp_gym.errors import ConfigError

RewardKind = Literal["shaped", "partial", "binary", "quality", "kills"]
#: The verdict options (:mod:`cvdp_gym.grading.backed`).
VerdictKind = Literal["testbench", "testbench+reference"]


class GradeRequest(BaseModel):
    """One answer to grade: a model's text ``response`` (its code blocks are extracted as
    grading does) or the ``files`` an agent wrote (workspace path → text), not both."""

    model_config = ConfigDict(extra="forbid")

    problem_id: str = Field(min_length=1, max_length=500)
    response: str | None = None
    files: dict[str, str] | None = None
    reward: RewardKind | None = Field(default=None, description="shaped, partial, binary, quality (a service started with --quality) or kills (the verification tasks'; default: the server's, shaped unless set).")
    deadline_s: float | None = Field(default=None, gt=0, description="Seconds to grade by (the server's limit caps it); a job still running then is cancelled and scored timeout.")
    seed: int | None = Field(default=None, ge=0, lt=2**32, description="Harness seed of a randomised harness (default: the server's); cocotb's seed is 32 bits.")
    verdict: VerdictKind | None = Field(default=None, description="testbench, or testbench+reference: a pass also needs the answer to be equivalent to the problem's reference (default: the server's).")

    @model_validator(mode="after")
    def _one_answer(self) -> GradeRequest:
        if (self.response is None) == (self.files is None):
            raise ConfigError("give exactly one of 'response' (a model's text) or 'files' (path -> text)")
        return self


class StageModel(BaseModel):
    name: str
    passed: bool | None
    detail: str = ""
    seconds: float = 0.0


class TestsModel(BaseModel):
    total: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0


class GradeAnswer(BaseModel):
    """The verdict on one answer, and its reward."""

    problem_id: str
    reward: float
    reward_kind: RewardKind
    #: The verdict option the answer was graded under.
    verdict_kind: VerdictKind = "testbench"
    #: Every reward kind's value (the shaping's parts are in ``stages``).
    rewards: dict[str, float]
    verdict: str
    failure_class: str | None
    passed: bool
    reason: str
    tests: TestsModel
    stages: list[StageModel]
    failures: list[dict[str, str]] = []
    cached: bool
    late: bool
    excluded: bool
    infra_failure: bool
    seed: int | None = None
    #: Seconds: waiting for a grading slot, grading (the grader's own wall time), in all.
    queue_s: float
    grade_s: float
    total_s: float
    extraction: dict[str, Any] = {}
    #: A benchmark's own verdict by its own rule over the whole log (VerilogEval, RTLLM; empty for CVDP).
    official: dict[str, Any] = {}
    #: The problem's known benchmark defect: a failure there is not the answer's (``excluded``).
    defect: str | None = None
    #: ``testbench+reference``: the check against the reference of an answer its test bench passed.
    reference_check: dict[str, Any] = {}
    #: A passing answer's design quality against its reference (``serve --quality``; empty otherwise).
    quality: dict[str, Any] = {}


class ProblemSummary(BaseModel):
    id: str
    category: str
    difficulty: str | None
    agentic: bool
    scoring: str
    targets: list[str]
    unsupported: str | None = None
    benchmark: str = "cvdp"
    task: str = ""
    defect: str | None = None


class ProblemList(BaseModel):
    dataset: str
    count: int
    problems: list[ProblemSummary]
