"""Decontamination: planted near-copies of evaluation problems are found, clean items are not.

The evaluation set is the bundled CVDP problems and the made-up VerilogEval / RTLLM copies of
tests/fixtures/benchmarks; the training items are made up here, as CVDP-shaped JSONL rows.
Expected scores come from the definitions (an LCS computed here by dynamic programming, the
bound a few changed words leave), never from the code under test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cvdp_gym.cli import app
from cvdp_gym.data import load_dataset
from cvdp_gym.decontaminate import (
    OFF,
    EvaluationIndex,
    Thresholds,
    decontaminate,
    evaluation_problems,
    thresholds_for,
)
from cvdp_gym.decontaminate.index import FieldIndex
from cvdp_gym.decontaminate.report import text_histogram, write_filtered
from cvdp_gym.decontaminate.texts import code_tokens, rouge_l, spec_words, specification
from cvdp_gym.errors import ConfigError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
AGAINST = ["bundled", *(str(FIXTURES / name) for name in ("verilog-eval", "verilog-eval-v1", "rtllm", "rtllm-v1.1"))]
EDGE_DETECTOR = "cvdp_gym_edge_detector_0001"
RENAMES = {"TopModule": "counter_four", "clk": "clock_in", "reset": "sync_clear", "q": "count_value"}

CLEAN = {
    "train.lfsr": (
        "Write a 16-bit Fibonacci linear feedback shift register with taps 16, 14, 13 and 11. A seed input is "
        "loaded when load is high; otherwise the register shifts left every clock and the new bit is the XOR "
        "of the taps. Expose the whole state as out.",
        "module lfsr16 (input wire clock, input wire load, input wire [15:0] seed, output reg [15:0] out);\n"
        "  wire feedback = out[15] ^ out[13] ^ out[12] ^ out[10];\n"
        "  always @(posedge clock) begin\n    if (load) out <= seed;\n    else out <= {out[14:0], feedback};\n  end\n"
        "endmodule\n",
    ),
    "train.debounce": (
        "A push-button debouncer: the output follows the noisy input only after the input has held the same "
        "level for 20000 consecutive samples; a counter restarts whenever the input changes.",
        "module debounce #(parameter LIMIT = 20000) (input logic sample_clk, input logic button, output logic level);\n"
        "  logic [14:0] stable_for;\n  logic last;\n"
        "  always_ff @(posedge sample_clk) begin\n    last <= button;\n"
        "    if (button != last) stable_for <= '0;\n    else if (stable_for != LIMIT[14:0]) stable_for <= stable_for + 1'b1;\n"
        "    else level <= last;\n  end\nendmodule\n",
    ),
    "train.sevenseg": (
        "Decode a hexadecimal digit into the segments of a common-anode seven segment display, segments a to g "
        "active low, digits A to F shown in their usual lower and upper case shapes.",
        "module hex_to_segments (input [3:0] nibble, output reg [6:0] seg_n);\n  always @* begin\n    case (nibble)\n"
        + "".join(f"      4'h{d:x}: seg_n = 7'h{(d * 37 + 11) % 128:02x};\n" for d in range(16))
        + "    endcase\n  end\nendmodule\n",
    ),
}


def lcs_by_dynamic_programming(a: list[str], b: list[str]) -> int:
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def row(identifier: str, spec: str, code: str | None) -> dict:
    """A CVDP-shaped JSONL row (no harness: the loader keeps it as an unsupported problem)."""
    context = {"rtl/design.sv": code} if code is not None else {}
    return {"id": identifier, "categories": ["cid003"], "input": {"prompt": spec, "context": {}},
            "output": {"response": "", "context": context}, "harness": {"files": {}}}


def changed_words(text: str, count: int) -> str:
    """``text`` with ``count`` of its alphabetic words replaced by a word no problem has."""
    words = text.split(" ")
    spots = [i for i, w in enumerate(words) if w.isalpha()][3 :: 7][:count]
    assert len(spots) == count
    return " ".join("zqxj" if i in spots else w for i, w in enumerate(words))


def renamed(code: str) -> str:
    for old, new in RENAMES.items():
        code = re.sub(rf"\b{old}\b", new, code)
    return code


@pytest.fixture(scope="module")
def evaluation():
    return {p.id: p for p in evaluation_problems(AGAINST)}


@pytest.fixture(scope="module")
def index(evaluation):
    return EvaluationIndex(list(evaluation.values()), Thresholds().ngram)


@pytest.fixture(scope="module")
def planted(evaluation) -> list[dict]:
    count4 = evaluation["verilog-eval-v2.spec-to-rtl.Prob002_count4"]
    adder = evaluation["rtllm-v1.1.adder_4bit"]
    return [
        row("train.spec_copy", changed_words(evaluation[EDGE_DETECTOR].prompt, 3), CLEAN["train.lfsr"][1]),
        row("train.code_copy", "Design a traffic light for a pedestrian crossing with a request button.",
            renamed(next(iter(count4.reference.values())))),
        row("train.rtllm_reworded", changed_words(adder.prompt, 2), None),
    ]


@pytest.fixture(scope="module")
def training_file(tmp_path_factory, planted) -> Path:
    path = tmp_path_factory.mktemp("train") / "train.jsonl"
    rows = [*planted, *(row(i, spec, code) for i, (spec, code) in CLEAN.items())]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def results(training_file, index):
    training = load_dataset(str(training_file), include_unsupported=True).problems
    return {r.training_id: r for r in decontaminate(training, index, thresholds_for("default"))}


# ---------------------------------------------------------------- the measures, by hand


def test_rouge_l_of_two_short_sentences():
    # LCS of "the cat sat on the mat" and "the cat lay on a mat" is "the cat on mat": 4 of 6 and 6
    sat, lay = ["the", "cat", "sat", "on", "the", "mat"], ["the", "cat", "lay", "on", "a", "mat"]
    assert rouge_l(sat, lay) == pytest.approx(2 * 4 / 12)
    assert rouge_l([], []) == 0.0


def test_bit_parallel_lcs_agrees_with_dynamic_programming():
    import random

    rng = random.Random(7)
    for _ in range(300):
        a = rng.choices("abcde", k=rng.randint(0, 70))
        b = rng.choices("abcdef", k=rng.randint(0, 70))
        expected = lcs_by_dynamic_programming(a, b)
        assert rouge_l(a, b) == pytest.approx(2 * expected / (len(a) + len(b)) if a or b else 0.0)


def test_normalisation_of_specifications_and_code():
    assert spec_words("A 4-bit Counter, wraps.") == ["a", "4bit", "counter", "wraps"]
    assert code_tokens("assign Q = a; // a note\n/* a\nblock */ endmodule") == ["assign", "q", "=", "a", ";", "endmodule"]


def test_ngram_overlap_is_the_evaluation_texts_share():
    field = FieldIndex([["a", "b", "c", "d", "e"]], 2)  # bigrams ab bc cd de
    assert field.overlaps(field.encode(["a", "b", "c", "x", "e"])) == {0: pytest.approx(2 / 4)}  # ab, bc
    assert field.overlaps(field.encode(["e", "d", "c"])) == {}


def test_verilog_eval_specification_drops_the_in_context_example(evaluation):
    problem = evaluation["verilog-eval-v2.spec-to-rtl.Prob002_count4"]
    own = Path(problem.source).read_text(encoding="utf-8").strip()
    assert own in specification(problem)
    assert "[BEGIN]" not in specification(problem) and "assign z = x ^ y" not in specification(problem)
    complete = evaluation["verilog-eval-v2.code-complete-iccad2023.Prob002_count4"]
    assert "Implement the Verilog module" not in specification(complete)
    assert "counts 0, 1, ..., 15" in specification(complete)


# ---------------------------------------------------------------- planted copies, clean items


def test_a_specification_with_three_words_changed_is_flagged(results, evaluation):
    result = results["train.spec_copy"]
    nearest = result.nearest[0]
    assert result.flagged and nearest.evaluation_id == EDGE_DETECTOR
    words = len(spec_words(evaluation[EDGE_DETECTOR].prompt))
    assert nearest.spec_rouge_l >= 2 * (words - 3) / (2 * words) - 1e-12  # three substitutions: an LCS of the rest
    assert any(r.startswith("specification ROUGE-L") and EDGE_DETECTOR in r for r in result.reasons)


def test_a_reference_with_renamed_signals_is_flagged_by_its_code(results, evaluation):
    result = results["train.code_copy"]
    nearest = result.nearest[0]
    assert result.flagged and nearest.evaluation_id.endswith("Prob002_count4")
    reference = next(iter(evaluation[nearest.evaluation_id].reference.values()))
    tokens = re.findall(r"\w+|[^\w\s]", reference.lower())
    renamed_tokens = sum(t in {k.lower() for k in RENAMES} for t in tokens)
    least = 2 * (len(tokens) - renamed_tokens) / (2 * len(tokens))  # same length, every other token in order
    assert nearest.code_rouge_l >= least - 1e-12 and least > 0.8
    assert nearest.spec_rouge_l < 0.5
    assert all(r.startswith(("code ROUGE-L", "code 10-gram")) for r in result.reasons)


def test_a_reworded_rtllm_description_is_flagged(results):
    result = results["train.rtllm_reworded"]
    assert result.flagged and result.nearest[0].evaluation_id.endswith("adder_4bit")
    assert result.nearest_code_rouge_l is None and result.nearest[0].code_rouge_l is None  # no code to compare


def test_clean_items_are_not_flagged_and_their_nearest_is_exact(results, evaluation, index, training_file):
    for identifier in CLEAN:
        assert not results[identifier].flagged, results[identifier].reasons
    clean = [p for p in load_dataset(str(training_file), include_unsupported=True).problems if p.id in CLEAN]
    exact = decontaminate(clean, index, thresholds_for("default"), exact_above=0.0)
    for problem, result in zip(clean, exact, strict=True):
        words = spec_words(specification(problem))
        best = max(2 * lcs_by_dynamic_programming(words, spec_words(specification(p))) / (len(words) + len(spec_words(specification(p))))
                   for p in evaluation.values())
        assert result.nearest_spec_rouge_l == pytest.approx(best)


def test_a_clean_file_reports_zero(tmp_path, index):
    path = tmp_path / "clean.jsonl"
    path.write_text("".join(json.dumps(row(i, s, c)) + "\n" for i, (s, c) in CLEAN.items()), encoding="utf-8")
    found = decontaminate(load_dataset(str(path), include_unsupported=True).problems, index)
    assert len(found) == 3 and not any(r.flagged for r in found)


def test_the_codev_r1_preset_is_the_specification_rouge_l_alone(training_file, index):
    preset = thresholds_for("codev-r1")
    assert (preset.spec_rouge_l, preset.code_rouge_l, preset.ngram_overlap) == (0.5, OFF, OFF)
    assert preset.describe() == "specification ROUGE-L > 0.5"
    training = load_dataset(str(training_file), include_unsupported=True).problems
    flagged = {r.training_id for r in decontaminate(training, index, preset) if r.flagged}
    assert flagged == {"train.spec_copy", "train.rtllm_reworded"}  # the renamed code passes CodeV-R1's filter


def test_thresholds_are_checked():
    with pytest.raises(ConfigError, match="unknown preset"):
        thresholds_for("strict")
    with pytest.raises(ConfigError, match=r"spec_rouge_l=1\.5"):
        thresholds_for("default", spec_rouge_l=1.5)
    assert thresholds_for("default", ngram=13, code_rouge_l=None).ngram == 13


def test_several_processes_give_the_same_results(training_file, evaluation):
    training = load_dataset(str(training_file), include_unsupported=True).problems * 25  # past one chunk
    alone = decontaminate(training, list(evaluation.values()))
    assert decontaminate(training, list(evaluation.values()), processes=2) == alone


def test_text_histogram_counts_each_bin():
    lines = text_histogram([0.05, 0.15, 0.15, 0.95, 1.0], threshold=0.5).splitlines()
    assert [int(line.split()[-1]) for line in lines] == [1, 2, 0, 0, 0, 0, 0, 0, 0, 2]
    assert lines[5].startswith("> 0.5-0.6")


def test_items_not_read_from_jsonl_lines_get_a_list_of_kept_ids(tmp_path):
    training = load_dataset(str(FIXTURES / "verilog-eval")).problems  # read from prompt files
    found = decontaminate(training, evaluation_problems(["bundled"]) + training[:1])
    assert found[0].flagged  # the one that is its own evaluation problem
    [written] = write_filtered(found, {p.id: p for p in training}, tmp_path)
    assert written.name == "kept_ids.jsonl"
    kept = [json.loads(line)["id"] for line in written.read_text().splitlines()]
    assert kept == [r.training_id for r in found if not r.flagged] and training[0].id not in kept


def test_the_clean_file_keeps_every_other_line_byte_for_byte(tmp_path, index):
    path = tmp_path / "with_blanks.jsonl"
    rows = [row("train.lfsr", *CLEAN["train.lfsr"]), row("train.copy", changed_words(
        load_dataset("bundled", ids=[EDGE_DETECTOR]).problems[0].prompt, 2), None)]
    path.write_bytes(b"\n" + json.dumps(rows[0]).encode() + b"\r\n\n" + json.dumps(rows[1]).encode())  # no final newline
    training = load_dataset(str(path), include_unsupported=True).problems
    found = decontaminate(training, index, thresholds_for("default"))
    assert [r.flagged for r in found] == [False, True]
    [written] = write_filtered(found, {p.id: p for p in training}, tmp_path)
    assert written.read_bytes() == b"\n" + json.dumps(rows[0]).encode() + b"\r\n\n"


# ---------------------------------------------------------------- the command


def test_the_command_writes_the_report_and_the_filtered_file(training_file, tmp_path):
    out = tmp_path / "out"
    args = ["decontaminate", str(training_file), *(a for spec in AGAINST for a in ("--against", spec)), "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "3 of 6 flagged" in result.output and "train.spec_copy" in result.output
    clean = (out / "train.clean.jsonl").read_text(encoding="utf-8").splitlines()
    original = training_file.read_text(encoding="utf-8").splitlines()
    assert clean == [line for line in original if json.loads(line)["id"] in CLEAN]  # the input's own lines
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Flagged items (3)" in report and EDGE_DETECTOR in report and "side by side" in report
    saved = json.loads((out / "decontamination.json").read_text(encoding="utf-8"))
    assert (saved["items"], saved["flagged"]) == (6, 3)
    pytest.importorskip("matplotlib")
    assert (out / "nearest_rouge_l.png").read_bytes().startswith(b"\x89PNG")


def test_the_command_as_json_and_with_the_codev_r1_preset(training_file):
    result = CliRunner().invoke(app, ["decontaminate", str(training_file), "--against", "bundled",
                                      "--preset", "codev-r1", "--json", "-"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["thresholds"]["code_rouge_l"] == OFF
    assert [r["training_id"] for r in report["results"] if r["flagged"]] == ["train.spec_copy"]


@pytest.mark.parametrize(("args", "message"), [
    (["no/such/file.jsonl", "--against", "bundled"], "no/such/file.jsonl"),
    (["bundled", "--against", "no/such/benchmark"], "no/such/benchmark"),
    (["bundled", "--against", "bundled", "--preset", "strict"], "unknown preset"),
])
def test_bad_input_is_a_one_line_error(args, message):
    result = CliRunner().invoke(app, ["decontaminate", *args])
    assert result.exit_code == 2
    assert result.output.startswith("error:") and message in result.output and result.output.count("\n") == 1
