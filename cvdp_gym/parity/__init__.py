"""``cvdp-gym parity``: the official CVDP runner and this tool, on the same answers.

``run_parity`` (``cvdp.py``) runs CVDP's plug-in's official runner by name
(:mod:`cvdp_gym.benchmarks.cvdp.official`): it grades each answer here (the harness, as
``cvdp-gym check``), writes the answers as the official runner's golden-mode input
(``answers.official_datasets``), runs a user's clone of NVlabs/cvdp_benchmark on it with Docker,
reads its verdicts (``official.OfficialVerdict``), and pairs them (``compare.ParityRow``).
Failures of the machine are reported apart, never as verdicts.

VerilogEval v2/v1 and RTLLM: ``benchmarks.run_benchmark_parity`` runs the benchmark's own
scripts from a user's clone (in the sandbox) and our flows on the same answers (the
references, seeded ``mutants``, or a file), one ``benchmarks.rows.BenchmarkRow`` each.
"""

from __future__ import annotations

from cvdp_gym.parity.answers import Answer, answers_from_file, bundled_answers, official_datasets
from cvdp_gym.parity.compare import AGREE, DISAGREE, LEFT_OUT, ParityRow, agreement, summary_json
from cvdp_gym.parity.cvdp import run_parity

__all__ = [
    "AGREE",
    "DISAGREE",
    "LEFT_OUT",
    "Answer",
    "ParityRow",
    "agreement",
    "answers_from_file",
    "bundled_answers",
    "official_datasets",
    "run_parity",
    "summary_json",
]
