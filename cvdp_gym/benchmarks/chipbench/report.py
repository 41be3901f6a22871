"""ChipBench's report arithmetic: ``sv-iv-analyze``'s, as for VerilogEval v2
(:mod:`cvdp_gym.benchmarks.verilog_eval_v2.report`), with ChipBench's own sampling settings."""

from __future__ import annotations

from functools import partial

from cvdp_gym.benchmarks.verilog_eval_v2.report import build_section

__all__ = ["REPORTS"]

CHIPBENCH_SETTINGS = (
    "ChipBench's build samples at temperature 0.85 / top_p 0.95 (configure's defaults) with sv-generate's "
    "max_tokens 16384, 0-shot and no rules; the paper reports pass@1, pass@5 and pass@10"
)

#: This plug-in's report arithmetic, by benchmark (:mod:`cvdp_gym.plugins`).
REPORTS = {"chipbench": partial(build_section, published_settings=CHIPBENCH_SETTINGS)}
