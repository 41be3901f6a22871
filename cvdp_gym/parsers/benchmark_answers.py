"""Each benchmark's answer extraction, behind one entry point: ``extract_answer``.

A CVDP answer's files come from :func:`cvdp_gym.parsers.response.extract_files`; the other
benchmarks extract as their own scripts do, each by its plug-in's ``answers`` part
(``EXTRACTORS``, :mod:`cvdp_gym.plugins`): VerilogEval v2 as ``sv-generate`` writes a sample
file, VerilogEval v1 a completion; a benchmark with no extractor (RTLLM, the training sets
graded against a reference design) the design file (the first fenced block, else the text:
RTLLM's repository has no extraction script, and this is what its users do). Never
raises. A benchmark answer's extraction always yields its file, as the benchmark's script
writes one whatever the answer holds; ``method`` is ``none`` when it held no code at all,
which the grader scores ``format_error`` after the benchmark's own verdict is taken. What the
plug-ins extract with (``NO_CODE``, ``has_code``) is their kit, :mod:`cvdp_gym.parsers.answer_kit`.
"""

from __future__ import annotations

from collections.abc import Callable

from cvdp_gym.data.problems import Problem
from cvdp_gym.parsers.answer_kit import NO_CODE
from cvdp_gym.parsers.response import Extraction, answer_text, extract_files
from cvdp_gym.plugins import PluginTable

__all__ = ["EXTRACTORS", "NO_CODE", "extract_answer"]

#: Each benchmark's extraction, by flow: ``(problem, answer text) -> (file text, method)``.
EXTRACTORS: PluginTable[Callable[[Problem, str], tuple[str, str]]] = PluginTable("answers", "EXTRACTORS")


def extract_answer(problem: Problem, response: str) -> Extraction:
    """The files ``problem``'s answer provides, extracted as its benchmark extracts them."""
    extractor = EXTRACTORS.get(problem.flow) if problem.flow else None
    if extractor is None:
        return extract_files(response, list(problem.targets))
    text, ex = answer_text(response)
    body, ex.method = extractor(problem, text)
    ex.files = {problem.targets[0]: body}
    return ex
