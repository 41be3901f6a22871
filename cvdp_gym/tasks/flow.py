"""The verification tasks' flows, as the flow table reads them (:data:`cvdp_gym.harness.flows.FLOWS`)."""

from cvdp_gym.tasks.assertion_flow import AssertionTaskFlow
from cvdp_gym.tasks.testbench_flow import TestbenchTaskFlow

FLOWS = (TestbenchTaskFlow(), AssertionTaskFlow())
