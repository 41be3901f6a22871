"""ChipBench's answer extraction: ``sv-generate``'s, as for VerilogEval v2 spec-to-RTL (every
ChipBench task takes that path)."""

from __future__ import annotations

from cvdp_gym.benchmarks.verilog_eval_v2.answers import extract

__all__ = ["EXTRACTORS"]

#: This plug-in's answer extraction, by flow (:mod:`cvdp_gym.plugins`).
EXTRACTORS = {"chipbench": extract}
