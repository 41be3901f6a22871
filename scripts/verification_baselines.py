"""Baseline answers for the test-bench task, written as a responses file for ``cvdp-gym eval``.

``reference-model``: for each problem, a bench that embeds the reference design itself (its
modules renamed) as a perfect model and compares every output with it on random stimulus
(``--cycles`` cycles, reset first): what a model that understood the specification exactly
would get from random stimulus alone. No model could write it from the prompt (it holds the
reference), so it is a ceiling for random-stimulus checking, not an answer to compare
with: the golden row (``eval --task testbench --references``) is the benchmark's own directed
bench; this one says how much random stimulus catches.

``ports-only``: drives the same stimulus and checks nothing: the floor (it passes every
design; its kill rate is 0 unless a bug makes the simulation itself fail).

    python scripts/verification_baselines.py verilog-eval-v2:spec-to-rtl --benchmark-dir DIR --out answers.jsonl
    cvdp-gym eval verilog-eval-v2:spec-to-rtl --benchmark-dir DIR --task testbench --responses answers.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cvdp_gym.data import load_dataset
from cvdp_gym.data.verification_tasks import TESTBENCH, DesignUnderTest, task_problems
from cvdp_gym.errors import CvdpGymError
from cvdp_gym.harness.equivalence.ports import Design, read_design
from cvdp_gym.harness.equivalence.sources import rename_modules

KINDS = ("reference-model", "ports-only")


def _random(width: int) -> str:
    """A ``width``-bit random value from ``$random(seed)`` calls (32 bits each)."""
    parts = ["$random(seed)"] * max(1, (width + 31) // 32)
    return parts[0] if len(parts) == 1 else "{" + ", ".join(parts) + "}"


def _decl(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def bench(design: DesignUnderTest, described: Design, *, cycles: int, check: bool) -> str:
    """The bench text (see the module docstring)."""
    ref_names = {m: f"ref_model_{m}" for m in described.modules}
    lines = ["module tb;", "  integer seed = 1, cycle;"]
    for port in described.ports:
        kind = "reg" if port.direction == "input" else "wire"
        lines.append(f"  {kind} {_decl(port.width)}{port.name};")
        if port.direction == "output" and check:
            lines.append(f"  wire {_decl(port.width)}ref_{port.name};")
    dut = ", ".join(f".{p.name}({p.name})" for p in described.ports)
    lines.append(f"  {design.top} dut({dut});")
    if check:
        model = ", ".join(f".{p.name}({'ref_' if p.direction == 'output' else ''}{p.name})" for p in described.ports)
        lines.append(f"  {ref_names[design.top]} model({model});")
    resets = {r.name: r for r in described.resets}
    driven = [p for p in described.inputs if p.name not in described.clocks]
    compare = [
        f"    if ((^ref_{p.name}) !== 1'bx && ref_{p.name} !== {p.name}) $error(\"cycle %0d: {p.name}=%h, expected %h\", cycle, {p.name}, ref_{p.name});"
        for p in described.outputs
    ] if check else []
    lines += ["  initial begin"]
    lines += [f"    {c} = 0;" for c in described.clocks]
    for port in driven:
        value = ("0" if resets[port.name].active_low else "1") if port.name in resets else _random(port.width)
        lines.append(f"    {port.name} = {value};")
    lines.append(f"    for (cycle = 0; cycle < {cycles}; cycle = cycle + 1) begin")
    if described.clocks:
        lines += [f"      #5 {' '.join(f'{c} = 1;' for c in described.clocks)}", f"      #5 {' '.join(f'{c} = 0;' for c in described.clocks)}"]
    else:
        lines.append("      #5;")
    lines += ["  " + c for c in compare]
    for port in driven:
        if port.name in resets:
            active = "0" if resets[port.name].active_low else "1"
            lines.append(f"      {port.name} = (cycle < 2 || $random(seed) % 50 == 0) ? {active} : ~{active};")
        else:
            lines.append(f"      {port.name} = {_random(port.width)};")
    lines += ["    end", "    $finish;", "  end", "endmodule", ""]
    model_text = rename_modules(design.text, ref_names) if check else ""
    return "\n".join(lines) + ("\n" + model_text if model_text else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("--benchmark-dir", default=None)
    parser.add_argument("--kind", choices=KINDS, default=KINDS[0])
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    problems = task_problems(load_dataset(args.dataset, benchmark_dir=args.benchmark_dir).problems, TESTBENCH)
    written, skipped = 0, []
    with open(args.out, "w", encoding="utf-8") as out:
        for problem in problems:
            design = DesignUnderTest.from_dict(problem.extra["design"])
            try:
                described = read_design(design.text, design.top)
            except (CvdpGymError, RecursionError) as exc:
                skipped.append(f"{problem.id}: {exc}")
                continue
            text = bench(design, described, cycles=args.cycles, check=args.kind == "reference-model")
            out.write(json.dumps({"id": problem.id, "response": f"```verilog\n{text}```", "sample": 0}) + "\n")
            written += 1
    print(f"{args.kind}: {written} bench(es) written to {args.out}; {len(skipped)} skipped")
    for line in skipped:
        print(f"  skipped {line}")


if __name__ == "__main__":
    main()
