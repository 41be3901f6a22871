"""VerilogEval v2's answer extraction, as ``scripts/sv-generate`` writes a sample file.

``sample_file(task, response, interface)`` returns the text ``sv-generate`` would write for
``response``, byte for byte: spec-to-RTL takes the lines between ``[BEGIN]`` and ``[DONE]``,
else falls back to the code-completion scan of fenced blocks and ``module TopModule`` ...
``endmodule`` (and appends its ``// VERILOG-EVAL: response did not use <CODE></CODE>
correctly`` note); code completion puts the interface (``_ifc.txt``) in front unless the
answer declares ``module TopModule`` itself, and appends its notes on abnormal backticks,
an errant module declaration or a missing ``endmodule``. The one step before it that the
script never needed (:func:`cvdp_gym.parsers.benchmark_answers.extract_answer` takes it): a
reasoning model's thinking (``<think>...</think>``, Harmony's analysis) is dropped first, as
an API that separates reasoning would have.
"""

from __future__ import annotations

from cvdp_gym.data.problems import Problem
from cvdp_gym.parsers.answer_kit import NO_CODE, has_code

__all__ = ["CODE_COMPLETE", "EXTRACTORS", "SPEC_TO_RTL", "sample_file"]

SPEC_TO_RTL, CODE_COMPLETE = "spec-to-rtl", "code-complete-iccad2023"
_NO_CODE_TAGS = "// VERILOG-EVAL: response did not use <CODE></CODE> correctly"


def _first_pass(lines: list[str]) -> tuple[int, bool]:
    """Backtick lines, and whether a ``module TopModule`` line comes before any ``endmodule``."""
    backticks = 0
    endmodule_first = module_exists = False
    for line in lines:
        if line.startswith("```"):
            backticks += 1
        elif line.startswith("endmodule"):
            if not module_exists:
                endmodule_first = True
        elif line.startswith("module TopModule"):
            module_exists = True
    return backticks, module_exists and not endmodule_first


def _scan(lines: list[str], backticks: int, module_exists: bool) -> tuple[list[str], bool, bool]:
    """The code-completion scan: the lines it echoes, and whether it met ``module TopModule``
    and ``endmodule``."""
    out: list[str] = []
    first = second = found_module = found_endmodule = False
    for line in lines:
        echo = True
        if line.strip().startswith("module TopModule"):
            found_module = True
        if backticks >= 2:
            if not first or second:
                echo = False
        else:
            if found_endmodule:
                echo = False
            if module_exists and not found_module:
                echo = False
        if line.startswith("```"):
            if not first:
                first = True
            else:
                second = True
            echo = False
        elif line.strip().startswith("endmodule"):
            found_endmodule = True
        if echo:
            out.append(line)
    return out, found_module, found_endmodule


def _begin_done(lines: list[str]) -> tuple[list[str], bool, bool]:
    """The lines between ``[BEGIN]`` and ``[DONE]`` (either may share a line with code)."""
    found: list[str] = []
    start = end = False
    for line in lines:
        if not start:
            if line.strip() == "[BEGIN]":
                start = True
            elif line.lstrip().startswith("[BEGIN]"):
                found.append(line.lstrip().replace("[BEGIN]", ""))
                start = True
        elif not end:
            if line.strip() == "[DONE]":
                end = True
            elif line.rstrip().endswith("[DONE]"):
                found.append(line.rstrip().replace("[DONE]", ""))
                end = True
            else:
                found.append(line)
    return found, start, end


def sample_file(task: str, answer: str, interface: str = "") -> str:
    """The sample file ``sv-generate`` writes for ``answer`` (its text, thinking dropped;
    ``interface``: the problem's ``_ifc.txt``, code completion only)."""
    lines = answer.splitlines()
    backticks, module_exists = _first_pass(lines)
    out = [""]  # the script opens the file with print("")
    if task == CODE_COMPLETE:
        if not module_exists:
            out.append(interface + "\n")
        echoed, found_module, found_endmodule = _scan(lines, backticks, module_exists)
        out += echoed
        out.append("")
        if backticks == 1 or backticks > 2:
            out += ["// VERILOG-EVAL: abnormal backticks count", ""]
        if found_module:
            out += ["// VERILOG-EVAL: errant inclusion of module definition", ""]
        if not found_endmodule:
            out += ["// VERILOG-EVAL: endmodule not found", ""]
    else:
        found, start, end = _begin_done(lines)
        if start and end:
            out += found
        if not start and not end:
            echoed, _, _ = _scan(lines, backticks, module_exists)
            out += [*echoed, "", _NO_CODE_TAGS]
    out.append("")
    return "\n".join(out) + "\n"


def extract(problem: Problem, text: str) -> tuple[str, str]:
    """The sample file for ``problem``'s answer ``text``, and the extraction method (``none``:
    no code in it, once ``sv-generate``'s interface and notes are left out)."""
    interface = str(problem.extra.get("interface", "")) if problem.task == CODE_COMPLETE else ""
    body = sample_file(problem.task, text, interface)
    code = body.replace(interface, "") if interface else body
    return body, "verilog-eval" if has_code(_without_notes(code)) else NO_CODE


def _without_notes(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("// VERILOG-EVAL:"))


#: This plug-in's answer extraction, by flow (:mod:`cvdp_gym.plugins`).
EXTRACTORS = {"verilog-eval-v2": extract}
