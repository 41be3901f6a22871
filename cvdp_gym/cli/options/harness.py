"""Where and how a command runs harnesses: the sandbox, the toolchain, limits, parallelism,
seeds and the verdict rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cvdp_gym.cli._options import ReposOpt, SandboxOpt, ToolchainOpt, harness_runner

if TYPE_CHECKING:
    from cvdp_gym.grading.settings import GraderSettings
    from cvdp_gym.harness.runner import HarnessRunner


@dataclass(frozen=True)
class HarnessOptions:
    """``--sandbox``, ``--toolchain``, ``--timeout``, ``--executor``, ``--jobs``, ``--repos``,
    ``--seed``, ``--seeds``, ``--verdict``; a command shows those it uses (``Group(only=...)``)
    and may give its own defaults (``check``: ``--jobs 1 --seeds 3``)."""

    sandbox: SandboxOpt = "bubblewrap"
    toolchain: ToolchainOpt = None
    timeout: Annotated[float, typer.Option(help="Wall-time limit per harness service, seconds.")] = 300.0
    executor: Annotated[str | None, typer.Option(help="Where simulations run: threads (default), processes[:N] or ray[:ADDRESS].")] = None
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Harness runs in parallel.")] = 2
    repos: ReposOpt = None
    seed: Annotated[int | None, typer.Option(help="Seed of the harnesses' Python randomness and cocotb's RANDOM_SEED (reproduces a recorded run; default: a fresh seed per run, recorded).")] = None
    seeds: Annotated[int, typer.Option(help="Run an answer to a harness that draws at random with this many seeds (--seed, --seed+1, ...); flaky when the verdicts differ.")] = 1
    verdict: Annotated[str, typer.Option(help="testbench (the problem's own test bench decides) or testbench+reference (a pass also needs the answer to be equivalent to the problem's reference design; the official figures stay the test bench's).")] = "testbench"

    def runner(self) -> HarnessRunner:
        """The harness runner these options name, or a one-line error and exit 2."""
        return harness_runner(self.sandbox, self.toolchain, self.timeout, self.repos)

    def grader_settings(self, **more: Any) -> GraderSettings:
        """The grader's settings these options name (``more``: the fields other groups or the
        command set: ``cache``, ``executor`` once resolved, ``judge``, ``quality``, ...)."""
        from cvdp_gym.grading.settings import GraderSettings

        fields: dict[str, Any] = {
            "sandbox": self.sandbox, "toolchain": self.toolchain, "timeout_s": self.timeout, "repos": self.repos,
            "harness_seed": self.seed, "seeds": self.seeds, "verdict": self.verdict,
        }
        return GraderSettings(**{**fields, **more})
