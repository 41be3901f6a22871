"""``GraderSettings``: everything a ``Grader`` is built from, each default written once.

The command line's option groups, the environments, the grading service and the adapters
all describe a grader with this one object and build it with ``Grader.from_settings``, so an
option has one home and one default wherever a grader is made.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cvdp_gym.grading.backed import TESTBENCH
from cvdp_gym.parsers.comprehension import ROUTE_CHAT

if TYPE_CHECKING:
    from cvdp_gym.data.repos import RepoStore
    from cvdp_gym.execution.cache import GradeCache
    from cvdp_gym.execution.executors import GradeExecutor
    from cvdp_gym.grading.judge import JudgeSettings, LLMJudge
    from cvdp_gym.grading.quality import QualitySettings
    from cvdp_gym.sandbox import Sandbox

__all__ = ["GraderSettings"]


@dataclass(frozen=True)
class GraderSettings:
    """How answers are graded.

    ``sandbox``: ``bubblewrap``, ``docker``, ``podman`` or a sandbox object; ``toolchain``:
    ``root`` (None: the default, the pinned Icarus 13 root) or ``host``; ``timeout_s``: the
    wall-clock limit of one harness service. ``cache``: ``True`` (the user's grade cache),
    a path or a ``GradeCache``, ``False``/``None``: none. ``lint`` and ``interface``: the cheap
    stages before the simulation. ``executor``: where the stages after extraction run
    (``threads[:N]``, ``processes[:N]``, ``ray[:ADDRESS]`` or an executor object; None: the
    calling thread). ``judge``: the LLM judge of cid009/cid010 answers (settings: one is made,
    caching its calls in the grade cache); ``parse_route``: ``chat`` or ``import``.
    ``repos``: where repository-context problems find their repositories (None:
    ``$CVDP_HEAVY_REPOS_PATH``). ``harness_seed`` and ``seeds``: the harness seed (None: a fresh
    one per run) and how many seeds a randomised harness is run with. ``verdict``: ``testbench``
    or ``testbench+reference``. ``quality``: the quality stage's settings (``QualitySettings``,
    a dict of their fields or a flow name; None: off), its measurements cached in
    ``quality_cache`` (None: the grade cache).
    """

    sandbox: str | Sandbox = "bubblewrap"
    toolchain: str | None = None
    timeout_s: float = 300.0
    cache: bool | str | Path | GradeCache | None = True
    lint: bool = True
    interface: bool = True
    executor: str | GradeExecutor | None = None
    judge: JudgeSettings | LLMJudge | None = None
    parse_route: str = ROUTE_CHAT
    repos: str | Path | RepoStore | None = None
    harness_seed: int | None = None
    seeds: int = 1
    verdict: str = TESTBENCH
    quality: QualitySettings | dict[str, Any] | str | None = None
    quality_cache: str | Path | GradeCache | None = None
