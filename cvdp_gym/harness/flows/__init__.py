"""How one answer to a benchmark problem runs: the flows by name (:mod:`.catalog`), and what a flow
is written with (:mod:`.flow_kit`); each benchmark's own flow is in its plug-in package, the
``reference`` flow in :mod:`cvdp_gym.equivalence`, the verification tasks' in :mod:`cvdp_gym.tasks`."""

from cvdp_gym.harness.flows.catalog import FLOWS, Flow, flow_for

__all__ = ["FLOWS", "Flow", "flow_for"]
