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

For the assertion task (``--kind restating``, written to ``--out`` as above with ``--task
assertion``): properties that restate the reference mechanically, never reading the
specification: each continuous ``assign lhs = rhs;`` becomes ``assert property (@(posedge
clk) lhs == (rhs));`` over the design's own (internal) names, and each
``always`` block (edge-triggered or combinational) is copied with its assignment targets
renamed to shadows (``chk_sh_q``), each compared with the design's own signal (``q ==
chk_sh_q``; a block that writes a memory or a concatenation is left out). ``--measure-assertions`` grades them, and
port-only properties written by hand from the specifications of a few bundled problems
(:data:`HONEST`), through the assertion task's flow, and prints the kill rates; with
``--ports-check off`` the flow's ports-only check is skipped (what the task paid before it):

    python scripts/verification_baselines.py bundled --measure-assertions
    python scripts/verification_baselines.py bundled --measure-assertions --ports-check off
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from pyslang import syntax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cvdp_gym.data import load_dataset
from cvdp_gym.equivalence.ports import Design, read_design
from cvdp_gym.equivalence.sources import rename_modules
from cvdp_gym.errors import CvdpGymError
from cvdp_gym.tasks.design import DesignUnderTest
from cvdp_gym.tasks.names import ASSERTION, TESTBENCH
from cvdp_gym.tasks.posing import TaskOptions, pose
from tests.cvdp_gym.tasks.verification_problems import EVENT_COUNTER_PROPERTIES

KINDS = ("reference-model", "ports-only", "restating")


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


SK = syntax.SyntaxKind
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
SHADOW = "chk_sh_"
_ALWAYS = (SK.AlwaysBlock, SK.AlwaysFFBlock, SK.AlwaysCombBlock)
_EDGE = re.compile(r"@\s*\(\s*(?:posedge|negedge)\b")
_TYPES = "logic|reg|bit|int|integer|byte"


def _top_module(text: str, top: str):
    root = syntax.SyntaxTree.fromText(text).root
    members = [root] if root.kind == SK.ModuleDeclaration else list(root.members)
    return next((m for m in members if m.kind == SK.ModuleDeclaration and m.header.name.valueText == top), None)


def restating(design: DesignUnderTest, described: Design) -> str:
    """Properties that restate ``design`` (see the module docstring): no specification read."""
    text = design.text.encode("ascii", "replace").decode()  # one byte a character: slang's offsets are bytes
    module = _top_module(text, design.top)
    if module is None:
        return ""
    clock = described.clocks[0] if described.sequential and described.clocks else None
    edge = "negedge" if clock and described.clock_edges.get(clock) == frozenset({"negedge"}) else "posedge"
    event = f"@({edge} {clock}) " if clock else ""
    lines: list[str] = []
    shadows: dict[str, None] = {}
    for member in module.members:
        if member.kind == SK.ContinuousAssign:
            for assignment in member.assignments:
                lines.append(f"assert property ({event}{str(assignment.left).strip()} == ({str(assignment.right).strip()}));")
        elif member.kind in _ALWAYS:
            block = text[member.sourceRange.start.offset:member.sourceRange.end.offset]
            clocked = member.kind == SK.AlwaysFFBlock or bool(_EDGE.search(block.split("\n", 1)[0]))
            targets: list[tuple[int, str]] = []
            plain = [True]

            def visit(node, targets=targets, plain=plain):
                if node.kind in (SK.NonblockingAssignmentExpression, SK.AssignmentExpression):
                    head = _IDENT.match(str(node.left).strip())
                    if head:
                        targets.append((node.left.sourceRange.start.offset, head.group(0)))
                    else:
                        plain[0] = False  # a concatenation target: not shadowed
                return True

            member.visit(visit)
            local = set(re.findall(rf"\b(?:{_TYPES})\b[^;=]*?\b({_IDENT.pattern})\s*;", block))  # declared in the block
            targets = [(o, n) for o, n in targets if n not in local]
            memory = any(re.search(rf"^\s*(?:{_TYPES})\b[^;]*\b{re.escape(n)}\s*\[", text, re.M) for _, n in targets)
            if not targets or memory or not plain[0] or (not clocked and member.kind == SK.AlwaysBlock and "@" not in block.split("\n", 1)[0]):
                continue  # a memory (an unpacked array), a concatenation target, or no event: not shadowed
            start = member.sourceRange.start.offset
            copied = block
            if clocked:  # the targets only: the right-hand sides read the design's registers
                for offset, _ in sorted(targets, reverse=True):  # from the end: offsets stay valid
                    at = offset - start
                    at += len(copied[at:]) - len(copied[at:].lstrip())
                    copied = copied[:at] + SHADOW + copied[at:]
            else:  # combinational: every use of a target, as the block computes it step by step
                names = "|".join(sorted({re.escape(n) for _, n in targets}, key=len, reverse=True))
                copied = re.sub(rf"(?<![\w$.])({names})\b", rf"{SHADOW}\1", copied)
            shadows.update(dict.fromkeys(n for _, n in targets))
            lines.append(copied.strip())
    declared = [f"logic [$bits({name})-1:0] {SHADOW}{name};" for name in shadows]
    checks = [f"assert property ({event}{name} == {SHADOW}{name});" for name in shadows]
    return "\n".join(declared + lines + checks) + "\n"


