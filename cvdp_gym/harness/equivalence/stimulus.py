"""The generated stimulus: one vector of every driven input per cycle, seeded.

Contract: ``make_stimulus(design, cycles, seed)`` is a pure function of its arguments (the
same vectors on every simulator and every run). Each cycle's vector holds every input but
the clocks (``Design.driven``), resets at their own levels. The schedule:

1. **reset phase** (sequential designs with resets): every reset asserted for
   ``reset_cycles`` cycles (long enough for a rising edge of the slowest clock); cycles from
   ``compare_from`` on are compared;
2. **corners**: all zeros, all ones, walking ones across every input at once, and each
   input's boundaries (0, 1, max, max-1, the signed minimum and maximum);
3. **random**: seeded values mixed with corners: per input and cycle, a boundary value
   (15%), the previous value (20%: long stretches let counters and sequences advance), or a
   uniform draw; single-bit inputs are biased towards 0 or 1 for stretches of 64 cycles, so
   enables stay on and a counter reaches its wrap;
4. a **mid-run reset**: every reset re-asserted for ``reset_cycles`` cycles halfway, then
   single-reset pulses at random (1 in 32 cycles), so behaviour after a reset from any
   state is compared (a register the answer forgot to reset shows there); the first half
   has no reset after the first, so deep states (a counter's wrap) are reached.

Resets stay deasserted otherwise. A combinational design gets no reset phase: every input
is data.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from cvdp_gym.harness.equivalence.ports import Design, Port, Reset

#: Chances per input and cycle in the random phase.
P_BOUNDARY, P_HOLD = 0.15, 0.20
#: Cycles between re-drawn biases of single-bit inputs; chance of a single-reset pulse
#: (second half only: the first half runs deep, with no reset after the first).
BIAS_STRETCH, P_RESET_PULSE = 64, 1 / 32
MAX_WALKING = 64


@dataclass(frozen=True)
class Stimulus:
    """Per-cycle input vectors and the cycles that matter to the comparison."""

    driven: tuple[Port, ...]
    vectors: tuple[tuple[int, ...], ...]  # vectors[cycle][i]: the value of driven[i]
    compare_from: int
    reset_cycles: int

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
    values: dict[str, int] = {p.name: 0 for p in driven}
    vectors: list[tuple[int, ...]] = []
    corners = _corner_vectors(data)
    middle = reset_cycles + (cycles - reset_cycles) // 2 if resets else -1
    bias: dict[str, float] = {}
    pulse: dict[str, int] = {}
    for cycle in range(cycles):
        in_reset = cycle < reset_cycles or middle <= cycle < middle + reset_cycles
        corner_index = cycle - reset_cycles
        if 0 <= corner_index < len(corners) and corner_index < cycles // 4:
            values.update(corners[corner_index])
        else:
            if cycle % BIAS_STRETCH == 0:
                bias = {p.name: rng.choice((0.5, 0.5, 0.9, 0.1)) for p in data if p.width == 1}
            for port in data:
                values[port.name] = _draw(rng, port, values[port.name], bias.get(port.name, 0.5))
        if resets and not in_reset and cycle > middle and rng.random() < P_RESET_PULSE:
            name = rng.choice(sorted(resets))
            pulse[name] = rng.choice((1, 2))
        for name, reset in resets.items():
            asserted = in_reset or pulse.get(name, 0) > 0
            values[name] = _level(reset, asserted)
            if pulse.get(name, 0) > 0:
                pulse[name] -= 1
        vectors.append(tuple(values[p.name] for p in driven))
    return Stimulus(driven, tuple(vectors), reset_cycles, reset_cycles)


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
