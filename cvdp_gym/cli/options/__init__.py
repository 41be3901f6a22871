"""Option groups: the options several commands share, declared once as dataclasses whose
fields carry the flag, help text and default (``Annotated[type, typer.Option(...)]``).

A command takes the groups as parameters and :func:`grouped` turns them into typer options;
``Annotated[HarnessOptions, Group(only=..., jobs=1)]`` shows a subset or other defaults. A
command's rules of which options go together live on its options object (``validate()``,
raising :class:`cvdp_gym.errors.ConfigError`), so they can be tested without the CLI.
"""

from cvdp_gym.cli.options.answer import AnswerOptions
from cvdp_gym.cli.options.command import grouped
from cvdp_gym.cli.options.endpoint import EndpointOptions
from cvdp_gym.cli.options.episodes import EpisodeOptions
from cvdp_gym.cli.options.group import Group
from cvdp_gym.cli.options.harness import HarnessOptions
from cvdp_gym.cli.options.judge import JudgeOptions
from cvdp_gym.cli.options.problems import ProblemOptions
from cvdp_gym.cli.options.quality import QualityOptions
from cvdp_gym.cli.options.sampling import SamplingOptions
from cvdp_gym.cli.options.service import ServiceOptions

__all__ = [
    "AnswerOptions",
    "EndpointOptions",
    "EpisodeOptions",
    "Group",
    "HarnessOptions",
    "JudgeOptions",
    "ProblemOptions",
    "QualityOptions",
    "SamplingOptions",
    "ServiceOptions",
    "grouped",
]
