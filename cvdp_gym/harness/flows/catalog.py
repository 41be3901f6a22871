"""Every flow by name: how one answer to a benchmark problem runs and is judged.

A flow runs one answer as its benchmark's own scripts run it, in the sandbox, on the
simulator the problem names, and returns a ``HarnessResult`` whose ``official`` holds the
benchmark's own verdict (over the whole log) beside the verdict this project trusts (the
test bench's own lines: :mod:`cvdp_gym.harness.testbench`). ``HarnessRunner.run`` hands a
problem with a ``Problem.flow`` to ``flow_for(problem.flow)``; CVDP's cocotb harnesses keep
their own path. The benchmarks' flows are their plug-ins' ``flow`` parts
(``cvdp_gym/benchmarks/<name>/flow.py``, :mod:`cvdp_gym.plugins`), read on first use; the
``reference`` flow (:mod:`.reference`) is shared: it judges an answer by equivalence with
the problem's reference design (training sets, issue 29); the verification tasks' flows
(:mod:`.testbench_task`, :mod:`.assertion_task`) grade a test bench or assertions written for
a problem's reference. A flow that draws at random says ``seeded = True`` and is given the
run's seed (``run(..., seed=)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from cvdp_gym.data.problems import Problem
from cvdp_gym.harness.results import HarnessResult
from cvdp_gym.plugins import PluginTable
from cvdp_gym.sandbox.base import Limits, Sandbox

__all__ = ["FLOWS", "Flow", "flow_for"]


class Flow(Protocol):
    """Runs one answer to a benchmark problem and judges it as the benchmark does."""

    name: str
    #: Optional: the kind of answer it grades, whose allowlist the answer gate applies
    #: (:mod:`cvdp_gym.gate.system_tasks`; ``"design"`` when a flow does not say). Optional
    #: too: ``supplied(problem) -> {path: text}``, the files it compiles beside the answer
    #: (the gate counts their definitions as given).

    def run(
        self, sandbox: Sandbox, problem: Problem, files: Mapping[str, str], *, limits: Limits, keep_dir: Path | None = None,
    ) -> HarnessResult: ...


#: Every flow, by the grader name problems give (``Problem.grader``): the project's own (the
#: ``reference`` flow of :mod:`cvdp_gym.equivalence`, the verification tasks' of
#: :mod:`cvdp_gym.tasks`), then the plug-ins', each read by name from its ``flow`` module.
FLOWS: PluginTable[Flow] = PluginTable("flow", "FLOWS", shared=("cvdp_gym.equivalence", "cvdp_gym.tasks"))


def flow_for(name: str) -> Flow | None:
    """The flow called ``name``, or None."""
    return FLOWS.get(name)
