"""Comprehension answers scored as the official CVDP tool scores them.

Expected values come from the official formulas computed here, independently of the code
under test: BLEU-2 from nltk's own ``sentence_bleu`` (the official call), ROUGE-2 from its
definition (distinct shared bigrams over the reference's bigrams, after lower-casing and
deleting punctuation), the scored text from the official parsing rules written out per
case. ``scripts/parity_comprehension.py`` runs the official code itself on thousands more.
"""

from __future__ import annotations

import json
import re
import warnings
from itertools import pairwise

import pytest
from nltk.translate.bleu_score import sentence_bleu

from cvdp_gym.data.problems import problem_from_record
from cvdp_gym.grading import Grader
from cvdp_gym.grading.comprehension import grade_comprehension, grade_reference
from cvdp_gym.grading.rewards import make_reward, make_reward_parts
from cvdp_gym.parsers.comprehension import parse_comprehension_answer, repair_json

REFERENCE = (
    "The FIFO asserts full when the count reaches DEPTH, and empty when the count is zero; "
    "the count changes on every rising clock edge while the FIFO is enabled."
)
FENCED_REFERENCE = "Use this register:\n```verilog\nalways @(posedge clk) q <= d;\n```\nIt has no reset, so q starts unknown."
REPEATS = "the test sends a byte then the test sends a byte again"


def problem(reference: str = REFERENCE, category: str = "cid006"):
    return problem_from_record({
        "id": "cvdp_copilot_fifo_0001", "categories": [category, "easy"],
        "input": {"prompt": "Quote the part of the spec that matches the RTL.", "context": {"docs/spec.md": "spec"}},
        "output": {"response": reference, "context": {}}, "harness": {},
    })


