"""Sandboxes that run untrusted commands (harnesses, agents' bash) with hard limits."""

from cvdp_gym.sandbox.bwrap import (
    BubblewrapSandbox,
    Limits,
    Mount,
    SandboxResult,
    SandboxUnavailable,
)

__all__ = ["BubblewrapSandbox", "Limits", "Mount", "SandboxResult", "SandboxUnavailable"]
