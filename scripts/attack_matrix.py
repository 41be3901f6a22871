#!/usr/bin/env python
"""Play the whole attack matrix (``tests/security/attack_matrix.py``): every payload, under
every way of hiding it, in every flow, graded by the real ``Grader`` in the real sandbox.

Prints a table (payloads × flows: how each cell's answers failed) and the counts: cells
(flow × payload), answers (× hiding) and rewarded (an answer that passed, or earned more than
its flow's wrong design alone: must be 0; the script exits 1 otherwise, listing each). With
``--write`` it puts the same tables between the markers in ``docs/security.md``.
``--without-gate`` grades with the answer gate switched off (in this process only), to show
which answers the tools alone would reward: what the gate is there for (``--write`` runs that
too and writes one line of it).

    .venv/bin/python scripts/attack_matrix.py [--write] [--jobs 2] [--only FLOW] [--without-gate]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from unittest import mock

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from cvdp_gym.gate import Scan  # noqa: E402
from cvdp_gym.sandbox import BubblewrapSandbox  # noqa: E402
from cvdp_gym.toolchain import detect  # noqa: E402
from tests.security.attack_matrix import (  # noqa: E402
    FLOWS,
    HIDINGS,
    PAYLOADS,
    Grading,
    answer,
    cells,
    expects_reach_in,
    grade,
    plugin_flow,
    settings,
)

DOCS = REPO / "docs" / "security.md"
BEGIN, END = "<!-- attack-matrix:begin -->", "<!-- attack-matrix:end -->"
#: Short names for the failure classes in the table.
SHORT = {"reach_in": "`reach_in`", "test_failure": "fails", "not_equivalent": "`not_equivalent`", "build_error": "`build_error`", "timeout": "`timeout`"}


@contextmanager
def without_gate():
    """The answer gate switched off everywhere it is called (this process only)."""
    from cvdp_gym.benchmarks.rtllm import flow as rtllm
    from cvdp_gym.benchmarks.verilog_eval_v1 import flow as v1
    from cvdp_gym.benchmarks.verilog_eval_v2 import flow as v2
    from cvdp_gym.equivalence import flow as reference
    from cvdp_gym.harness import runner

    with ExitStack() as stack:
        for module in (rtllm, v1, v2, runner, reference):
            stack.enter_context(mock.patch.object(module, "check", lambda *a, **k: Scan()))
        yield


def play(jobs: int, only: set[str] | None) -> tuple[dict[str, float], list[tuple[str, str, str, object, float, float]]]:
    """Each flow's wrong answer's reward, and every answer's (flow, payload, hiding, result, reward, seconds)."""
    grading = Grading(BubblewrapSandbox(detect()))
    todo = [c for c in cells() if only is None or c[0] in only]
    flows = sorted({f for f, _, _ in todo}, key=list(FLOWS).index)

    def one(cell):
        start = time.monotonic()
        result, reward = grade(grading, cell[0], answer(*cell))
        return (*cell, result, reward, time.monotonic() - start)

    with ThreadPoolExecutor(jobs) as pool:
        baseline = dict(zip(flows, pool.map(lambda f: grade(grading, f, settings(f)[1])[1], flows), strict=True))
        played = list(pool.map(one, todo))
    return baseline, played


def outcome(result) -> str:
    return "passed" if result.passed else str(result.failure_class)


def summary(counter: Counter) -> str:
    """One table cell: each outcome with its count, the commonest first."""
    return ", ".join(f"{SHORT.get(k, f'`{k}`')} {n}" for k, n in counter.most_common()) or ""


def tables(baseline, played) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """(the flows, the payload rows, the hiding rows): each row's cells summarise its answers."""
    flows = [f for f in FLOWS if f in baseline]
    by_payload: dict[tuple[str, str], Counter] = defaultdict(Counter)
    by_hiding: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for flow, payload, hiding, result, _, _ in played:
        by_payload[payload, flow][outcome(result)] += 1
        by_hiding[hiding, flow][outcome(result)] += 1
    payload_rows = [[PAYLOADS[p].title, *(summary(by_payload[p, f]) or "n/a" for f in flows)] for p in PAYLOADS]
    hiding_rows = [[HIDINGS[h].title, *(summary(by_hiding[h, f]) or "n/a" for f in flows)] for h in HIDINGS]
    return flows, payload_rows, hiding_rows


def rewarded(baseline, played) -> list[tuple]:
    """Answers that passed, or earned more than their flow's wrong design alone."""
    return [row for row in played if row[3].passed or row[4] > baseline[row[0]] + 1e-9]


def paying(baseline, played, honest: dict[str, float]) -> list[tuple]:
    """The rewarded answers an attack gains by: the quality flow's split view simulates the
    correct counter, so it gains only where it earns more than that counter honestly does."""
    return [
        row for row in rewarded(baseline, played)
        if not (row[1] == "split_view" and row[0] in honest and row[4] <= honest[row[0]] + 1e-9)
    ]


def honest_rewards(jobs: int) -> dict[str, float]:
    """What the correct design of a flow whose split view simulates it earns honestly (quality)."""
    grading = Grading(BubblewrapSandbox(detect()))
    problem, _ = settings("quality")
    return {"quality": grade(grading, "quality", dict(problem.reference or {}))[1]}


def official_passes(played) -> int:
    """Answers the benchmark's own reading (``official``) passes."""
    return sum(bool(row[3].official.get("passed") or row[3].official.get("auto_run")) for row in played)


def unnamed(played) -> list[tuple]:
    """Answers the gate had to name and did not."""
    return [row for row in played if expects_reach_in(*row[:3]) and row[3].failure_class != "reach_in"]


