"""The answer gate: every answer read as its tools read it, against allowlists, before any
flow may pass it (:mod:`.answer_gate`)."""

from cvdp_gym.gate.answer_gate import FULL, NEVER, check
from cvdp_gym.gate.findings import Finding, Scan

__all__ = ["FULL", "NEVER", "Finding", "Scan", "check"]
