"""Synthesis warnings by kind, from Yosys's own checks (``proc`` and ``check``).

Contract: ``count_warnings(log)`` reads what Yosys printed while it read, elaborated and
``proc``-essed a design and ran ``check`` on it, and returns a count per kind in
``WARNING_KINDS`` (every kind present, 0 where none): ``latch`` (one per signal a process
keeps as a latch), ``multiple_drivers``, ``combinational_loop`` (one per loop ``check``
reports), ``undriven`` (a wire used but driven by nothing), and ``other`` (any other Yosys
warning: an implicit declaration, a truncated constant, ...). Only whole lines are read,
and only by the prefixes Yosys writes; an identifier (which may come from the design) has
no spaces or line breaks, so it can never make such a line.

Both flows (ASIC and FPGA) run Yosys on a design, and both may report these.
"""

from __future__ import annotations

__all__ = ["WARNING_KINDS", "count_warnings"]

WARNING_KINDS = ("latch", "multiple_drivers", "combinational_loop", "undriven", "other")
#: ``proc_dlatch``'s line for each signal a process keeps as a latch (an info line, not a warning).
_LATCH = "Latch inferred for signal "
#: ``check``'s warnings, by the start of their text (after ``Warning: ``).
_CHECK_KINDS = (
    ("multiple conflicting drivers for ", "multiple_drivers"),
    ("found logic loop in module ", "combinational_loop"),
    ("Wire ", "undriven"),  # "Wire m.w is used but has no driver."
)
_WARNING = "Warning: "


def count_warnings(log: str) -> dict[str, int]:
    """Counts per kind (all of ``WARNING_KINDS``) in ``log``, Yosys's output from reading the design through ``check``."""
    counts = dict.fromkeys(WARNING_KINDS, 0)
    for line in log.splitlines():
        if line.startswith(_LATCH):
            counts["latch"] += 1
        elif line.startswith(_WARNING):
            text = line[len(_WARNING) :]
            kind = next((k for prefix, k in _CHECK_KINDS if text.startswith(prefix)), "other")
            if kind == "undriven" and not text.rstrip().endswith("is used but has no driver."):
                kind = "other"
            counts[kind] += 1
    return counts
