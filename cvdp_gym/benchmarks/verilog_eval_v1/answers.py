"""VerilogEval v1's answer extraction: a completion (the module's body after the header in its
prompt). ``completion(response, header)`` is the code block, or the whole text, cut to the body
when it repeats the module's header.
"""

from __future__ import annotations

import re

from cvdp_gym.data.problems import Problem
from cvdp_gym.parsers.answer_kit import NO_CODE, find_fenced_blocks, has_code

__all__ = ["EXTRACTORS", "completion"]

_HEADER_END = re.compile(r"\)\s*;")


def completion(answer: str, header: str) -> str:
    """A VerilogEval v1 completion: the answer's code block (or its text; thinking dropped),
    without the module header the prompt already holds when the answer repeats it."""
    text = answer
    blocks = find_fenced_blocks(text)
    code = blocks[0].text if blocks else text
    name = re.search(r"\bmodule\s+(\w+)", header)
    declared = re.search(rf"\bmodule\s+{re.escape(name.group(1))}\b", code) if name else None
    if declared is None:
        return code
    end = _HEADER_END.search(code, declared.end())
    return code[end.end():] if end else code


def extract(problem: Problem, text: str) -> tuple[str, str]:
    """The completion in ``problem``'s answer ``text``, and the extraction method (``none``: no code)."""
    body = completion(text, str(problem.extra.get("header", "")))
    return body, "completion" if has_code(body) else NO_CODE


#: This plug-in's answer extraction, by flow (:mod:`cvdp_gym.plugins`).
EXTRACTORS = {"verilog-eval-v1": extract}
