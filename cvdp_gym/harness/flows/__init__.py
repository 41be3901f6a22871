"""How one answer to a benchmark problem runs: the flows by name (:mod:`.catalog`) and the shared
``reference`` flow (:mod:`.reference`); each benchmark's own flow is in its plug-in package."""

from cvdp_gym.harness.flows.catalog import FLOWS, Flow, flow_for

__all__ = ["FLOWS", "Flow", "flow_for"]
