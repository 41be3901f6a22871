"""cvdp_gym: Gymnasium environments and a sandboxed harness runner for the NVIDIA CVDP benchmark."""

from __future__ import annotations

__version__ = "0.1.0"
