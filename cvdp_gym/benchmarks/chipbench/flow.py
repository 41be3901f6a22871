"""ChipBench's flow: VerilogEval v2's, under ChipBench's name (its ``Makefile.in`` and
``scripts/sv-iv-analyze`` are VerilogEval v2's byte for byte). The verdict is VerilogEval v2's
too: a pass needs the test bench's ``Mismatches: 0 in N samples`` with N > 0, where the
script's own reading (``official``) also passes ``0 in 0``."""

from __future__ import annotations

from cvdp_gym.benchmarks.verilog_eval_v2.flow import VerilogEvalV2Flow

__all__ = ["FLOWS", "ChipBenchFlow"]


class ChipBenchFlow(VerilogEvalV2Flow):
    """Runs a ChipBench sample as its Makefile does and classifies it as ``sv-iv-analyze`` does."""

    name = "chipbench"


#: This plug-in's flows (:mod:`cvdp_gym.plugins`).
FLOWS = (ChipBenchFlow(),)
