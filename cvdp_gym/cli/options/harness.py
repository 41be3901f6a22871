"""Where and how a command runs harnesses: the sandbox, the toolchain, limits, parallelism,
seeds and the verdict rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cvdp_gym.cli._options import (
    ExecutorOpt,
    JobsOpt,
    ReposOpt,
    SandboxOpt,
    SeedOpt,
    SeedsOpt,
    TimeoutOpt,
    ToolchainOpt,
    VerdictOpt,
    harness_runner,
)

if TYPE_CHECKING:
    from cvdp_gym.harness.runner import HarnessRunner


@dataclass(frozen=True)
class HarnessOptions:
    """``--sandbox``, ``--toolchain``, ``--timeout``, ``--executor``, ``--jobs``, ``--repos``,
    ``--seed``, ``--seeds``, ``--verdict``; a command shows those it uses (``Group(only=...)``)
    and may give its own defaults (``check``: ``--jobs 1 --seeds 3``)."""

    sandbox: SandboxOpt = "bubblewrap"
    toolchain: ToolchainOpt = None
    timeout: TimeoutOpt = 300.0
    executor: ExecutorOpt = None
    jobs: JobsOpt = 2
    repos: ReposOpt = None
    seed: SeedOpt = None
    seeds: SeedsOpt = 1
    verdict: VerdictOpt = "testbench"

    def runner(self) -> HarnessRunner:
        """The harness runner these options name, or a one-line error and exit 2."""
        return harness_runner(self.sandbox, self.toolchain, self.timeout, self.repos)
