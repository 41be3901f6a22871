"""The generated stimulus: one vector of every driven input per cycle, seeded.

Contract: ``make_stimulus(design, cycles, seed)`` is a pure function of its arguments (the
same vectors on every simulator and every run). Each cycle's vector holds every input but
the clocks (``Design.driven``), resets at their own levels. The schedule of a sequential
design (fractions of the cycles after the first reset; ``Stimulus`` records where each
phase starts):

1. **reset phase** (designs with resets): every reset asserted for ``reset_cycles`` cycles
   (long enough for a rising edge of the slowest clock); cycles from ``compare_from`` on
   are compared;
2. **corners** (at most an eighth): all zeros, all ones, walking ones across every input at
   once, and each input's boundaries (0, 1, max, max-1, the signed minimum and maximum);
3. **random**, to 15%: seeded values mixed with corners: per input and cycle, a boundary
   value (15%), the previous value (20%), or a uniform draw; single-bit inputs are biased
   towards 0 or 1 for stretches of 64 cycles;
4. **quiet run**, to 60% (``quiet_from`` to ``quiet_to``): every input held at one value,
   the resets deasserted: single-bit inputs at their quiet level (1 for names that enable,
   ``en``, ``ena``, ``start``, ``valid``...; 0 for names that stop or load, ``clr``,
   ``load``, ``hold``, ``stop``...; inverted for active-low names, ``clr_n``, ``nclr``; a
   seeded draw for other names), wider inputs at a seeded value. Phases 2 to 4 are one
   reset-free stretch of 60% of the cycles, the quiet run alone 45% (1,350 of the default
   3,000 cycles): a counter its inputs leave running counts through it, so a wrap 1,000
   counts deep is reached (random stretches that reset or clear every few dozen cycles
   never get there);
5. a **mid-run reset** at ``mid_reset`` (designs with resets): every reset re-asserted for
   ``reset_cycles`` cycles, then random values with single-reset pulses (1 in 32 cycles), so
   behaviour after a reset from any state is compared (a register the answer forgot to
   reset shows there). Without resets, the random phase continues.

A combinational design gets no reset phase and no quiet run: corners (at most a quarter),
then random values; every input is data.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from cvdp_gym.equivalence.ports import Design, Port, Reset

#: Chances per input and cycle in the random phase.
P_BOUNDARY, P_HOLD = 0.15, 0.20
#: Cycles between re-drawn biases of single-bit inputs; chance of a single-reset pulse
#: (after the mid-run reset only).
BIAS_STRETCH, P_RESET_PULSE = 64, 1 / 32
MAX_WALKING = 64
#: Where the phases of a sequential design end, as fractions of the cycles after the first
#: reset: corners, random, quiet run (then the mid-run reset).
CORNERS_END, RANDOM_END, QUIET_END = 1 / 8, 3 / 20, 3 / 5
#: Words in an input's name that say which level leaves a design running on its own:
#: stop words win over go words (``load_en``: 0).
_STOP_WORDS = frozenset((
    "clr", "clear", "sclr", "load", "ld", "set", "preset", "flush", "stop", "halt", "hold", "pause", "freeze",
    "dis", "disable", "init", "abort", "kill", "down", "dec", "reset", "rst", "srst",
))
_GO_WORDS = frozenset((
    "en", "ena", "enable", "ce", "start", "go", "run", "valid", "vld", "inc", "incr", "up", "tick", "step", "count", "cnt",
))
_ACTIVE_LOW = re.compile(r"(.+?)_(?:n|b|l|ni|bar)")


@dataclass(frozen=True)
class Stimulus:
    """Per-cycle input vectors and the cycles that matter to the comparison."""

    driven: tuple[Port, ...]
    vectors: tuple[tuple[int, ...], ...]  # vectors[cycle][i]: the value of driven[i]
    compare_from: int
    reset_cycles: int
    #: The quiet run's first cycle and the cycle after it; the mid-run reset's first cycle
    #: (-1: none in this schedule).
    quiet_from: int = -1
    quiet_to: int = -1
    mid_reset: int = -1

    @property
    def cycles(self) -> int:
        return len(self.vectors)

    @property
    def width(self) -> int:
        """Bits of one packed vector (at least 1: a design with no driven input still loads one)."""
        return max(1, sum(p.width for p in self.driven))

    def values(self, cycle: int) -> dict[str, int]:
        return {p.name: v for p, v in zip(self.driven, self.vectors[cycle], strict=True)}

    def packed(self, cycle: int) -> int:
        """The cycle's vector as ``{driven[0], driven[1], ...}`` (the first input in the top bits)."""
        word = 0
        for port, value in zip(self.driven, self.vectors[cycle], strict=True):
            word = (word << port.width) | value
        return word

    def hex_lines(self) -> str:
        """The vectors as ``$readmemh`` reads them, one per line."""
        digits = (self.width + 3) // 4
        return "".join(f"{self.packed(c):0{digits}x}\n" for c in range(self.cycles))


