"""Every flow by name: how one answer to a benchmark problem runs and is judged.

A flow runs one answer as its benchmark's own scripts run it, in the sandbox, on the
simulator the problem names, and returns a ``HarnessResult`` whose ``official`` holds the
benchmark's own verdict (over the whole log) beside the verdict this project trusts (the
test bench's own lines: :mod:`cvdp_gym.harness.testbench`). ``HarnessRunner.run`` hands a
problem with a ``Problem.flow`` to ``flow_for(problem.flow)``; CVDP's cocotb harnesses keep
their own path. The benchmarks' flows are their plug-ins' ``flow`` parts
(``cvdp_gym/benchmarks/<name>/flow.py``, :mod:`cvdp_gym.plugins`), read on first use; the
project's own are shared the same way: the ``reference`` flow (:mod:`cvdp_gym.equivalence`)
judges an answer by equivalence with the problem's reference design (training sets, issue
29), the verification tasks' flows (:mod:`cvdp_gym.tasks`) grade a test bench or assertions
written for a problem's reference. Every flow is written against its kit,
:mod:`cvdp_gym.harness.flows.flow_kit` (the ``Flow`` protocol and what a flow runs with).
"""

from __future__ import annotations

from cvdp_gym.harness.flows.flow_kit import Flow
from cvdp_gym.plugins import PluginTable

__all__ = ["FLOWS", "Flow", "flow_for"]


#: Every flow, by the grader name problems give (``Problem.grader``): the project's own (the
#: ``reference`` flow of :mod:`cvdp_gym.equivalence`, the verification tasks' of
#: :mod:`cvdp_gym.tasks`), then the plug-ins', each read by name from its ``flow`` module.
FLOWS: PluginTable[Flow] = PluginTable("flow", "FLOWS", shared=("cvdp_gym.equivalence", "cvdp_gym.tasks"))


def flow_for(name: str) -> Flow | None:
    """The flow called ``name``, or None."""
    return FLOWS.get(name)