def official_bleu(generated: str, reference: str) -> float:
    """The official call: ``sentence_bleu([ref.split()], gen.split(), weights=[0.5, 0.5])``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nltk warns when an n-gram order has no overlap
        return sentence_bleu([reference.split()], generated.split(), weights=[0.5, 0.5])


def official_rouge(generated: str, reference: str) -> float:
    """ROUGE-2 by its official definition."""

    def bigrams(text: str) -> list[tuple[str, str]]:
        words = re.sub(r"[^\w\s]", "", text.lower()).split()
        return list(pairwise(words))

    ref = bigrams(reference)
    return len(set(bigrams(generated)) & set(ref)) / len(ref)


def expect(result, scored: str, reference: str = REFERENCE) -> None:
    """``result`` scored ``scored``: BLEU and ROUGE to 1e-9, the pass bit and credit exactly."""
    bleu, rouge = official_bleu(scored, reference), official_rouge(scored, reference)
    assert result.scores["bleu"] == pytest.approx(bleu, abs=1e-9, rel=0)
    assert result.scores["rouge"] == pytest.approx(rouge, abs=1e-9, rel=0)
    assert result.passed is (bleu > 0.4 and rouge > 0.4)
    assert result.credit == bleu and result.official_credit == bleu


WORDS = REFERENCE.split()
CASES = {
    # kind: (answer, the text the official parser scores)
    "exact": (json.dumps({"response": REFERENCE}), REFERENCE),
    "fenced": (json.dumps({"response": f"Here it is:\n```text\n{REFERENCE}\n```\nthanks"}), REFERENCE + "\n"),
    "truncated": (json.dumps({"response": " ".join(WORDS[:9])}), " ".join(WORDS[:9])),
    "reordered": (json.dumps({"response": " ".join(WORDS[::-1])}), " ".join(WORDS[::-1])),
    "unrelated": (json.dumps({"response": "Bananas grow in tropical climates."}), "Bananas grow in tropical climates."),
    # prose: no braces at all, so the parse fails and the official fallback "{}" is scored
    "prose": (REFERENCE, "{}"),
    "malformed JSON": ('{"response": "' + REFERENCE + '",,}', "{}"),
    # raw newlines in a string are deleted with the other control characters: the JSON parses
    "raw newline": ('{"response": "The FIFO asserts full\nwhen the count reaches DEPTH"}', "The FIFO asserts fullwhen the count reaches DEPTH"),
    "no response key": (json.dumps({"answer": REFERENCE}), str({"answer": REFERENCE})),
    "JSON in prose": ("Sure! " + json.dumps({"response": REFERENCE}) + " Hope it helps.", REFERENCE),
}


@pytest.mark.parametrize("kind", sorted(CASES))
@pytest.mark.parametrize("route", ["chat", "import"])
def test_every_kind_of_answer_scores_as_the_official_formulas(kind, route):
    answer, scored = CASES[kind]
    result = grade_comprehension(problem(), answer, route=route)
    expect(result, scored)
    assert result.scoring == "bleu" and result.failure_class in (None, "low_score", "format_error")
    assert [s.name for s in result.stages] == ["format", "syntax", "interface", "tests"]
    assert result.stages[1].passed is None and result.stages[2].passed is None
    assert result.stages[3].passed is result.passed
    assert result.extraction["route"] == route


def test_exact_and_unrelated_verdicts_and_the_near_zero_bleu():
    exact = grade_comprehension(problem(), CASES["exact"][0])
    assert exact.passed and exact.scores["bleu"] == 1.0 and exact.failure_class is None
    # REFERENCE says "the count" twice: the denominator counts both, the numerator once
    assert exact.scores["rouge"] == pytest.approx(12 / 14, abs=1e-12) == official_rouge(REFERENCE, REFERENCE)
    unrelated = grade_comprehension(problem(), CASES["unrelated"][0])
    assert unrelated.scores["bleu"] == 0.0 and not unrelated.passed and unrelated.failure_class == "low_score"
    # words in common but no bigram: nltk's stand-in for log 0 makes BLEU about 1e-155, not 0
    apart = grade_comprehension(problem(), json.dumps({"response": "Bananas and the weather"}))
    assert 0 < apart.scores["bleu"] < 1e-150 and apart.credit == apart.scores["bleu"] and not apart.passed
    expect(apart, "Bananas and the weather")
    prose = grade_comprehension(problem(), REFERENCE)
    assert prose.failure_class == "format_error" and not prose.stages[0].passed and prose.extraction["method"] == "fallback"


def test_empty_answers_fail_with_no_credit():
    # An empty text does not parse: the official fallback "{}" is scored (BLEU 0: no word in common).
    for answer in ("", "   "):
        result = grade_comprehension(problem(), answer)
        expect(result, "{}")
        assert result.credit == 0.0 and result.failure_class == "format_error"
    # An empty response is the official "empty content": failed, no score, no credit.
    for answer in (json.dumps({"response": ""}), '{"response": null}', '{"response": 0}'):
        result = grade_comprehension(problem(), answer, route="import")
        assert not result.passed and result.credit == 0.0 and result.scores == {}, answer
    # the chat route's repair quotes a bare word: null becomes the text "null", and is scored
    expect(grade_comprehension(problem(), '{"response": null}', route="chat"), "null")
    # a list is not text: the official ROUGE fails on it
    listed = grade_comprehension(problem(), json.dumps({"response": [REFERENCE]}))
    assert not listed.passed and listed.credit == 0.0 and listed.failure_class == "format_error"
    # a "code" answer gives files: nothing to score
    code = grade_comprehension(problem(), json.dumps({"code": [{"rtl/fifo.sv": REFERENCE}]}))
    assert not code.passed and code.extraction["method"] == "code" and code.failure_class == "format_error"


def test_the_chat_route_repairs_json_and_that_flips_verdicts():
    # A valid answer whose prose has ": word word," is broken by the chat route's repair.
    answer = json.dumps({"response": "Note: the FIFO asserts, " + REFERENCE})
    assert repair_json(answer) != answer
    chat, imported = grade_comprehension(problem(), answer, route="chat"), grade_comprehension(problem(), answer, route="import")
    assert not chat.passed and chat.extraction["method"] == "fallback" and chat.credit == official_bleu("{}", REFERENCE)
    assert imported.passed
    expect(imported, "Note: the FIFO asserts, " + REFERENCE)
    # ... and a bare key is quoted by the repair, so only the chat route can read it.
    bare = "{response: " + json.dumps(REFERENCE) + "}"
    assert grade_comprehension(problem(), bare, route="chat").passed
    assert not grade_comprehension(problem(), bare, route="import").passed


def test_official_slicing_corner_cases():
    # No closing brace: the slice keeps one character and the parse fails.
    assert not parse_comprehension_answer('{"response": "abc"', "import").parsed
    # A lone digit is valid JSON but not an object: the official code rejects it.
    assert parse_comprehension_answer("7", "import").value == "{}"
    # Two objects: first "{" to last "}" is not JSON.
    two = json.dumps({"response": "a"}) + " " + json.dumps({"response": "b"})
    assert not parse_comprehension_answer(two, "import").parsed
    # Only the first fenced block of the response is kept, recursively in lists.
    nested = parse_comprehension_answer(json.dumps({"response": "x ```a``` y ```b```"}), "import")
    assert nested.value == "a"


def test_reference_edge_cases_and_golden_mode():
    # A reference that repeats a bigram: its verbatim copy scores ROUGE-2 below 1.0.
    repeat = grade_reference(problem(REPEATS))
    assert repeat.scores["bleu"] == 1.0 and repeat.scores["rouge"] == pytest.approx(official_rouge(REPEATS, REPEATS), abs=1e-9)
    assert repeat.scores["rouge"] < 1.0
    # A reference with a fenced block: an exact copy sent as the JSON answer loses all but the block.
    fenced = grade_comprehension(problem(FENCED_REFERENCE), json.dumps({"response": FENCED_REFERENCE}))
    expect(fenced, "always @(posedge clk) q <= d;\n", FENCED_REFERENCE)
    assert not fenced.passed and grade_reference(problem(FENCED_REFERENCE)).passed
    # A reference under two words has no bigram: the official scorer fails the problem.
    short = grade_comprehension(problem("Reset."), json.dumps({"response": "Reset."}))
    assert not short.passed and short.failure_class == "scoring_error" and short.credit == 0.0
    # Punctuation only splits nothing: "Reset, now." has one bigram after deletion.
    two = grade_comprehension(problem("Reset, now."), json.dumps({"response": "reset now"}))
    assert two.scores["rouge"] == 1.0 and two.scores["bleu"] == pytest.approx(official_bleu("reset now", "Reset, now."), abs=1e-9)


def test_thresholds_are_strict():
    # A ROUGE-2 of exactly 0.40 fails: both scores must be strictly above their threshold.
    reference = "a b c d e f"  # 5 bigrams
    at = grade_comprehension(problem(reference), json.dumps({"response": "a b c x e f"}))
    assert at.scores["rouge"] == official_rouge("a b c x e f", reference) == 0.6
    exactly = grade_comprehension(problem(reference), json.dumps({"response": "a b c"}))
    assert exactly.scores["rouge"] == 0.4 and not exactly.passed


def test_rewards_and_grader_route():
    result = grade_comprehension(problem(), CASES["truncated"][0])
    assert make_reward("shaped")(result) == make_reward("partial")(result) == result.credit
    assert make_reward("binary")(result) == float(result.passed)
    assert make_reward_parts("shaped")(result) == make_reward_parts("partial")(result) == {"credit": result.credit}
    grader = Grader(route="import")
    assert grader.grade_response(problem(), CASES["exact"][0]).passed
    assert grader.grade_response(problem(), "Note: " + CASES["exact"][0]).passed  # JSON in prose
    with pytest.raises(ValueError, match="parse route"):
        Grader(route="psychic")


def test_judge_problems_without_a_judge_are_not_judged():
    result = grade_comprehension(problem(category="cid009"), json.dumps({"response": "an answer"}))
    assert result.failure_class == "not_judged" and result.excluded and result.credit is None and not result.passed
    assert result.scoring == "judge" and make_reward("shaped")(result) == 0.0
