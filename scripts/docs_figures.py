"""Write the main job's figures into the docs from a run's ``summary.json``, or check they match.

The README and ``docs/miniature.md`` show what ``bash scripts/run_main.sh`` prints: the pass
rates of the teacher, the weak student, the student after distillation and after RL, and the
teacher KL's fall. They are written here, never by hand: each page holds a block between
``<!-- figures:main-job -->`` and ``<!-- /figures:main-job -->`` rendered from
``docs/figures/main_job.json``, the figures of one run of the main job (what a run's
``summary.json`` holds that the docs show, at full precision).

  python scripts/docs_figures.py --from runs/demo/summary.json   # keep a run's figures, rewrite the blocks
  python scripts/docs_figures.py --write                          # rewrite the blocks from the kept figures
  python scripts/docs_figures.py                                  # check: exit 1 when a block drifted
  python scripts/docs_figures.py --against runs/demo/summary.json # check: exit 1 when a run printed others

``tests/test_docs_figures.py`` runs the check on every test run; ``scripts/run_main.sh`` runs
``--against`` on the summary the main job just wrote and says so when the job's figures are no
longer the docs' (the test suite's demo runs shorter RL and is not the main job).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "figures" / "main_job.json"
PAGES = (ROOT / "README.md", ROOT / "docs" / "miniature.md")
BLOCK = re.compile(r"(<!-- figures:main-job -->\n)(.*?)(<!-- /figures:main-job -->)", re.S)
#: The models of a run's summary, in the table's order, with the names the docs give them.
MODELS = (
    ("teacher", "teacher"),
    ("student_start", "student, weak start"),
    ("student_distilled", "student after distillation"),
    ("student_rl", "student after RL (reward only)"),
)


def figures_of(summary: dict[str, Any]) -> dict[str, Any]:
    """What the docs show of a run's ``summary.json``, kept at full precision."""
    learning = summary["learning"]
    return {
        "pass_rate": {name: summary["evals"][name]["pass_rate"] for name, _ in MODELS if name in summary["evals"]},
        "mean_reward": {name: summary["evals"][name]["mean_reward"] for name, _ in MODELS if name in summary["evals"]},
        "teacher_kl_first_steps": learning["teacher_kl_first_steps"],
        "teacher_kl_last_steps": learning["teacher_kl_last_steps"],
        "teacher_kl_end_steps": max(1, min(4, summary["settings"]["distill_steps"] // 4)),
        "seed": summary["settings"].get("seed", 0),
    }


def render(figures: dict[str, Any]) -> str:
    """The block's text: the table and the teacher KL's fall."""
    start = figures["pass_rate"]["student_start"]
    rows = ["| model | pass rate | mean reward |", "| --- | --- | --- |"]
    for name, label in MODELS:
        if name not in figures["pass_rate"]:
            continue
        rate = figures["pass_rate"][name]
        rise = f" ({rate - start:+.2f})" if name in ("student_distilled", "student_rl") else ""
        rows.append(f"| {label} | {rate:.2f}{rise} | {figures['mean_reward'][name]:.2f} |")
    ends = figures["teacher_kl_end_steps"]
    return (
        "\n".join(rows)
        + f"\n\nTeacher KL (mean over the first and last {ends} steps of distillation) falls from "
        f"{figures['teacher_kl_first_steps']:.3f} to {figures['teacher_kl_last_steps']:.3f} nats per token.\n"
    )


def rewrite(text: str, block: str) -> str:
    """``text`` with its main-job block replaced by ``block``."""
    if not BLOCK.search(text):
        raise SystemExit("no <!-- figures:main-job --> block")
    return BLOCK.sub(lambda m: m.group(1) + block + m.group(3), text, count=1)


def check_against(summary: dict[str, Any]) -> int:
    """0 when a run's figures are the kept ones (the docs show what it printed), else 1, saying which."""
    run, kept = figures_of(summary), json.loads(FIGURES.read_text())
    differ = [key for key in ("pass_rate", "teacher_kl_first_steps", "teacher_kl_last_steps") if run[key] != kept[key]]
    if differ:
        print(f"the docs show other figures than this run ({', '.join(differ)}): "
              f"python scripts/docs_figures.py --from <its summary.json>")
        return 1
    print(f"ok: this run printed the figures the docs show ({shown(FIGURES)})")
    return 0


def shown(path: Path) -> str:
    """``path`` as the messages name it: relative to the checkout when inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="summary", type=Path, help="a run's summary.json: keep its figures, then write")
    parser.add_argument("--write", action="store_true", help="rewrite the blocks from docs/figures/main_job.json")
    parser.add_argument("--against", type=Path, help="a run's summary.json: exit 1 when its figures are not the kept ones")
    args = parser.parse_args(argv)
    if args.against is not None:
        return check_against(json.loads(args.against.read_text()))
    if args.summary is not None:
        FIGURES.parent.mkdir(parents=True, exist_ok=True)
        FIGURES.write_text(json.dumps(figures_of(json.loads(args.summary.read_text())), indent=2) + "\n")
    block = render(json.loads(FIGURES.read_text()))
    drifted = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        wanted = rewrite(text, block)
        if wanted == text:
            continue
        if args.summary is not None or args.write:
            page.write_text(wanted, encoding="utf-8")
            print(f"wrote {shown(page)}")
        else:
            drifted.append(shown(page))
    for page in drifted:
        print(f"{page}: the main job's figures differ from {shown(FIGURES)} "
              "(python scripts/docs_figures.py --write)")
    if not drifted:
        print(f"ok: {', '.join(shown(p) for p in PAGES)} show {shown(FIGURES)}")
    return 1 if drifted else 0


if __name__ == "__main__":
    sys.exit(main())
