"""Each benchmark's answer extraction, behind one entry point: ``extract_answer``.

A CVDP answer's files come from :func:`cvdp_gym.parsers.response.extract_files`; the other
benchmarks extract as their own scripts do: VerilogEval v2 as ``sv-generate`` writes a
sample file (:func:`.verilog_eval.sample_file`), VerilogEval v1 a completion
(:func:`.verilog_eval.completion`), RTLLM and the training sets graded against a reference
design the design file (the first fenced block, else the text: RTLLM's repository has no
extraction script, and this is what its users do). Never
raises. A benchmark answer's extraction always yields its file, as the benchmark's script
writes one whatever the answer holds; ``method`` is ``none`` when it held no code at all,
which the grader scores ``format_error`` after the benchmark's own verdict is taken.
"""

from __future__ import annotations

import re

from cvdp_gym.data.problems import Problem

from .response import Extraction, answer_text, extract_files
from .verilog_eval import CODE_COMPLETE, completion, sample_file

__all__ = ["NO_CODE", "extract_answer"]

#: ``Extraction.method`` of a benchmark answer with no code in it.
NO_CODE = "none"
#: Verilog-shaped text: a module header, endmodule, an assignment or an always block (prose
#: that merely names "the module" is not code).
_CODE = re.compile(
    r"\bendmodule\b|\bmodule\s+\w+\s*[#(;]|\bassign\s+[\w{][\w\[\]{}.,:\s]*=|\balways\w*\s*@|\balways_(comb|latch)\b"
)


def extract_answer(problem: Problem, response: str) -> Extraction:
    """The files ``problem``'s answer provides, extracted as its benchmark extracts them."""
    flow = problem.flow
    if flow is None or flow in ("rtllm", "reference"):
        return extract_files(response, list(problem.targets))
    text, ex = answer_text(response)
    target = problem.targets[0]
    if flow == "verilog-eval-v2":
        interface = str(problem.extra.get("interface", "")) if problem.task == CODE_COMPLETE else ""
        body = sample_file(problem.task, text, interface)
        code = body.replace(interface, "") if interface else body
        ex.method = "verilog-eval" if _CODE.search(_without_notes(code)) else NO_CODE
    else:  # verilog-eval-v1: a completion after the prompt's header
        body = completion(text, str(problem.extra.get("header", "")))
        ex.method = "completion" if _CODE.search(body) else NO_CODE
    ex.files = {target: body}
    return ex


def _without_notes(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("// VERILOG-EVAL:"))