#: Port-only properties written by hand from the specifications of bundled problems (their
#: prompts, never their designs): each reads the ports and its own helpers only.
HONEST = {
    "cvdp_gym_event_counter_0001": EVENT_COUNTER_PROPERTIES,
    "cvdp_gym_sat_adder_lint_0001": """
wire [WIDTH:0] chk_total = {1'b0, a_i} + {1'b0, b_i};
assert property (@(posedge clk) rst |=> sum_o == '0 && !sat_o && !valid_o);
assert property (@(posedge clk) !rst |=> valid_o == $past(valid_i));
assert property (@(posedge clk) !rst && valid_i |=> sat_o == $past(chk_total[WIDTH]));
assert property (@(posedge clk) !rst && valid_i |=> sum_o == ($past(chk_total[WIDTH]) ? {WIDTH{1'b1}} : $past(chk_total[WIDTH-1:0])));
assert property (@(posedge clk) !rst && !valid_i |=> sum_o == $past(sum_o) && sat_o == $past(sat_o));
""",
    "cvdp_gym_gray_converter_0001": """
assert property (gray_o == (bin_i ^ (bin_i >> 1)));
assert property (gray_i == (bin_o ^ (bin_o >> 1)));
""",
    "cvdp_gym_edge_detector_0001": """
assert property (@(posedge clk) !rst_n |-> !rise_pulse && !fall_pulse);
assert property (@(posedge clk) disable iff (!rst_n) ##2 rise_pulse == ($past(sig_in) && !$past(sig_in, 2)));
assert property (@(posedge clk) disable iff (!rst_n) ##2 fall_pulse == (!$past(sig_in) && $past(sig_in, 2)));
assert property (@(posedge clk) any_edge == (rise_pulse || fall_pulse));
""",
}


