"""The few liberty cells the ASIC flow names itself: tie cells, a buffer and a plain latch.

Contract: ``library_cells(text)`` scans a liberty's text (no full parse: the ``cell``
groups, their ``area``, pins, ``function`` and ``latch`` groups) and returns a
``LibraryCells``: ``tie_high`` and ``tie_low`` (``"CELL PIN"`` for Yosys ``hilomap``),
``buffer`` (``"CELL IN OUT"`` for Yosys ``insbuf``: one input, one output equal to it) and
``latch`` (a latch with a positive enable and no clear or preset, as ``LatchCell``), each
``None`` where the liberty has none. The smallest cell wins, then the first by name, so the
choice is the same every run. Cells marked ``dont_use`` are skipped, but for tie cells:
Nangate45 marks its only ones so (for placement), and OpenROAD's flow maps to them anyway.

Why: Yosys 0.40's ``dfflibmap`` maps flip-flops but not latches, and leaves constants and
wires joined to ports as assignments, which OpenSTA 2019's netlist reader refuses; the flow
maps them to these cells (as OpenROAD's flow does), so a design with a latch, a constant
output or a port wired straight through is still measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LatchCell", "LibraryCells", "library_cells"]


@dataclass(frozen=True)
class LatchCell:
    """A latch cell: ``enable`` and ``data`` (its input pins), ``output`` (its Q pin)."""

    name: str
    enable: str
    data: str
    output: str


@dataclass(frozen=True)
class LibraryCells:
    tie_high: str | None = None
    tie_low: str | None = None
    latch: LatchCell | None = None
    buffer: str | None = None


_CELL = re.compile(r"\bcell\s*\(\s*\"?([A-Za-z0-9_]+)\"?\s*\)")
_PIN = re.compile(r"\bpin\s*\(\s*\"?([A-Za-z0-9_]+)\"?\s*\)\s*\{([^{}]*)")
_AREA = re.compile(r"\barea\s*:\s*\"?([0-9.eE+-]+)")
_INPUT = re.compile(r"direction\s*:\s*\"?input\b")
_FUNCTION = re.compile(r"function\s*:\s*\"\s*\(?\s*([A-Za-z0-9_]+)\s*\)?\s*\"")
_LATCH = re.compile(r"\blatch\s*\(\s*\"?(\w+)\"?\s*,\s*\"?\w+\"?\s*\)\s*\{([^{}]*)\}")
_ATTRIBUTE = r"\b{}\s*:\s*\"\s*([A-Za-z0-9_]+)\s*\""


def library_cells(text: str) -> LibraryCells:
    """The tie cells and the plain latch of the liberty ``text`` (see the module docstring)."""
    starts = [(m.start(), m.group(1)) for m in _CELL.finditer(text)]
    high: list[tuple[float, str]] = []
    low: list[tuple[float, str]] = []
    latches: list[tuple[float, str, LatchCell]] = []
    buffers: list[tuple[float, str]] = []
    ends = [start for start, _ in starts[1:]] + [len(text)]
    for (start, name), end in zip(starts, ends[: len(starts)], strict=True):
        body = text[start:end]
        dont_use = bool(re.search(r"\bdont_use\s*:\s*true", body))
        area_match = _AREA.search(body)
        area = float(area_match.group(1)) if area_match else 0.0
        pins = _PIN.findall(body)
        outputs = {pin: match.group(1) for pin, attrs in pins if not _INPUT.search(attrs) and (match := _FUNCTION.search(attrs))}
        inputs = [pin for pin, attrs in pins if _INPUT.search(attrs)]
        if not dont_use and len(inputs) == 1 and len(pins) == 2 and list(outputs.values()) == inputs:
            buffers.append((area, f"{name} {inputs[0]} {next(iter(outputs))}"))
        if not inputs:
            for pin, function in outputs.items():
                if function in ("0", "1"):
                    (high if function == "1" else low).append((area, f"{name} {pin}"))
        latch = _LATCH.search(body)
        if latch and not dont_use:
            state, attrs = latch.groups()
            enable = re.search(_ATTRIBUTE.format("enable"), attrs)
            data = re.search(_ATTRIBUTE.format("data_in"), attrs)
            q = [pin for pin, function in outputs.items() if function == state]
            if enable and data and q and not re.search(r"\b(clear|preset)\s*:", attrs):
                latches.append((area, name, LatchCell(name, enable.group(1), data.group(1), q[0])))
    return LibraryCells(
        tie_high=min(high)[1] if high else None,
        tie_low=min(low)[1] if low else None,
        latch=min(latches, key=lambda item: item[:2])[2] if latches else None,
        buffer=min(buffers)[1] if buffers else None,
    )
