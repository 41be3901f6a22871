"""``cvdp-gym parity``: the official CVDP runner and this tool, on the same answers.

``run_parity`` (``cvdp.py``) grades each answer here (the harness, as ``cvdp-gym check``),
writes the answers as the official runner's golden-mode input (``answers.official_datasets``),
runs a user's clone of NVlabs/cvdp_benchmark on it with Docker (``official.run_official``,
images mapped by ``official.OfficialImages``), reads its verdicts, and pairs them
(``compare.ParityRow``). Failures of the machine are reported apart, never as verdicts.

VerilogEval v2/v1 and RTLLM: ``benchmarks.run_benchmark_parity`` runs the benchmark's own
scripts from a user's clone (in the sandbox) and our flows on the same answers (the
references, seeded ``mutants``, or a file), one ``benchmarks.rows.BenchmarkRow`` each.
"""

from __future__ import annotations

from cvdp_gym.parity.answers import Answer, answers_from_file, bundled_answers, official_datasets
from cvdp_gym.parity.compare import AGREE, DISAGREE, LEFT_OUT, ParityRow, agreement, summary_json
from cvdp_gym.parity.cvdp import run_parity
from cvdp_gym.parity.official import machine_failure, read_verdicts

__all__ = [
    "AGREE",
    "DISAGREE",
    "LEFT_OUT",
    "Answer",
    "ParityRow",
    "agreement",
    "answers_from_file",
    "bundled_answers",
    "machine_failure",
    "official_datasets",
    "read_verdicts",
    "run_parity",
    "summary_json",
]
