"""Time ``cvdp-gym report`` (cvdp_gym.report.write_html_report) on synthetic runs.

Rows are built with eval's own row builder (``result_row``) from real ``GradeResult``
verdicts (a mix of passes, format, syntax, interface and test failures, with times and log
tails), written as a run folder with ``report.json`` from ``build_report``; then the HTML
report is generated and timed. The target: 1,000 problems × 5 samples in under 10 s.

  python scripts/bench_report.py                     # 100×5, 1000×5, 2000×5
  python scripts/bench_report.py --sizes 1000x5 200x10
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cvdp_gym.data import load_dataset
from cvdp_gym.eval.report import build_report
from cvdp_gym.eval.run import RESULTS, result_row
from cvdp_gym.grading import make_reward
from cvdp_gym.grading.result import GradeResult, Stage
from cvdp_gym.harness.results import TestCounts
from cvdp_gym.report import write_html_report

CATEGORIES = ("cid002", "cid003", "cid004", "cid005", "cid007", "cid012", "cid013", "cid014", "cid016")
DIFFICULTIES = ("easy", "medium", "hard")
#: Outcome -> (failure class, stages passed: format, syntax, interface, tests).
OUTCOMES = (
    (None, (True, True, True, True)),
    ("format_error", (False, None, None, None)),
    ("build_error", (True, False, None, None)),
    ("interface_error", (True, True, False, None)),
    ("test_failure", (True, True, True, False)),
)


def make_run(out: Path, problems: int, samples: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    base = next(p for p in load_dataset("bundled").problems if p.id == "cvdp_gym_gray_converter_0001")
    reward = make_reward("shaped")
    rows = []
    for i in range(problems):
        problem = replace(base, id=f"bench_{i:05d}", categories=(CATEGORIES[i % len(CATEGORIES)], DIFFICULTIES[i % 3]))
        skill = rng.random()
        for sample in range(samples):
            failure, results = OUTCOMES[0] if rng.random() < skill else rng.choice(OUTCOMES[1:])
            stages = [Stage(n, ok, f"{n} detail") for n, ok in zip(("format", "syntax", "interface", "tests"), results, strict=True)]
            grade = GradeResult(
                problem.id, stages, failure, "" if failure is None else f"{failure}: see the log",
                tests=TestCounts(total=4, passed=4 if failure is None else 1), wall_s=rng.lognormvariate(1.5, 0.6),
                log_tail="simulator output line\n" * 40,
            )
            rows.append(result_row(problem, sample, "```verilog\nmodule m(input a, output b); assign b = a; endmodule\n```" * 3, grade, reward))
    out.mkdir(parents=True)
    (out / RESULTS).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    meta = {"source": f"bench {problems}x{samples}", "dataset": "synthetic", "reward": "shaped", "graded": len(rows), "wall_s": 0.0, "notes": []}
    (out / "report.json").write_text(json.dumps(build_report(rows, [1], meta)), encoding="utf-8")
    return len(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["100x5", "1000x5", "2000x5"], help="PROBLEMSxSAMPLES")
    parser.add_argument("--keep", type=Path, default=None, help="write the runs and reports here (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        print(f"{'problems':>9} {'samples':>8} {'rows':>7} {'report s':>9} {'pages':>6} {'MB':>6}")
        for size in args.sizes:
            problems, samples = (int(x) for x in size.lower().split("x"))
            run = root / f"run-{size}"
            rows = make_run(run, problems, samples)
            began = time.perf_counter()
            index = write_html_report([run], run / "html")
            took = time.perf_counter() - began
            files = [p for p in index.parent.rglob("*") if p.is_file()]
            megabytes = sum(p.stat().st_size for p in files) / 1e6
            pages = sum(p.suffix == ".html" for p in files)
            print(f"{problems:>9} {samples:>8} {rows:>7} {took:>9.2f} {pages:>6} {megabytes:>6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