def make_stimulus(design: Design, cycles: int, seed: int) -> Stimulus:
    """The stimulus for ``cycles`` cycles of ``design`` (see the module docstring)."""
    rng = random.Random(seed)
    driven = design.driven
    resets = {r.name: r for r in design.resets}
    data = [p for p in driven if p.name not in resets]
    # A rising edge of clock j (j >= 1) comes every 2j+1 cycles (testbench.py's schedule).
    reset_cycles = (max(2, 2 * len(design.clocks)) if resets else 0)
    span = cycles - reset_cycles
    sequential = design.sequential
    corners_end = reset_cycles + int(span * CORNERS_END) if sequential else cycles // 4
    quiet_from = reset_cycles + int(span * RANDOM_END) if sequential else -1
    quiet_to = reset_cycles + int(span * QUIET_END) if sequential else -1
    middle = quiet_to if sequential and resets else -1
    quiet = {p.name: quiet_level(p, rng) for p in data} if sequential else {}
    values: dict[str, int] = {p.name: 0 for p in driven}
    vectors: list[tuple[int, ...]] = []
    corners = _corner_vectors(data)
    bias: dict[str, float] = {}
    pulse: dict[str, int] = {}
    for cycle in range(cycles):
        in_reset = cycle < reset_cycles or middle <= cycle < middle + reset_cycles
        corner_index = cycle - reset_cycles
        if quiet_from <= cycle < quiet_to:
            values.update(quiet)
        elif 0 <= corner_index < len(corners) and cycle < corners_end:
            values.update(corners[corner_index])
        else:
            if cycle % BIAS_STRETCH == 0:
                bias = {p.name: rng.choice((0.5, 0.5, 0.9, 0.1)) for p in data if p.width == 1}
            for port in data:
                values[port.name] = _draw(rng, port, values[port.name], bias.get(port.name, 0.5))
        if resets and not in_reset and cycle > middle >= 0 and rng.random() < P_RESET_PULSE:
            name = rng.choice(sorted(resets))
            pulse[name] = rng.choice((1, 2))
        for name, reset in resets.items():
            asserted = in_reset or pulse.get(name, 0) > 0
            values[name] = _level(reset, asserted)
            if pulse.get(name, 0) > 0:
                pulse[name] -= 1
        vectors.append(tuple(values[p.name] for p in driven))
    return Stimulus(driven, tuple(vectors), reset_cycles, reset_cycles, quiet_from, quiet_to, middle)


def quiet_level(port: Port, rng: random.Random) -> int:
    """The value an input holds in the quiet run: for one bit, the level its name says leaves
    the design running (1 for an enable, 0 for a clear or a load; inverted when the name marks
    it active low), else a seeded draw; a wider input holds a seeded value."""
    if port.width > 1:
        return rng.getrandbits(port.width)
    words, low = _name_words(port.name.lower())
    if words & _STOP_WORDS:
        return int(low)
    if words & _GO_WORDS or any(w.endswith(("ena", "enable")) for w in words):
        return int(not low)
    return rng.getrandbits(1)


def _name_words(name: str) -> tuple[set[str], bool]:
    """The words of an input's name and whether the name marks it active low (``clr_n``,
    ``en_b``, ``clrn``, ``nclr``)."""
    marked = _ACTIVE_LOW.fullmatch(name)
    if marked:
        name = marked.group(1)
    words = [w for w in re.split(r"[^a-z]+", name) if w]
    known = _STOP_WORDS | _GO_WORDS
    low = bool(marked)
    if words and words[-1] not in known and words[-1][:-1] in known and words[-1].endswith("n"):
        words[-1], low = words[-1][:-1], True
    elif words and words[0] not in known and words[0][1:] in known and words[0].startswith("n"):
        words[0], low = words[0][1:], True
    return set(words), low


def boundaries(width: int) -> tuple[int, ...]:
    """An input's corner values: 0, 1, all ones, all ones - 1, signed min and max."""
    top = (1 << width) - 1
    values = (0, 1, top, top - 1, 1 << (width - 1), (1 << (width - 1)) - 1)
    return tuple(dict.fromkeys(v & top for v in values))


def _level(reset: Reset, asserted: bool) -> int:
    return reset.asserted if asserted else 1 - reset.asserted


def _corner_vectors(data: list[Port]) -> list[dict[str, int]]:
    """All zeros, all ones, walking ones (every input at once), then each input's boundaries."""
    if not data:
        return []
    widest = min(max(p.width for p in data), MAX_WALKING)
    vectors = [{p.name: 0 for p in data}, {p.name: (1 << p.width) - 1 for p in data}]
    vectors += [{p.name: (1 << i) if i < p.width else 0 for p in data} for i in range(widest)]
    for port in data:
        for value in boundaries(port.width):
            vectors.append({**{p.name: 0 for p in data}, port.name: value})
    return vectors


def _draw(rng: random.Random, port: Port, previous: int, one_bias: float) -> int:
    if port.width == 1:
        return int(rng.random() < one_bias)
    roll = rng.random()
    if roll < P_BOUNDARY:
        return rng.choice(boundaries(port.width))
    if roll < P_BOUNDARY + P_HOLD:
        return previous
    return rng.getrandbits(port.width)
