"""Comprehension scoring against the official CVDP code itself, on many generated answers.

Imports the official tool from a checkout of NVlabs/cvdp_benchmark (a work tree, or a bare
git mirror: its ``src/`` is extracted to a temporary folder) and runs, for every answer, the
official pipeline end to end with its own functions: the model route (``OpenAI_Instance.prompt``
with a canned chat reply, JSON repair included; or ``LocalInferenceModel`` in import mode
reading a completions file), ``CopilotProcessor.create_context`` (retries, fallbacks),
``run_subjective_scoring`` and ``Repository.sbj`` (BLEU/ROUGE, thresholds), and the report
credit of ``Report.format_report``. It compares with ``cvdp_gym``'s scores, pass bits and
credits, then does the same for the judge's reply parsing
(``SubjectiveScoreModel_Instance.subjective_score`` with a canned reply) and for the
report's aggregation, one sample (``Report``) and several (``run_reporter.ResultParser``).

Prints, per check, the cases, the largest absolute difference and every disagreement.
Needs what the official modules import (openai, requests, pyyaml, psutil, nltk); ``dotenv``
and ``tabulate``, used there only for configuration files and printing, are stubbed when
missing. Not part of the test suite: the official code is not in this repository.

  python scripts/parity_comprehension.py [--official DIR] [--answers N] [--seed S]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import json
import logging
import math
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cvdp_gym.benchmarks.cvdp.report import official_table  # noqa: E402
from cvdp_gym.data.problems import problem_from_record  # noqa: E402
from cvdp_gym.grading.comprehension import grade_comprehension, judged_score  # noqa: E402
from cvdp_gym.grading.judge import parse_judge_reply  # noqa: E402

MIRROR = Path("/work/.mirror/NVlabs+cvdp_benchmark/repo")

REFERENCES = [
    "Testing circular shifts with `shift_bits = DATA_WIDTH` checks if the barrel shifter wraps the bits correctly when the shift amount matches the data width. In this case, the output should stay exactly the same as the input.\n",
    "The FIFO asserts full when the count reaches DEPTH, and empty when the count is zero; the count is updated on every clock edge.",
    "```verilog\nalways @(posedge clk) begin\n  if (rst) q <= 0;\n  else q <= d;\nend\n```\nThis register resets synchronously.",
    "The test sends 16 random bytes, then checks the parity bit. The test sends 16 random bytes, then checks the parity bit again.",
    "the the the the the the",
    "Reset.",
    "ok",
    "The state machine has four states: IDLE, LOAD, SHIFT and DONE. From IDLE it moves to LOAD when start is high; from LOAD to SHIFT; from SHIFT to DONE after eight cycles.",
    "Section 3.2: \"The arbiter grants requests in round-robin order; a grant lasts one cycle.\"",
    "assign y = (sel == 2'b00) ? a : (sel == 2'b01) ? b : (sel == 2'b10) ? c : d;",
    "When `enable` is low: the counter holds, outputs stay, and no interrupt fires, the bus idle.",
    "Line one\nLine two with  spaces\tand tabs\n\nLine four: the end, really.",
]
UNRELATED = "Bananas are yellow and grow in tropical climates near the equator during the rainy season."


def answers_for(reference: str, rng: random.Random) -> list[tuple[str, str]]:
    """``(kind, answer)`` pairs of every kind, for one reference."""
    words = reference.split()
    half = " ".join(words[: max(1, len(words) // 2)])
    shuffled = words[:]
    rng.shuffle(shuffled)
    dump = json.dumps
    out = [
        ("exact", dump({"response": reference})),
        ("exact_pretty", json.dumps({"response": reference}, indent=2)),
        ("raw_newlines", '{"response": "' + reference.replace('"', '\\"') + '"}'),
        ("fenced", dump({"response": f"```\n{reference}\n```"})),
        ("fenced_lang", dump({"response": f"Here:\n```verilog\n{reference}\n```\nmore text"})),
        ("outer_fence", f"```json\n{dump({'response': reference})}\n```"),
        ("truncated", dump({"response": half})),
        ("truncated_json", dump({"response": reference})[: max(5, len(dump({"response": reference})) // 2)]),
        ("reordered", dump({"response": " ".join(shuffled)})),
        ("unrelated", dump({"response": UNRELATED})),
        ("prose", reference),
        ("prose_around", f"Sure! {dump({'response': reference})} Hope this helps {{not json}}"),
        ("empty", ""),
        ("empty_response", dump({"response": ""})),
        ("whitespace_response", dump({"response": "   "})),
        ("malformed", '{"response": "' + reference[:40] + '", }'),
        ("single_quotes", "{'response': '" + reference[:60].replace("'", "") + "'}"),
        ("bare_key", "{response: " + dump(reference) + "}"),
        ("colon_words", dump({"response": "Note: the counter holds, and the outputs stay: idle state, " + reference})),
        ("no_response_key", dump({"answer": reference})),
        ("code_key", dump({"code": [{"rtl/a.sv": reference}]})),
        ("code_subjective", dump({"code": [{"subjective.txt": reference}]})),
        ("code_string", dump({"code": reference[:30] or "x"})),
        ("list_response", dump({"response": [reference, "second"]})),
        ("number_response", '{"response": 42}'),
        ("zero_response", '{"response": 0}'),
        ("null_response", '{"response": null}'),
        ("nested_response", dump({"response": {"text": reference}})),
        ("direct_text", dump({"direct_text": reference})),
        ("no_closing_brace", '{"response": "' + reference[:30]),
        ("digit_only", "7"),
        ("nan", '{"response": NaN}'),
        ("two_objects", dump({"response": half}) + "\n" + dump({"response": reference})),
        ("control_chars", dump({"response": reference}).replace(" ", "\x01 ", 3)),
    ]
    return out


def mutate(answer: str, rng: random.Random) -> str:
    """A random edit of an answer: characters that matter to the parsers, inserted or deleted."""
    pieces = list(answer)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        at = rng.randint(0, len(pieces))
        if op < 0.6 or not pieces:
            pieces.insert(at, rng.choice(['"', "{", "}", ",", ":", " ", "\n", "```", "\\", "word", ": word,", "\x02", "'"]))
        else:
            del pieces[min(at, len(pieces) - 1)]
    return "".join(pieces)


# ---------------------------------------------------------------- the official code


def official_source(path: Path) -> Path:
    """A folder whose ``src/`` is the official tool's (a work tree as is, a bare repo extracted)."""
    if (path / "src" / "subjective.py").exists():
        return path
    tree = Path(tempfile.mkdtemp(prefix="cvdp-official-"))
    data = subprocess.run(["git", "--git-dir", str(path), "archive", "HEAD", "src", "run_reporter.py"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(tree, filter="data")
    return tree


def stub_missing(name: str, **attrs: Any) -> None:
    try:
        importlib.import_module(name)
    except ImportError:
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module


class Official:
    """The official modules, and the pipeline of one answer through them."""

    def __init__(self, root: Path, work: Path) -> None:
        stub_missing("dotenv", load_dotenv=lambda *a, **k: None, dotenv_values=lambda *a, **k: {})
        stub_missing("tabulate", tabulate=lambda *a, **k: "")
        sys.path.insert(0, str(root))
        logging.disable(logging.CRITICAL)
        with open(os.devnull, "w") as quiet:
            stdout, sys.stdout = sys.stdout, quiet
            try:
                self.dp = importlib.import_module("src.dataset_processor")
                self.repository = importlib.import_module("src.repository")
                self.report = importlib.import_module("src.report")
                self.helpers = importlib.import_module("src.model_helpers")
                self.openai_llm = importlib.import_module("src.llm_lib.openai_llm")
                self.local = importlib.import_module("src.llm_lib.local_inference_model")
                self.judge = importlib.import_module("src.llm_lib.subjective_score_model")
                self.reporter = importlib.import_module("run_reporter") if (root / "run_reporter.py").exists() else None
            finally:
                sys.stdout = stdout
        self.work = work
        # openai.OpenAI() builds an SSL context (about 0.1 s): one instance of each, replies swapped in.
        self._chat_model = self.openai_llm.OpenAI_Instance(key="sk-parity", model="gpt-4o")
        self._judge_model = self.judge.SubjectiveScoreModel_Instance(key="sk-parity", model="o4-mini")

    @staticmethod
    def _replying(text: str) -> Any:
        """A stand-in for an openai client whose chat completion answers ``text``."""
        reply = types.SimpleNamespace(choices=[types.SimpleNamespace(message=types.SimpleNamespace(content=text))])
        return types.SimpleNamespace(chat=types.SimpleNamespace(completions=types.SimpleNamespace(create=lambda **_: reply)))

    def _model(self, route: str, pid: str, answer: str) -> Any:
        if route == "chat":
            self._chat_model.chat = self._replying(answer)
            return self._chat_model
        path = self.work / "responses.jsonl"
        path.write_text(json.dumps({"id": pid, "completion": answer}) + "\n")
        return self.local.LocalInferenceModel(mode="import", file_path=str(path))

    def score(self, record: dict[str, Any], answer: str, route: str, judge_reply: str | None = None) -> dict[str, Any]:
        """Pass bit, credit and BLEU (when recorded) of ``answer`` through the official pipeline."""
        pid, category = record["id"], record["categories"][0]
        processor = types.SimpleNamespace(
            context={pid: record}, golden=False, disable_patch=False, prefix=str(self.work), model=None,
            get_context_result=lambda context: context["input"]["context"],
            determine_schema=self.helpers.ModelHelpers().determine_schema,
        )
        try:  # an error while preparing becomes a failed test with no credit (th_prepare, th_run)
            files = self.dp.CopilotProcessor.create_context(processor, pid, model=self._model(route, pid, answer))
        except Exception as exc:
            files = {"__prepare_error__": str(exc)}
        processor.files = {pid: files}
        judge = None
        if judge_reply is not None:
            judge = self._judge_model
            judge.client = self._replying(judge_reply)
        repo = types.SimpleNamespace(n_gram=2, rouge_th=0.4, bleu_th=0.4, llm_score_th=0.7, sbj_llm_model=judge, logfile=None, debug=False)
        repo.subjective_score = functools.partial(self.repository.Repository.subjective_score, repo)
        repo.sbj = functools.partial(self.repository.Repository.sbj, repo)
        try:
            tests, _ = self.dp.DatasetProcessor.run_subjective_scoring(processor, pid, repo)
        except Exception as exc:  # the official run records an error result: failed, no credit
            tests = [{"result": 1, "log": None, "error_msg": str(exc), "execution": 0.0}]
        credit = self.credit({pid: {"category": category, "difficulty": "easy", "tests": tests}}, category)
        bleu = next((t["bleu_score"] for t in tests if "bleu_score" in t), None)
        return {"passed": all(t["result"] == 0 for t in tests), "credit": credit, "bleu": bleu}

    def credit(self, raw_logs: dict[str, Any], category: str, difficulty: str = "easy") -> float:
        report = self.report.Report(raw_logs=raw_logs)
        return report.categories[category][difficulty]["Passed Problems"]

    def judge_reply(self, reply: str) -> float | None:
        judge = self._judge_model
        judge.client = self._replying(reply)
        return judge.subjective_score("the candidate", "the reference", "the question")[0]


# ---------------------------------------------------------------- checks


class Tally:
    def __init__(self, name: str) -> None:
        self.name, self.cases, self.max_diff, self.disagreements = name, 0, 0.0, []

    def compare(self, label: str, ours: float | None, theirs: float | None, *, exact: bool = False) -> None:
        self.cases += 1
        if ours is None or theirs is None:
            if (ours is None) != (theirs is None):
                self.disagreements.append(f"{label}: ours {ours!r}, official {theirs!r}")
            return
        diff = abs(float(ours) - float(theirs)) if not (math.isnan(ours) and math.isnan(theirs)) else 0.0
        self.max_diff = max(self.max_diff, diff)
        if (exact and ours != theirs) or diff > 1e-9:
            self.disagreements.append(f"{label}: ours {ours!r}, official {theirs!r}")

    def print(self) -> None:
        print(f"{self.name:<44} {self.cases:>7} cases   max |diff| {self.max_diff:.3g}   disagreements {len(self.disagreements)}")
        for line in self.disagreements[:20]:
            print(f"    {line[:220]}")


def record(pid: str, category: str, reference: str) -> dict[str, Any]:
    return {
        "id": pid, "categories": [category, "easy"],
        "input": {"prompt": "Answer the question about the design.", "context": {"rtl/top.sv": "module top; endmodule"}},
        "output": {"response": reference, "context": {}}, "harness": {},
    }


def check_answers(official: Official, count: int, rng: random.Random) -> list[Tally]:
    tallies = {f"{route} route: {k}": Tally(f"{route} route: {k}") for route in ("chat", "import") for k in ("pass bit", "credit", "BLEU")}
    cases: list[tuple[int, str, str]] = []
    for i, reference in enumerate(REFERENCES):
        cases += [(i, kind, answer) for kind, answer in answers_for(reference, rng)]
    base = list(cases)
    while len(cases) < count:
        i, kind, answer = rng.choice(base)
        cases.append((i, f"{kind}+mutated", mutate(answer, rng)))
    for n, (i, kind, answer) in enumerate(cases[:count]):
        category = ("cid006", "cid008")[n % 2]
        rec = record(f"cvdp_copilot_parity{i}_{1 + n % 9000:04d}", category, REFERENCES[i])
        problem = problem_from_record(rec)
        for route in ("chat", "import"):
            theirs = official.score(rec, answer, route)
            ours = grade_comprehension(problem, answer, route=route)
            label = f"ref {i} {kind} {answer[:60]!r}"
            tallies[f"{route} route: pass bit"].compare(label, float(ours.passed), float(theirs["passed"]), exact=True)
            tallies[f"{route} route: credit"].compare(label, ours.official_credit, theirs["credit"])
            if theirs["bleu"] is not None or "bleu" in ours.scores:
                tallies[f"{route} route: BLEU"].compare(label, ours.scores.get("bleu"), theirs["bleu"])
    return list(tallies.values())


JUDGE_REPLIES = [
    '{"score": 0.85, "reasoning": "good"}', '```json\n{"score": 0.4, "reasoning": "meh"}\n```',
    'Let me think.\n{"score": 0.9, "reasoning": "close"}\nDone.', '{"score": 1.7, "reasoning": "x"}',
    '{"score": -2, "reasoning": "x"}', '{"score": "0.8", "reasoning": "x"}', '{"score": true, "reasoning": "x"}',
    '{"score": NaN, "reasoning": "x"}', '{"score": Infinity}', '{"score": 0.5, "reasoning": 7}',
    '{"score": 0.5, "reasoning": null}', '{"score": 0.5, "reasoning": ["a", "b"]}', '{"score": 0.5, "reasoning": {"a": 1}}',
    "Score: 0.8", "", "```\n{\"score\": 0.3}\n```", "```python\nprint(1)\n```\n{\"score\": 0.6, \"reasoning\": \"r\"}",
    '["score"]', '{"Score": 0.9}', '{"score": 0.7, "reasoning": "nested {braces}"}', '{"reasoning": "x", "score": 0.75}',
    '```json\n{"score": 0.2}\n``` and ```json\n{"score": 0.9}\n```', '{"score": 0.5} trailing {"score": 0.9}',
    '{"score": 0.65, "reasoning": "a"', "0.9", '{"score": 1e400}', '{"score": 0.7000000001}',
]


def check_judge(official: Official, rng: random.Random, count: int) -> list[Tally]:
    parse, credit = Tally("judge reply: score"), Tally("judge reply: credit and pass (cid009)")
    replies = list(JUDGE_REPLIES)
    while len(replies) < count:
        replies.append(mutate(rng.choice(JUDGE_REPLIES), rng))
    for n, reply in enumerate(replies):
        ours, _ = parse_judge_reply(reply)
        parse.compare(f"reply {reply[:60]!r}", ours, official.judge_reply(reply))
        if n < 200:  # the whole pipeline (its credit in the report) on a sample of them
            rec = record(f"cvdp_copilot_judged_{1 + n:04d}", "cid009", REFERENCES[0])
            theirs = official.score(rec, json.dumps({"response": "an answer"}), "import", judge_reply=reply)
            verdict = judged_score(ours, "")
            credit.compare(f"reply {reply[:60]!r}", verdict.credit, theirs["credit"])
            credit.compare(f"pass {reply[:60]!r}", float(verdict.passed), float(theirs["passed"]), exact=True)
    return [parse, credit]


CATEGORIES = ["cid002", "cid003", "cid006", "cid008", "cid009", "cid016"]


def random_rows(rng: random.Random, problems: int, samples: int) -> list[dict[str, Any]]:
    rows = []
    for p in range(problems):
        category, difficulty = rng.choice(CATEGORIES), rng.choice(["easy", "medium", "hard"])
        pid = f"cvdp_copilot_agg{p}_{p + 1:04d}"
        for s in range(samples):
            passed = rng.random() < 0.4
            credit = rng.random() if category in ("cid006", "cid008", "cid009") else None
            rows.append({"id": pid, "sample": s, "category": category, "difficulty": difficulty, "passed": passed, "credit": credit})
    return rows


def _tests(row: dict[str, Any]) -> list[dict[str, Any]]:
    result = 0 if row["passed"] else 1
    if row["category"] in ("cid006", "cid008"):
        return [{"result": result, "log": None, "execution": 0.1}, {"result": result, "log": None, "execution": 0.1, "bleu_score": row["credit"]}]
    if row["category"] == "cid009":
        return [{"result": result, "log": None, "execution": 0.1, "llm_score": row["credit"]}]
    return [{"result": result, "log": None, "execution": 0.1}]


def sample_report(official: Official, rows: list[dict[str, Any]]) -> dict[str, Any]:
    raw = {r["id"]: {"category": r["category"], "difficulty": r["difficulty"], "tests": _tests(r)} for r in rows}
    return official.report.Report(raw_logs=raw).categories


def check_aggregation(official: Official, rng: random.Random, rounds: int) -> list[Tally]:
    single, multi = Tally("report table, one sample (Report)"), Tally("report table, n samples (run_reporter pass@k)")
    for _ in range(rounds):
        rows = random_rows(rng, rng.randint(5, 40), 1)
        theirs = sample_report(official, rows)
        for entry in official_table(rows, 1):
            if entry["category"] in theirs and entry["difficulty"] in ("easy", "medium", "hard"):
                cell = theirs[entry["category"]][entry["difficulty"]]
                single.compare(f"{entry['category']}/{entry['difficulty']}", entry["official"] * 100, cell["Passed Problems (%)"])
        if official.reporter is None:
            continue
        n, k = rng.randint(2, 5), rng.randint(1, 3)
        rows = random_rows(rng, rng.randint(5, 30), n)
        samples = [sample_report(official, [r for r in rows if r["sample"] == s]) for s in range(n)]
        composite = {"metadata": {"composite": True, "n_samples": n, "k_threshold": k}, "samples": samples}
        path = official.work / "composite.json"
        path.write_text(json.dumps(composite))
        parser = official.reporter.ResultParser(str(path))
        with open(os.devnull, "w") as quiet:
            stdout, sys.stdout = sys.stdout, quiet
            try:
                parser.load_results()
                parser.parse_results()
            finally:
                sys.stdout = stdout
        for entry in official_table(rows, k):
            stats = parser.categories.get(entry["category"])
            if stats is not None and entry["difficulty"] in ("easy", "medium", "hard"):
                cell = getattr(stats, entry["difficulty"])
                multi.compare(f"{entry['category']}/{entry['difficulty']} n={n} k={k}", entry["official"] * 100, cell.problem_pass_percentage)
    return [single, multi]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, default=MIRROR, help="checkout (or bare mirror) of NVlabs/cvdp_benchmark")
    parser.add_argument("--answers", type=int, default=3000, help="generated answers (each scored on both routes)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="cvdp-parity-") as work, open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        official = Official(official_source(args.official), Path(work))
        checks: list[Callable[[], list[Tally]]] = [
            lambda: check_answers(official, args.answers, rng),
            lambda: check_judge(official, rng, 600),
            lambda: check_aggregation(official, rng, 60),
        ]
        tallies = [t for check in checks for t in check()]
    print(f"official code: {args.official}  (seed {args.seed})")
    for tally in tallies:
        tally.print()
    return 1 if any(t.disagreements for t in tallies) else 0


if __name__ == "__main__":
    raise SystemExit(main())
