"""Everything ``cvdp-gym eval`` is given, as one object of option groups, and the rules of
which options go together."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cvdp_gym.cli._options import ResumeOpt
from cvdp_gym.cli.options import (
    EndpointOptions,
    EpisodeOptions,
    HarnessOptions,
    JudgeOptions,
    ProblemOptions,
    QualityOptions,
    SamplingOptions,
)
from cvdp_gym.errors import ConfigError

if TYPE_CHECKING:
    from cvdp_gym.eval.agentic import AgenticSettings
    from cvdp_gym.eval.refine import RefineSettings
    from cvdp_gym.grading.quality import QualitySettings


@dataclass(frozen=True)
class EvalOptions:
    """The options of ``cvdp-gym eval`` but its DATASET argument. Answers come from a
    ``responses`` file or from the ``endpoint`` (single answers or ``episodes``)."""

    responses: Annotated[Path | None, typer.Option(help="JSONL of answers: {id, response, sample?}.")] = None
    references: Annotated[bool, typer.Option("--references", help="Grade each problem's own reference solution as its answer: the benchmark's baseline row (with --quality, its references' figures).")] = False
    endpoint: EndpointOptions = field(default_factory=EndpointOptions)
    sampling: SamplingOptions = field(default_factory=SamplingOptions)
    episodes: EpisodeOptions = field(default_factory=EpisodeOptions)
    problems: ProblemOptions = field(default_factory=ProblemOptions)
    reward: Annotated[str | None, typer.Option(help="Reward in results and report: shaped (the default), partial, binary, quality (the shaping plus the design-quality score of a passing answer; turns --quality asic on) or kills (the fraction of seeded bugs caught: the default with --task testbench or assertion).")] = None
    k: Annotated[list[int] | None, typer.Option("-k", help="k values for pass@k (default: 1, 2, 5, 10, ... up to n, and n).")] = None
    cache: Annotated[Path | None, typer.Option(help="SQLite grade cache (default: none; judge calls are always cached, here or in --out).")] = None
    judge: JudgeOptions = field(default_factory=JudgeOptions)
    out: Annotated[Path, typer.Option(help="Folder for results.jsonl, report.{json,md,png} and the HTML report (html/index.html).")] = Path("runs/eval")
    resume: ResumeOpt = False
    harness: HarnessOptions = field(default_factory=HarnessOptions)
    quality: QualityOptions = field(default_factory=QualityOptions)

    def validate(self) -> None:
        """Raise :class:`ConfigError` (the command prints it as one line, exit 2) when the
        options do not go together, checked in a fixed order so one message names the first
        problem."""
        from cvdp_gym.grading import REWARDS
        from cvdp_gym.parsers.comprehension import ROUTES

        episodes, base_url = self.episodes, self.endpoint.base_url
        if sum((self.responses is not None, base_url is not None, self.references)) != 1:
            raise ConfigError("give one of --responses FILE, --references or --base-url URL --model NAME")
        if episodes.agent is None and episodes.agent_dir is not None:
            raise ConfigError("--agent-dir goes with --agent CMD")
        if episodes.agent is not None and episodes.agent_time <= 0:
            raise ConfigError("--agent-time must be positive")
        if self.references and (episodes.plays_agentic or episodes.refine is not None):
            raise ConfigError("--references grades the problems' reference solutions; it cannot go with --agentic or --refine")
        if episodes.plays_agentic and self.responses is not None:
            raise ConfigError("--agentic plays episodes against --base-url; it cannot grade a --responses file")
        if episodes.refine is not None and (episodes.plays_agentic or self.responses is not None):
            raise ConfigError("--refine plays refine episodes of non-agentic problems against --base-url; it cannot go with --agentic or --responses")
        if episodes.feedback is not None and episodes.refine is None:
            raise ConfigError("--feedback applies to --refine episodes only")
        try:
            self.agentic_settings()
            self.refine_settings()
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if base_url is not None and not self.endpoint.model:
            raise ConfigError("--base-url needs --model")
        if self.chosen_reward not in REWARDS:
            raise ConfigError(f"unknown reward {self.chosen_reward!r}; expected one of {', '.join(sorted(REWARDS))}")
        if self.sampling.samples < 1 or self.harness.seeds < 1 or any(v < 1 for v in self.k or []):
            raise ConfigError("-n, -k and --seeds must be at least 1")
        if self.judge.parse_route not in ROUTES:
            raise ConfigError(f"unknown --parse-route {self.judge.parse_route!r}; expected one of {', '.join(ROUTES)}")
        if self.judge.judge_concurrency < 1:
            raise ConfigError("--judge-concurrency must be at least 1")
        if self.quality.quality is not None and self.plays_episodes:
            raise ConfigError("--quality measures single answers (a --responses file or an endpoint's); not --agentic or --refine episodes yet")
        self.quality_settings()

    def quality_settings(self) -> QualitySettings | None:
        """The quality stage's settings (None: off); ``--reward quality`` turns the ASIC flow on."""
        return self.quality.settings(self.chosen_reward)

    @property
    def chosen_reward(self) -> str:
        """``--reward``, else ``kills`` for a verification task and ``shaped`` for the rest."""
        return self.reward or ("shaped" if self.problems.posing.task == "design" else "kills")

    @property
    def plays_episodes(self) -> bool:
        """Whether answers come as episodes (agentic or refine) rather than single answers."""
        return self.episodes.plays_agentic or self.episodes.refine is not None

    def agentic_settings(self) -> AgenticSettings:
        """The settings of agentic episodes (a bad tool mode or count is a ``ValueError``)."""
        from cvdp_gym.eval.agentic import AgenticSettings

        e = self.episodes
        return AgenticSettings(tool_mode=e.tool_mode, max_turns=e.max_turns, concurrency=self.sampling.concurrency)

    def refine_settings(self) -> RefineSettings:
        """The settings of refine episodes (one attempt without ``--refine``)."""
        from cvdp_gym.eval.refine import RefineSettings
        from cvdp_gym.grading.feedback import DEFAULT_FEEDBACK

        e = self.episodes
        return RefineSettings(
            max_attempts=1 if e.refine is None else e.refine, feedback=e.feedback or DEFAULT_FEEDBACK,
            concurrency=self.sampling.concurrency,
        )
