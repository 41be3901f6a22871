"""What one run of a model's test bench on one design says: built, passed, and why not.

One definition for every kind of bench (a Verilog ``tb.sv`` and a cocotb ``test_tb.py``), so
the test-bench task's flow scores them the same way: ``DesignRun`` per design, and
``bench_verdict`` reading a Verilog bench's return codes and logs (a cocotb bench is read by
:mod:`cvdp_gym.tasks.cocotb_bench`, from cocotb's results file).
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["KILLED_RC", "DesignRun", "bench_verdict"]

_FAILURE_LINE = re.compile(
    r"^\s*(?:ERROR|FATAL|FAIL(?:ED|URE)?|MISMATCH)\b(?!s)(?!\s*[:=]?\s*0\b)|\bTESTS?\s+FAILED\b", re.I | re.M
)
#: The exit statuses of a command ``timeout -s KILL`` stopped.
KILLED_RC = (124, 137)


@dataclasses.dataclass(frozen=True)
class DesignRun:
    """The bench on one design: built, finished, and the line that failed it (if any)."""

    built: bool
    passed: bool
    why: str = ""


def bench_verdict(compile_rc: str, compile_log: str, sim_rc: str, sim_log: str) -> DesignRun:
    """What one design's run says (the return codes as the script wrote them)."""
    if compile_rc.strip() != "0":
        first = next((ln.strip() for ln in compile_log.splitlines() if ln.strip()), "does not compile")
        return DesignRun(False, False, first[:300])
    rc = sim_rc.strip()
    if rc in {str(c) for c in KILLED_RC}:
        return DesignRun(True, False, "did not finish in its time limit")
    found = _FAILURE_LINE.search(sim_log)
    if found:
        line = sim_log[sim_log.rfind("\n", 0, found.start()) + 1:].split("\n", 1)[0]
        return DesignRun(True, False, line.strip()[:300])
    if rc != "0":
        return DesignRun(True, False, f"the simulation exited with status {rc or '?'}")
    return DesignRun(True, True)