def measure_assertions(
    dataset: str, benchmark_dir: str | None, *, ports_check: bool, seed: int = 0, limit: int | None = None,
    internal_only: bool = False,
) -> list[dict]:
    """Grade the restating properties (every problem) and :data:`HONEST` (where written) through
    the assertion task's flow; one row per problem and kind."""
    from unittest import mock

    from cvdp_gym.sandbox import Limits, make_sandbox
    from cvdp_gym.tasks import assertion_flow as assertion_task

    sandbox = make_sandbox("bubblewrap")
    flow = assertion_task.AssertionTaskFlow()
    rows = []
    problems = pose(load_dataset(dataset, benchmark_dir=benchmark_dir).problems, TaskOptions(ASSERTION))
    if internal_only:  # the problems whose restatement reads a name inside the design
        problems = [p for p in problems if _reads_inside(p)]
    problems = problems[:limit]
    with mock.patch.object(assertion_task, "outside_names", return_value=None) if not ports_check else _nothing():
        for problem in problems:
            design = DesignUnderTest.from_dict(problem.extra["design"])
            try:
                described = read_design(design.text, design.top)
            except (CvdpGymError, RecursionError) as exc:
                rows.append({"id": problem.id, "kind": "restating", "verdict": "skipped", "why": str(exc)})
                continue
            answers = {"restating": restating(design, described)}
            source = problem.id.removesuffix(f".{ASSERTION}")
            if source in HONEST:
                answers["honest"] = HONEST[source]
            for kind, text in answers.items():
                result = flow.run(sandbox, problem, {problem.targets[0]: text}, limits=Limits(wall_s=300), seed=seed)
                official = result.official or {}
                rows.append({
                    "id": problem.id, "kind": kind, "verdict": result.failure_class or "passed",
                    "kill_rate": float(official.get("kill_rate", 0.0) or 0.0), "why": result.reason[:160],
                })
    return rows


def _reads_inside(problem) -> bool:
    from cvdp_gym.tasks.assertions.ports_only import outside_names

    design = DesignUnderTest.from_dict(problem.extra["design"])
    try:
        found = outside_names(design.text, design.top, restating(design, read_design(design.text, design.top)))
    except (CvdpGymError, RecursionError, ValueError):
        return False
    return found is not None and found.inside


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("--benchmark-dir", default=None)
    parser.add_argument("--kind", choices=KINDS, default=KINDS[0])
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--measure-assertions", action="store_true")
    parser.add_argument("--ports-check", choices=("on", "off"), default="on")
    parser.add_argument("--limit", type=int, default=None, help="measure the first N problems only")
    parser.add_argument("--internal-only", action="store_true", help="only problems whose restatement reads internal names")
    args = parser.parse_args()
    if args.measure_assertions:
        rows = measure_assertions(args.dataset, args.benchmark_dir, ports_check=args.ports_check == "on", limit=args.limit, internal_only=args.internal_only)
        for row in rows:
            print(json.dumps(row))
        for kind in ("restating", "honest"):
            mine = [r for r in rows if r["kind"] == kind and r["verdict"] != "skipped"]
            if mine:
                mean = sum(r["kill_rate"] for r in mine) / len(mine)
                full = sum(r["kill_rate"] == 1.0 for r in mine)
                reach = sum(r["verdict"] == "reach_in" for r in mine)
                print(f"{kind} (ports check {args.ports_check}): {len(mine)} problems, mean kill rate {mean:.2f}, full catch {full}, reach_in {reach}")
        return
    if args.out is None:
        parser.error("--out is required")
    task = ASSERTION if args.kind == "restating" else TESTBENCH
    problems = pose(load_dataset(args.dataset, benchmark_dir=args.benchmark_dir).problems, TaskOptions(task))
    written, skipped = 0, []
    with open(args.out, "w", encoding="utf-8") as out:
        for problem in problems:
            design = DesignUnderTest.from_dict(problem.extra["design"])
            try:
                described = read_design(design.text, design.top)
            except (CvdpGymError, RecursionError) as exc:
                skipped.append(f"{problem.id}: {exc}")
                continue
            if args.kind == "restating":
                text, language = restating(design, described), "systemverilog"
            else:
                text, language = bench(design, described, cycles=args.cycles, check=args.kind == "reference-model"), "verilog"
            out.write(json.dumps({"id": problem.id, "response": f"```{language}\n{text}```", "sample": 0}) + "\n")
            written += 1
    print(f"{args.kind}: {written} bench(es) written to {args.out}; {len(skipped)} skipped")
    for line in skipped:
        print(f"  skipped {line}")


if __name__ == "__main__":
    main()
