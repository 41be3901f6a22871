"""``cvdp-gym eval``: score answers to CVDP problems (from a file or a chat endpoint) and report.

- :mod:`cvdp_gym.eval.passk`: the unbiased and the official (biased) pass@k estimators;
- :mod:`cvdp_gym.eval.sources`: the responses-file reader and the OpenAI-compatible client;
- :mod:`cvdp_gym.eval.run`: the resumable grading loop;
- :mod:`cvdp_gym.eval.agentic`: agentic episodes against an endpoint, with transcripts;
- :mod:`cvdp_gym.eval.refine`: ``CVDP-Refine-v0`` episodes (answer, feedback, answer again) through the same driver;
- :mod:`cvdp_gym.eval.report`: report.json / report.md / report.png and the terminal table;
- :mod:`cvdp_gym.eval.rescore`: stored rows' rewards under another reward setting (``cvdp-gym rescore``).
"""

from cvdp_gym.eval.passk import aggregate, default_ks, pass_at_k, pass_at_k_official
from cvdp_gym.eval.report import build_report, print_report, write_report
from cvdp_gym.eval.run import Evaluator, eval_endpoint, eval_responses
from cvdp_gym.eval.sources import ChatClient, ChatSettings, ResponsesFileError, read_responses

__all__ = [
    "ChatClient",
    "ChatSettings",
    "Evaluator",
    "ResponsesFileError",
    "aggregate",
    "build_report",
    "default_ks",
    "eval_endpoint",
    "eval_responses",
    "pass_at_k",
    "pass_at_k_official",
    "print_report",
    "read_responses",
    "write_report",
]
