"""VerilogEval's answer extraction, checked against ``scripts/sv-generate``'s own logic.

Each expected sample file is written out as the sequence of ``print(...)`` calls the script
makes for that answer: it opens the file with ``print("")``, prints each kept line, and ends
with ``print("")`` (code completion: the interface first, ``print(ifc + "\\n")``, then its notes
each followed by ``print("")``). ``printed`` turns those calls into the file's text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cvdp_gym.benchmarks.verilog_eval_v1.answers import completion
from cvdp_gym.benchmarks.verilog_eval_v2.answers import CODE_COMPLETE, SPEC_TO_RTL, sample_file
from cvdp_gym.data import load_dataset
from cvdp_gym.envs.prompts import answer_text
from cvdp_gym.parsers.benchmark_answers import NO_CODE, extract_answer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"
NO_TAGS = "// VERILOG-EVAL: response did not use <CODE></CODE> correctly"
ABNORMAL = "// VERILOG-EVAL: abnormal backticks count"
ERRANT = "// VERILOG-EVAL: errant inclusion of module definition"
NO_END = "// VERILOG-EVAL: endmodule not found"
IFC = "\nmodule TopModule (\n  input a,\n  output z\n);"
FENCE = "```"


def printed(*calls: str) -> str:
    """The text a sequence of Python ``print(x, file=f)`` calls writes."""
    return "".join(c + "\n" for c in calls)


# ---------------------------------------------------------------------------------------------
# spec-to-rtl: [BEGIN] ... [DONE], else the code-completion scan and a note
# ---------------------------------------------------------------------------------------------

SPEC_CASES = {
    "markers on their own lines": (
        "[BEGIN]\nmodule TopModule(output z);\n  assign z = 1'b0;\nendmodule\n[DONE]",
        printed("", "module TopModule(output z);", "  assign z = 1'b0;", "endmodule", ""),
    ),
    "markers among prose, padded with spaces": (
        "Sure, here it is.\n  [BEGIN]  \n  assign z = 1'b0;\n [DONE] \nHope this helps.",
        printed("", "  assign z = 1'b0;", ""),
    ),
    "markers sharing lines with code": (
        "   [BEGIN] module TopModule(output z);\n  assign z = 1'b0;\nendmodule[DONE]",
        # lstrip() then the marker removed (the space after it stays); rstrip() then removed.
        printed("", " module TopModule(output z);", "  assign z = 1'b0;", "endmodule", ""),
    ),
    "only the first block": (
        "[BEGIN]\nfirst\n[DONE]\n[BEGIN]\nsecond\n[DONE]",
        printed("", "first", ""),
    ),
    "no [DONE]: no code lines at all": (
        "[BEGIN]\nmodule TopModule(output z);\n  assign z = 1'b0;\nendmodule",
        printed("", ""),
    ),
    "[BEGIN] and [DONE] on one line: [DONE] is never seen": (
        "[BEGIN] module TopModule(output z); assign z = 0; endmodule [DONE]",
        printed("", ""),
    ),
    "fenced block instead: its lines, and the note": (
        f"Here:\n{FENCE}verilog\nmodule TopModule(output z);\n  assign z = 1'b0;\nendmodule\n{FENCE}\nDone.",
        printed("", "module TopModule(output z);", "  assign z = 1'b0;", "endmodule", "", NO_TAGS, ""),
    ),
    "bare module after prose: from module TopModule to endmodule, and the note": (
        "The design:\nmodule TopModule(output z);\n  assign z = 1'b0;\nendmodule\nThat is all.",
        printed("", "module TopModule(output z);", "  assign z = 1'b0;", "endmodule", "", NO_TAGS, ""),
    ),
}


@pytest.mark.parametrize("answer,expected", SPEC_CASES.values(), ids=SPEC_CASES.keys())
def test_spec_to_rtl_sample_file(answer, expected):
    assert sample_file(SPEC_TO_RTL, answer) == expected


# ---------------------------------------------------------------------------------------------
# code completion: the interface unless the answer has module TopModule, then the notes
# ---------------------------------------------------------------------------------------------

COMPLETE_CASES = {
    "a body: the interface goes first": (
        "  assign z = a;\nendmodule",
        printed("", IFC + "\n", "  assign z = a;", "endmodule", "", ""),
    ),
    "lines after endmodule are dropped": (
        "  assign z = a;\nendmodule\nThis is a wire.",
        printed("", IFC + "\n", "  assign z = a;", "endmodule", "", ""),
    ),
    "a fenced body: the fence lines are dropped": (
        f"{FENCE}verilog\n  assign z = a;\nendmodule\n{FENCE}\nThat completes it.",
        printed("", IFC + "\n", "  assign z = a;", "endmodule", "", ""),
    ),
    "a whole module: no interface, the errant-inclusion note": (
        f"{FENCE}verilog\nmodule TopModule (input a, output z);\n  assign z = a;\nendmodule\n{FENCE}",
        printed("", "module TopModule (input a, output z);", "  assign z = a;", "endmodule", "", ERRANT, "", ""),
    ),
    "an indented module header: the interface (first pass) and the note (second pass)": (
        "  module TopModule (input a, output z);\n  assign z = a;\nendmodule",
        printed("", IFC + "\n", "  module TopModule (input a, output z);", "  assign z = a;", "endmodule", "", ERRANT, "", ""),
    ),
    "endmodule before module TopModule: the interface, and the rest cut at that endmodule": (
        "  assign z = a;\nendmodule\n\nmodule TopModule (input a, output z);\nendmodule",
        printed("", IFC + "\n", "  assign z = a;", "endmodule", "", ERRANT, "", ""),
    ),
    "one fence: the abnormal-backticks note": (
        f"{FENCE}\n  assign z = a;\nendmodule",
        printed("", IFC + "\n", "  assign z = a;", "endmodule", "", ABNORMAL, "", ""),
    ),
    "three fences: only the first block, and the note": (
        f"{FENCE}\n  assign z = a;\n{FENCE}\n{FENCE}\nendmodule",
        printed("", IFC + "\n", "  assign z = a;", "", ABNORMAL, "", ""),
    ),
    "no endmodule: the note": (
        "  assign z = a;",
        printed("", IFC + "\n", "  assign z = a;", "", NO_END, "", ""),
    ),
}


@pytest.mark.parametrize("answer,expected", COMPLETE_CASES.values(), ids=COMPLETE_CASES.keys())
def test_code_complete_sample_file(answer, expected):
    assert sample_file(CODE_COMPLETE, answer, IFC) == expected


# ---------------------------------------------------------------------------------------------
# VerilogEval v1 completions
# ---------------------------------------------------------------------------------------------

HEADER = "module top_module (\n\tinput a,\n\toutput z\n);\n"


def test_a_whole_module_is_cut_to_its_body():
    assert completion(HEADER + "\tassign z = a;\nendmodule\n", HEADER) == "\n\tassign z = a;\nendmodule\n"


def test_a_fenced_whole_module_is_cut_to_its_body():
    answer = f"Here you go:\n{FENCE}verilog\n{HEADER}\tassign z = ~a;\nendmodule\n{FENCE}\nEnjoy."
    body = completion(answer, HEADER)
    assert "module top_module" not in body and ");" not in body
    assert body.strip() == "assign z = ~a;\nendmodule"


@pytest.mark.parametrize(
    "body",
    ["\tassign z = a;\nendmodule\n", "\tassign z = a;\nendmodule\n\nmodule helper (input q);\nendmodule\n"],
    ids=["a bare body", "a body and a helper module"],
)
def test_a_body_is_kept_as_it_is(body):
    assert completion(body, HEADER) == body


# ---------------------------------------------------------------------------------------------
# extract_answer on each benchmark's problems (the fixture copies)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def problems():
    loaded = {}
    for spec, folder in (
        ("verilog-eval-v2", "verilog-eval"), ("verilog-eval-v1", "verilog-eval-v1"), ("rtllm-v2", "rtllm"),
    ):
        for p in load_dataset(spec, benchmark_dir=FIXTURES / folder):
            loaded.setdefault((p.benchmark, p.task), p)
    return loaded


def test_spec_to_rtl_reference_between_markers(problems):
    p = problems[("verilog-eval-v2", SPEC_TO_RTL)]
    reference = p.reference[p.targets[0]]
    ex = extract_answer(p, answer_text(p, p.reference))
    assert ex.method == "verilog-eval" and ex.found_all
    assert ex.files == {p.targets[0]: printed("", *reference.rstrip("\n").split("\n"), "")}


def test_thinking_is_dropped_first(problems):
    p = problems[("verilog-eval-v2", SPEC_TO_RTL)]
    answer = "<think>\n[BEGIN]\nmodule TopModule(); // a draft\nendmodule\n[DONE]\n</think>\n[BEGIN]\nfinal\n[DONE]"
    ex = extract_answer(p, answer)
    assert ex.had_think
    assert ex.files[p.targets[0]] == printed("", "final", "")


@pytest.mark.parametrize("task", [SPEC_TO_RTL, CODE_COMPLETE])
def test_an_answer_without_code_is_method_none(problems, task):
    p = problems[("verilog-eval-v2", task)]
    ex = extract_answer(p, "Sorry, I can't help with that.")
    assert ex.method == NO_CODE
    assert list(ex.files) == [p.targets[0]]  # the script writes its file whatever the answer holds


def test_prose_mentioning_a_module_is_no_code(problems):
    """A refusal that names "the module" holds no code; it must not pass as Verilog."""
    p = problems[("verilog-eval-v2", SPEC_TO_RTL)]
    assert extract_answer(p, "Sorry, I cannot design that module for you.").method == NO_CODE


def test_code_complete_body_gets_the_interface(problems):
    p = problems[("verilog-eval-v2", CODE_COMPLETE)]
    interface = p.extra["interface"]
    ex = extract_answer(p, f"{FENCE}verilog\n  assign out = 1'b0;\nendmodule\n{FENCE}")
    assert ex.method == "verilog-eval"
    assert ex.files[p.targets[0]] == printed("", interface + "\n", "  assign out = 1'b0;", "endmodule", "", "")


def test_v1_answer_is_the_completion(problems):
    p = problems[("verilog-eval-v1", "human")]
    header = p.extra["header"]
    ex = extract_answer(p, f"{FENCE}verilog\n{header}\tassign out = 1'b1;\nendmodule\n{FENCE}")
    assert ex.method == "completion"
    assert ex.files[p.targets[0]].strip() == "assign out = 1'b1;\nendmodule"
    assert extract_answer(p, "I would rather not.").method == NO_CODE


def test_rtllm_answer_is_the_design_file(problems):
    p = problems[("rtllm-v2", "")]
    code = p.reference[p.targets[0]]
    ex = extract_answer(p, "Here is the design.\n" + FENCE + "verilog\n" + code + FENCE + "\n")
    assert ex.found_all and ex.files[p.targets[0]].strip() == code.strip()
    assert not extract_answer(p, "No design today.").found_all
