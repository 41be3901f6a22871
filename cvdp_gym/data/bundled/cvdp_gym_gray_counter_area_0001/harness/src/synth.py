"""Area gate: synthesise with Yosys and require each listed statistic to shrink by its percentage.

The baseline (``CELLS``, ``WIRES``, ...) was measured on the original design with the
official image's Yosys 0.40; ``IMPROVEMENTS`` lists the statistics to compare and
``PERCENT_<NAME>`` the cut each must reach.
"""

import os
import re
import subprocess

LOG = "/code/rundir/synth.log"


def synthesise() -> dict[str, int]:
    if os.path.exists(LOG):
        os.remove(LOG)
    process = subprocess.run(["yosys", "-q", "-s", "/src/synth.tcl", "-l", LOG], capture_output=True, text=True)
    assert process.returncode == 0, f"synthesis failed: {(process.stdout + process.stderr).strip()[-400:]}"
    stats = {}
    with open(LOG) as log:
        for line in log:
            match = re.match(r"^\s+Number of (\w+( \w+)?):\s+(\d+)\s*$", line)
            if match:
                stats[match.group(1)] = int(match.group(3))  # the last report wins
    return stats


def test_area_reduced():
    stats = synthesise()
    print(f"Yosys statistics: {stats}")
    failures = []
    for name in os.environ["IMPROVEMENTS"].split():
        before = int(os.environ[name.upper()])
        assert name in stats, f"the synthesis report has no 'Number of {name}' line (statistics: {stats})"
        after = stats[name]
        cut = 100.0 * (before - after) / before
        required = float(os.environ.get(f"PERCENT_{name.upper()}", "0"))
        print(f"{name}: {before} -> {after} ({cut:.1f}% fewer; {required:g}% required)")
        if cut < required:
            failures.append(f"{name} {before} -> {after}: {cut:.1f}% fewer, {required:g}% required")
    assert not failures, "area not reduced enough: " + "; ".join(failures)
