"""The reference grader's settings, read from ``Problem.extra["equivalence"]``, and its seed.

Contract: ``read_settings(extra)`` turns the dataset spec's options (strings or numbers:
``mode``, ``cycles``, ``depth``, ``min_depth``, ``x``, ``simulator``, ``formal_timeout``,
``seed``) into a ``Settings`` with every value checked, or raises ``ConfigError`` naming the
bad one (the flow turns that into a labelled failure, never a crash). ``min_depth`` may not
exceed ``depth``: a bound that could never count is a mistake in the spec, not a grader
that silently stops trusting its formal stage. The stimulus's seed is derived from the
problem id, the cycle count and the ``seed`` option by ``cvdp_gym.seeds.stimulus_seed``
(where every seed of the project is drawn), so the same answer under the same settings
always sees the same stimulus (cacheable), on either simulator, in every mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cvdp_gym.errors import ConfigError

#: Our modes, then the two published recipes re-implemented (``recipes.py``), to compare.
MODES = ("both", "simulation", "formal", "codev-r1", "verithoughts")
X_RULES = ("dontcare", "strict")
SIMULATORS = ("icarus", "verilator")
#: Bounds on what one answer may cost (a spec typo must not start a day-long run).
MAX_CYCLES = 5_000_000
MAX_DEPTH = 1000
MAX_FORMAL_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class Settings:
    """How the reference grader judges an answer (API29's ``extra["equivalence"]``)."""

    mode: str = "both"
    #: Simulated clock cycles (combinational designs: input vectors): long enough for the
    #: stimulus's quiet run (45% of them) to wrap a counter 1,000 deep, with 1,650 random
    #: cycles besides (2,000 before the quiet run was added).
    cycles: int = 3000
    #: Steps of the bounded formal check after the reset.
    depth: int = 20
    #: The shallowest ``bounded`` result that counts (sequential designs): a check the time
    #: limit ended before it is ``undecided``. The default is the default depth: a bound cut
    #: short counts for nothing unless asked (measured: FIFOs wrong at cycles 32 and 186
    #: passed a formal stage the time limit ended at 11 of 20 steps).
    min_depth: int = 20
    #: ``dontcare``: an X in the reference's output matches anything; ``strict``: X must match X.
    x: str = "dontcare"
    simulator: str = "icarus"
    formal_timeout: float = 20.0
    seed: int = 0

    @property
    def simulates(self) -> bool:
        return self.mode in ("both", "simulation", "codev-r1")

    @property
    def proves(self) -> bool:
        return self.mode in ("both", "formal", "verithoughts")

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode, "cycles": self.cycles, "depth": self.depth, "min_depth": self.min_depth, "x": self.x,
            "simulator": self.simulator, "formal_timeout": self.formal_timeout, "seed": self.seed,
        }


def read_settings(extra: Mapping[str, Any] | None) -> Settings:
    """``Settings`` from a problem's ``extra`` (its ``equivalence`` dict); ``ConfigError`` on a bad value."""
    options = (extra or {}).get("equivalence") or {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"extra['equivalence'] must be a mapping of settings, not {type(options).__name__}")
    unknown = sorted(set(options) - set(Settings().as_dict()))
    if unknown:
        raise ConfigError(f"unknown equivalence setting(s): {', '.join(map(str, unknown))}")
    defaults = Settings()
    depth = _number(options, "depth", int, defaults.depth, 1, MAX_DEPTH)
    min_depth = _number(options, "min_depth", int, defaults.min_depth, 1, MAX_DEPTH)
    if min_depth > depth:
        raise ConfigError(
            f"equivalence setting min_depth={min_depth} is deeper than depth={depth}: no bound could count "
            f"(set min_depth={depth} too to accept bounds of {depth} steps)"
        )
    return Settings(
        mode=_choice(options, "mode", MODES, defaults.mode),
        cycles=_number(options, "cycles", int, defaults.cycles, 1, MAX_CYCLES),
        depth=depth,
        min_depth=min_depth,
        x=_choice(options, "x", X_RULES, defaults.x),
        simulator=_choice(options, "simulator", SIMULATORS, defaults.simulator),
        formal_timeout=_number(options, "formal_timeout", float, defaults.formal_timeout, 1.0, MAX_FORMAL_TIMEOUT_S),
        seed=_number(options, "seed", int, defaults.seed, 0, 2**63 - 1),
    )


def _choice(options: Mapping[str, Any], key: str, allowed: tuple[str, ...], default: str) -> str:
    value = str(options.get(key, default)).strip().lower()
    if value not in allowed:
        raise ConfigError(f"equivalence setting {key}={options.get(key)!r}: expected one of {', '.join(allowed)}")
    return value


def _number(options: Mapping[str, Any], key: str, kind: type, default: Any, low: float, high: float) -> Any:
    raw = options.get(key, default)
    try:
        value = kind(float(raw)) if kind is int and isinstance(raw, str) and "." in raw else kind(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"equivalence setting {key}={raw!r}: expected a number") from None
    if isinstance(raw, bool) or not low <= value <= high:
        raise ConfigError(f"equivalence setting {key}={raw!r}: expected {low:g} to {high:g}")
    return value
