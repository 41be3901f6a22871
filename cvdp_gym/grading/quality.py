"""The quality stage: a passing answer measured against its reference, after the verdict.

Correct comes first: only an answer whose tests passed, and that the reference-equivalence
grader shows equivalent to the reference (the backed verdict's proof, or a run of that grader
here), is measured: a failing one gets no quality, so the ``quality`` reward cannot pay for a
small wrong design, nor for a design the test bench misses a bug in. What is measured is the
text the simulator compiled (the answer gate, :mod:`cvdp_gym.gate`, refuses an answer that
tools would read differently: ``ifdef SYNTHESIS``). The answer and the
problem's reference design are paired as the reference-equivalence grader pairs them
(``grading.backed.reference_check``: the answer's files joined into one design, the top
module the benchmark names), both run through the same flow (``QualitySettings.flow``:
``asic`` or ``fpga``), and ``quality.scores`` turns the two measurements into a score.

Each design is measured once: a measurement is cached in the grade cache under a key of
the flow, its settings (the liberty's SHA-256, the clock, the device), the quality tools'
and the simulation root's fingerprints and the design's text, so re-scoring an answer, or
the reference of every answer to a problem, costs a lookup. A measurement a time or memory
limit stopped (``Measurement.limited``) is not kept: another run may finish.

``GradeResult.quality`` holds the outcome: ``flow``, ``score`` (None when either design
could not be measured, with ``failure``: one line), ``index``, ``ratios``, ``extra_warnings``,
``candidate`` and ``reference`` (their measurements) and ``seconds``; empty when no quality
stage ran (quality off, the tests failed, or a problem with no reference design: then
``failure`` alone says why).
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cvdp_gym.data.problems import SCORING_HARNESS, Problem
from cvdp_gym.errors import ConfigError
from cvdp_gym.execution.cache import GradeCache, content_key
from cvdp_gym.grading.backed import EQUIVALENT, equivalence, reference_check
from cvdp_gym.grading.result import GradeResult
from cvdp_gym.harness.runner import HarnessRunner
from cvdp_gym.quality import asic, fpga, liberty_cells, synthesis_warnings
from cvdp_gym.quality import sources as design_sources
from cvdp_gym.quality.asic import measure_asic
from cvdp_gym.quality.fpga import DEVICES, measure_fpga
from cvdp_gym.quality.liberty import Liberty, resolve_liberty
from cvdp_gym.quality.metrics import Measurement
from cvdp_gym.quality.scores import score_measurements
from cvdp_gym.sandbox import Sandbox
from cvdp_gym.toolchain import quality_tools

if TYPE_CHECKING:
    from cvdp_gym.grading.stages import StageContext

__all__ = ["FLOWS", "QUALITY_VERSION", "QualitySettings", "QualityStage", "design_pair"]

#: Bumped when what a measurement holds changes (part of every cache key, beside the flows'
#: own source text: a changed script never reuses an old measurement).
QUALITY_VERSION = 1


def _flows_digest() -> str:
    """A hash of the flow modules' text: their Yosys, ABC and OpenSTA scripts are written there."""
    digest = hashlib.sha256()
    for module in (asic, fpga, liberty_cells, design_sources, synthesis_warnings):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


FLOWS = ("asic", "fpga")


@dataclass(frozen=True)
class QualitySettings:
    """How designs are measured: the flow, its library or device, and the clock.

    ``liberty``: a pinned library's name (``cvdp-gym quality fetch NAME``) or a ``.lib`` path
    (ASIC); ``clock_ns``: the clock period every design is timed at (10 ns, TuRTLe's, unless a
    problem needs another); ``device``/``package``: nextpnr-ice40's part (FPGA).
    """

    flow: str = "asic"
    liberty: str = "nangate45"
    clock_ns: float = 10.0
    device: str = "hx8k"
    package: str = "ct256"

    def __post_init__(self) -> None:
        if self.flow not in FLOWS:
            raise ConfigError(f"unknown quality flow {self.flow!r}; expected {' or '.join(FLOWS)}")
        if not self.clock_ns > 0:
            raise ConfigError(f"the quality clock must be a positive period in ns, not {self.clock_ns}")
        if self.flow == "fpga" and self.device not in DEVICES:
            raise ConfigError(f"unknown iCE40 device {self.device!r}; expected one of {', '.join(DEVICES)}")

    @classmethod
    def of(cls, value: QualitySettings | dict[str, Any] | str | None, *, reward: object = None) -> QualitySettings | None:
        """Settings from themselves, a dict of their fields, a flow name, or None (quality off,
        unless ``reward`` is the ``quality`` reward: then the defaults)."""
        if value is None:
            return cls() if reward == "quality" else None
        if isinstance(value, QualitySettings):
            return value
        if isinstance(value, str):
            return cls(flow=value)
        unknown = sorted(set(value) - set(cls.__dataclass_fields__))
        if unknown:
            raise ConfigError(f"unknown quality settings {unknown}; known: {sorted(cls.__dataclass_fields__)}")
        return cls(**value)