def gate_off_line(baseline, played, honest: dict[str, float]) -> str:
    """The gate-off run in a few sentences: what the tools and the flows' own evidence rules
    alone would pay, by flow, payload and hidings; what the benchmarks' own readings pass."""
    total, fooled = len(played), official_passes(played)
    passed = [row for row in rewarded(baseline, played) if row not in paying(baseline, played, honest)]
    off = paying(baseline, played, honest)
    head = "With the gate switched off (`--without-gate`: the tools and the flows' own rules alone), "
    tail = (
        f" The benchmarks' own readings (`official`, never the reward) pass {fooled} of the {total}."
        + (
            f" {len(passed)} split view(s) of the quality flow pass, earning no more than the correct design they"
            f" simulate earns honestly ({', '.join(f'{v:.2f}' for v in honest.values())}): "
            + ", ".join(f"{h} ({r:.2f}, {row.failure_class or 'passed'})" for _, _, h, row, r, _ in passed) + "."
            if passed else ""
        )
    )
    if not off:
        return head + f"none of the {total} answers pays." + tail
    grouped: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for flow, payload, hiding, *_ in off:
        grouped[flow][payload].append(hiding)
    parts = []
    for flow, payloads in grouped.items():
        each = ", ".join(
            f"{PAYLOADS[p].title} ({len(h)} hidings)" if len(h) > 3 else f"{PAYLOADS[p].title} ({', '.join(h)})"
            for p, h in payloads.items()
        )
        parts.append(f"{FLOWS[flow].title}: {each}")
    return head + f"{len(off)} of the {total} answers pay, each a working attack the gate stops: " + "; ".join(parts) + "." + tail


def markdown(baseline, played, off: str | None = None) -> str:
    flows, payload_rows, hiding_rows = tables(baseline, played)
    titles = [FLOWS[f].title for f in flows]
    cells_count = len({(f, p) for f, p, *_ in played})
    lines = [
        BEGIN,
        "<!-- written by scripts/attack_matrix.py --write; do not edit by hand -->",
        "",
        f"{cells_count} cells (flow × payload), {len(played)} answers, {len(rewarded(baseline, played))} rewarded "
        f"({len(unnamed(played))} the gate had to name and did not). Each cell counts its answers (one per hiding) by outcome.",
        "",
        "| payload | " + " | ".join(titles) + " |",
        "| --- |" + " --- |" * len(titles),
        *("| " + " | ".join(row) + " |" for row in payload_rows),
        "",
        "The same answers by hiding:",
        "",
        "| hiding | " + " | ".join(titles) + " |",
        "| --- |" + " --- |" * len(titles),
        *("| " + " | ".join(row) + " |" for row in hiding_rows),
        "",
        "Each flow's wrong design alone earns (shaped; the quality reward for the quality flow): "
        + ", ".join(f"{FLOWS[f].title} {baseline[f]:.1f}" for f in baseline) + ".",
        *(["", off] if off is not None else []),
        END,
    ]
    return "\n".join(lines)


def write(text: str) -> None:
    docs = DOCS.read_text()
    head, begin, rest = docs.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"{DOCS} has no {BEGIN} ... {END} markers")
    DOCS.write_text(head + text + tail)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", action="append", choices=list(FLOWS), help="only this flow (repeatable)")
    parser.add_argument("--write", action="store_true", help="write the tables into docs/security.md")
    parser.add_argument("--without-gate", action="store_true", help="grade with the answer gate off (never written)")
    args = parser.parse_args()
    if args.write and (args.only or args.without_gate):
        parser.error("--write needs the whole matrix with the gate on")
    console = Console(width=max(Console().width, 180))
    start = time.monotonic()
    with plugin_flow(), (without_gate() if args.without_gate else ExitStack()):
        baseline, played = play(args.jobs, set(args.only) if args.only else None)
    seconds = time.monotonic() - start
    flows, payload_rows, hiding_rows = tables(baseline, played)
    for first, rows in (("payload", payload_rows), ("hiding", hiding_rows)):
        table = Table(first, *flows, show_lines=True)
        for row in rows:
            table.add_row(*(cell.replace("`", "") for cell in row))
        console.print(table)
    paid = rewarded(baseline, played)
    missed = [] if args.without_gate else unnamed(played)
    console.print(
        f"{len({(f, p) for f, p, *_ in played})} cells (flow × payload), {len(played)} answers, "
        f"[bold]{len(paid)} rewarded[/bold], {len(missed)} not named by the gate; {seconds:.0f} s"
        + (" [yellow](gate off)[/yellow]" if args.without_gate else "")
    )
    slowest = sorted(played, key=lambda row: -row[5])[:5]
    console.print("slowest: " + ", ".join(f"{f}:{p}:{h} {s:.1f} s" for f, p, h, _, _, s in slowest))
    for flow, payload, hiding, result, reward, _ in paid:
        console.print(f"[red]REWARDED[/red] {flow} {payload} {hiding}: passed={result.passed} reward={reward:.2f} "
                      f"(wrong design {baseline[flow]:.2f}) {result.failure_class}: {result.reason[:200]}")
    for flow, payload, hiding, result, _, _ in missed:
        console.print(f"[yellow]not named[/yellow] {flow} {payload} {hiding}: {result.failure_class}: {result.reason[:200]}")
    if args.write:
        console.print("the same answers with the gate off:")
        with plugin_flow(), without_gate():
            baseline_off, played_off = play(args.jobs, None)
        off = gate_off_line(baseline_off, played_off, honest_rewards(args.jobs))
        console.print(off)
        write(markdown(baseline, played, off))
        console.print(f"wrote {DOCS.relative_to(REPO)}")
    return 1 if paid and not args.without_gate else 0


if __name__ == "__main__":
    raise SystemExit(main())
