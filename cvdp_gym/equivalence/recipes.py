"""The two published recipes for a reward from a reference design, re-implemented from their
descriptions as grader modes, so they can be measured beside ours on the same answers
(``scripts/bench_reference.py``) and trained with.

- ``codev-r1`` (CodeV-R1, arXiv 2505.24183, its RL reward): the reference and the answer side
  by side under ``iverilog -g2012``, driven by random inputs, 100 sequences of 1,000 steps,
  sweeping the reset combinations (each sequence starts with a different subset of the resets
  asserted), every output compared every step with ``===`` (an X anywhere is a mismatch),
  one clock only (a design with several is ``unsupported``), within 30 s. The answer passes
  only when every comparison matched. ``codev_r1_stimulus`` builds that stimulus for the
  generated test bench the default mode uses (the same bench, strict X).
- ``verithoughts`` (VeriThoughts): a bounded proof with Yosys, ``prep; proc; opt; memory;
  clk2fflogic; miter -equiv -flatten; sat -seq 50 -verify -prove trigger 0 -set-init-zero``:
  no difference for 50 steps from an all-zero start, within 150 s; anything else (a
  counterexample, a timeout, a design Yosys cannot read) fails.

Both are what their descriptions say, nothing more: no corner values, no reset re-assertion
within a sequence, no induction. Their holes are the point of measuring them.
"""

from __future__ import annotations

import random

from cvdp_gym.equivalence.formal import GATE, GOLD, FormalResult, yosys_id
from cvdp_gym.equivalence.ports import Design
from cvdp_gym.equivalence.sources import RunNames
from cvdp_gym.equivalence.stimulus import Stimulus

CODEV_R1, VERITHOUGHTS = "codev-r1", "verithoughts"
#: CodeV-R1's random sequences, their steps, and its time limit; VeriThoughts' depth and limit.
CODEV_SEQUENCES, CODEV_STEPS, CODEV_LIMIT_S = 100, 1000, 30.0
VERITHOUGHTS_STEPS, VERITHOUGHTS_LIMIT_S = 50, 150.0
#: Cycles each sequence's starting reset subset is held.
RESET_CYCLES = 2
_PROVED = "SAT proof finished - no model found: SUCCESS!"
_FAILED = "SAT proof finished - model found: FAIL!"


def codev_r1_stimulus(design: Design, seed: int) -> Stimulus:
    """CodeV-R1's stimulus: ``CODEV_SEQUENCES`` sequences of ``CODEV_STEPS`` uniformly random
    input vectors, each started with the next subset of the resets asserted (all subsets in
    turn, the empty one included); compared from the first cycle after the first reset phase."""
    rng = random.Random(seed)
    driven = design.driven
    resets = list(design.resets)
    reset_names = {r.name for r in resets}
    vectors: list[tuple[int, ...]] = []
    for sequence in range(CODEV_SEQUENCES):
        subset = sequence % (1 << len(resets)) if resets else 0
        for cycle in range(RESET_CYCLES + CODEV_STEPS):
            values = {p.name: rng.getrandbits(p.width) for p in driven if p.name not in reset_names}
            for index, reset in enumerate(resets):
                asserted = cycle < RESET_CYCLES and bool(subset >> index & 1)
                values[reset.name] = reset.asserted if asserted else 1 - reset.asserted
            vectors.append(tuple(values[p.name] for p in driven))
    return Stimulus(driven, tuple(vectors), RESET_CYCLES, RESET_CYCLES)


def verithoughts_files(names: RunNames, design: Design, gold: str, gate: str) -> dict[str, str]:
    """VeriThoughts' Yosys check of the two designs, in the formal folder."""
    script = (
        f"read_verilog -sv {GOLD}\nread_verilog -sv {GATE}\n"
        "prep; proc; opt; memory; clk2fflogic\n"
        f"miter -equiv -flatten {yosys_id(names.ref_prefix + design.top)} {yosys_id(design.top)} miter\n"
        f"tee -q -o bmc.txt sat -seq {VERITHOUGHTS_STEPS} -verify -prove trigger 0 -set-init-zero miter\n"
    )
    run = "yosys -q -l check.log -s check.ys > /dev/null 2>&1; echo $? > check.rc\n"
    return {f"{names.formal_dir}/{name}": text for name, text in ((GOLD, gold), (GATE, gate), ("check.ys", script), ("formal.sh", run))}


def verithoughts_script(names: RunNames) -> str:
    """Shell lines that run the check under VeriThoughts' limit."""
    return f"cd {names.formal_dir} && {{ timeout {VERITHOUGHTS_LIMIT_S:g} sh formal.sh > /dev/null 2>&1; echo $? > formal.rc; }}\n"


#: The files ``read_verithoughts`` reads.
VERITHOUGHTS_LOGS = ("bmc.txt", "check.log", "formal.rc", "check.rc")


def read_verithoughts(logs: dict[str, str]) -> FormalResult:
    """``bounded`` (no model within 50 steps from zero), ``counterexample`` or ``undecided``."""
    lines = {line.strip() for line in logs.get("bmc.txt", "").splitlines()}
    if _FAILED in lines:
        return FormalResult("counterexample", VERITHOUGHTS_STEPS, [], "a difference within 50 steps from all-zero", "event")
    if _PROVED in lines:
        why = f"no difference within {VERITHOUGHTS_STEPS} steps from an all-zero start (VeriThoughts' bound)"
        return FormalResult("bounded", VERITHOUGHTS_STEPS, [], why, "event")
    if logs.get("formal.rc", "").strip() == "124":
        return FormalResult("undecided", 0, [], "timeout", "event")
    errors = [line.strip() for line in logs.get("check.log", "").splitlines() if "ERROR" in line]
    return FormalResult("undecided", 0, [], (errors[0] if errors else "Yosys gave no verdict")[:300], "event")