def design_pair(problem: Problem, files: dict[str, str]) -> tuple[dict[str, str], dict[str, str], str] | str:
    """``(answer sources, reference sources, top)`` for ``problem``, or why there is no pair."""
    if problem.scoring != SCORING_HARNESS:
        return "a comprehension problem has no design"
    check = reference_check(problem)
    if isinstance(check, str):
        return check
    if check.same:
        top = str(problem.extra.get("top") or "")
        if not top or not problem.reference:
            return "the problem names no top module to measure"
        return dict(files), dict(problem.reference), top
    return check.answer(files), dict(check.twin.reference), str(check.twin.extra["top"])


class QualityStage:
    """Measures designs on one flow (cached) and scores a passing answer against its reference:
    the last grading stage (``grading.stages``), which the ``Grader`` runs on its verdicts."""

    name = "quality"

    def __init__(self, sandbox: Sandbox, settings: QualitySettings | None = None, *, cache: GradeCache | None = None) -> None:
        self.sandbox = sandbox
        self.settings = settings or QualitySettings()
        self.cache = cache
        self._runner: HarnessRunner | None = None  # the reference grader's, made on first use
        self.liberty: Liberty | None = resolve_liberty(self.settings.liberty) if self.settings.flow == "asic" else None
        self.tools = quality_tools.mount() if quality_tools.ready() else None
        self._fingerprint = [
            QUALITY_VERSION, _flows_digest(), asdict(self.settings), self.liberty.sha256 if self.liberty else None,
            quality_tools.fingerprint() if self.tools else None, sandbox.toolchain.fingerprint(),
        ]

    def measure(self, sources: dict[str, str], top: str) -> Measurement:
        """One design's measurement on this stage's flow (from the cache when it was made before)."""
        key = content_key("quality", *self._fingerprint, sources, top) if self.cache is not None else None
        if key is not None and (hit := self.cache.get(key)) is not None:
            return Measurement.from_dict(hit)
        with tempfile.TemporaryDirectory(prefix="cvdp-quality-") as scratch:
            measurement = self._run(sources, top, Path(scratch))
        if key is not None and not measurement.limited:
            self.cache.put(key, measurement.to_dict())
        return measurement

    def _run(self, sources: dict[str, str], top: str, scratch: Path) -> Measurement:
        settings = self.settings
        if settings.flow == "asic":
            assert self.liberty is not None
            return measure_asic(
                self.sandbox, sources, top, self.liberty.path, clock_ns=settings.clock_ns, scratch=scratch, tools=self.tools,
            )
        return measure_fpga(
            self.sandbox, sources, top, clock_mhz=1000.0 / settings.clock_ns, device=settings.device,
            package=settings.package, scratch=scratch, tools=self.tools,
        )

    def equivalent(self, problem: Problem, result: GradeResult) -> str:
        """Why the answer is not shown equivalent to its reference ("" when it is): its quality
        is a figure of the design the tests judged only then (a split view, or a design the
        test bench passes and the reference does not match, is measured never). An answer the
        reference grader itself passed, or that the backed verdict proved, needs no second run."""
        if result.reference_check.get("verdict") == EQUIVALENT:
            return ""
        check = reference_check(problem)
        if isinstance(check, str):
            return check
        if check.same:  # graded by the reference grader: its pass is the proof
            return ""
        if self._runner is None:
            self._runner = HarnessRunner(self.sandbox)
        run = self._runner.run(check.twin, check.answer(result.files))
        verdict = equivalence(run.passed, run.failure_class)
        return "" if verdict == EQUIVALENT else f"the answer is not shown equivalent to the reference ({verdict}: {run.reason[:300]})"

    def run(self, context: StageContext) -> None:
        """The stage's one interface: ``context.result`` assessed (see ``assess``)."""
        if context.result is not None:
            context.result = self.assess(context.problem, context.result)

    def assess(self, problem: Problem, result: GradeResult) -> GradeResult:
        """``result`` with its ``quality`` filled (a passing answer measured against its
        reference); a failing answer is returned as it is."""
        if not result.passed:
            return result
        pair = design_pair(problem, result.files)
        if isinstance(pair, str):
            result.quality = {"flow": self.settings.flow, "score": None, "failure": f"no quality: {pair}"}
            return result
        answer, reference, top = pair
        start = time.monotonic()
        proof = self.equivalent(problem, result)
        if proof:
            result.quality = {"flow": self.settings.flow, "score": None, "failure": f"no quality: {proof}"}
            return result
        candidate, baseline = self.measure(answer, top), self.measure(reference, top)
        score = score_measurements(candidate, baseline)
        result.quality = {
            "flow": self.settings.flow,
            **score.to_dict(),
            "candidate": candidate.to_dict(),
            "reference": baseline.to_dict(),
            "seconds": round(time.monotonic() - start, 3),
        }
        return result
