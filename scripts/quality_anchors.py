"""RTLLM's designer references measured here, beside RTLLM's own Design Compiler figures.

RTLLM's README publishes area (µm²), power (µW) and timing (ns) of its designer references
from Synopsys Design Compiler (``_pic/DC_Results.png``, RTLLM v1.0 designs; transcribed in
``cvdp_gym/benchmarks/rtllm/dc_results.json``). This script measures the same designs'
references of RTLLM v1.1 and v2.0 (the copies ``cvdp-gym benchmarks fetch`` made) with the
project's ASIC flow (``--liberty``, ``--clock-ns``) and prints both side by side, with the
Spearman rank correlation of area, and of power, across the designs both have: how far an
open flow on an open library orders designs as the commercial one did. Designs that do not
synthesise here are listed with why.

    python scripts/quality_anchors.py --liberty nangate45 --jobs 2 [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cvdp_gym.data.benchmarks.catalog import load_benchmark  # noqa: E402
from cvdp_gym.execution.cache import GradeCache  # noqa: E402
from cvdp_gym.grading.quality import QualitySettings, QualityStage, design_pair  # noqa: E402
from cvdp_gym.harness.runner import HarnessRunner  # noqa: E402

DC = ROOT / "cvdp_gym" / "benchmarks" / "rtllm" / "dc_results.json"


def ranks(values: list[float]) -> list[float]:
    """Ranks from 1, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rho (Pearson's r of the ranks); None under three pairs."""
    if len(a) < 3:
        return None
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    va, vb = sum((x - ma) ** 2 for x in ra), sum((y - mb) ** 2 for y in rb)
    return cov / (va * vb) ** 0.5 if va and vb else None


def design_name(problem) -> str:
    return str(problem.extra.get("name") or problem.id.rsplit(".", 1)[-1])


def beside(ref: dict | None, key: str) -> str:
    """Design Compiler's figure in parentheses, where RTLLM published one."""
    return f" ({ref[key]:g})" if ref else ""


def measure_all(stage: QualityStage, pairs: dict, jobs: int, console: Console, spec: str) -> dict:
    """Each design's measurement, ``jobs`` at a time, with a progress bar."""
    with Progress(console=console, transient=True) as progress, ThreadPoolExecutor(jobs) as pool:
        task = progress.add_task(f"{spec}: measuring {len(pairs)} references", total=len(pairs))

        def one(item: tuple) -> tuple:
            name, (sources, top) = item
            measured = stage.measure(sources, top)
            progress.advance(task)
            return name, measured

        return dict(pool.map(one, sorted(pairs.items())))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--liberty", default="nangate45")
    parser.add_argument("--clock-ns", type=float, default=10.0)
    parser.add_argument("--benchmarks", nargs="+", default=["rtllm-v1.1", "rtllm-v2"])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=None, help="quality cache (default: the user's grade cache)")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the tables as Markdown here")
    args = parser.parse_args()
    console = Console(width=160)
    dc = json.loads(DC.read_text())["designs"]
    dc_by_lower = {name.lower(): (name, figures) for name, figures in dc.items()}
    stage = QualityStage(HarnessRunner().sandbox, QualitySettings(liberty=args.liberty, clock_ns=args.clock_ns), cache=GradeCache(args.cache))
    markdown: list[str] = []
    for spec in args.benchmarks:
        problems = [p for p in load_benchmark(spec) if p.reference]
        pairs = {}
        for problem in problems:
            pair = design_pair(problem, dict(problem.reference))
            if not isinstance(pair, str):
                pairs[design_name(problem)] = (pair[1], pair[2])
        measured = measure_all(stage, pairs, args.jobs, console, spec)
        table = Table(title=f"{spec} references: this flow ({args.liberty}, {args.clock_ns} ns) beside RTLLM's Design Compiler figures")
        columns = ["design", "area µm² (DC)", "power µW (DC)", "delay ns / slack ns (DC timing)", "cells", "warnings"]
        for column in columns:
            table.add_column(column, justify="left" if column == "design" else "right")
        rows, areas, powers, failed = [], ([], []), ([], []), []
        for name, m in sorted(measured.items(), key=lambda kv: kv[0].lower()):
            ref = dc_by_lower.get(name.lower(), (None, None))[1]
            if not m.ok:
                failed.append((name, m.failure))
                continue
            metrics = m.metrics
            if ref:
                areas[0].append(metrics.area_um2)
                areas[1].append(ref["area_um2"])
                if metrics.power_uw is not None:
                    powers[0].append(metrics.power_uw)
                    powers[1].append(ref["power_uw"])
            delay = "-" if metrics.delay_ns is None else f"{metrics.delay_ns:.3f}"
            slack = "-" if metrics.slack_ns is None else f"{metrics.slack_ns:.3f}"
            power = "-" if metrics.power_uw is None else f"{metrics.power_uw:.3g}"
            row = [
                name, f"{metrics.area_um2:.1f}{beside(ref, 'area_um2')}", f"{power}{beside(ref, 'power_uw')}",
                f"{delay} / {slack}{beside(ref, 'timing_ns')}", str(metrics.cells), str(sum(metrics.warnings.values())),
            ]
            rows.append(row)
            table.add_row(*row)
        console.print(table)
        rho_area, rho_power = spearman(*areas), spearman(*powers)
        summary = (
            f"{spec}: {len(rows)} of {len(measured)} references measured; Spearman rank correlation with Design Compiler "
            f"across the {len(areas[0])} designs in both: area {rho_area if rho_area is None else round(rho_area, 3)}, "
            f"power {rho_power if rho_power is None else round(rho_power, 3)} ({len(powers[0])} designs)"
        )
        console.print(summary)
        for name, why in failed:
            console.print(f"  not measured: {name}: {why}")
        markdown += [f"### {spec}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        markdown += ["| " + " | ".join(r) + " |" for r in rows]
        markdown += ["", summary, ""] + [f"- not measured: {name}: {why}" for name, why in failed] + [""]
    if args.markdown:
        args.markdown.write_text("\n".join(markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
