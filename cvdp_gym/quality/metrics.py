"""What one design measures on each flow: the numbers every other quality module speaks."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

__all__ = ["AsicMetrics", "FpgaMetrics", "Measurement"]


@dataclass(frozen=True)
class AsicMetrics:
    """One design mapped to a standard-cell liberty (Yosys + ABC) and timed (OpenSTA).

    ``area_um2``: total cell area as the liberty gives it (µm² for the pinned libraries);
    ``cells``: mapped cell count; ``delay_ns``: the worst register-to-register, input-to-register
    or register-to-output path at ``clock_ns`` (OpenSTA ``report_checks``), ``slack_ns`` its slack;
    ``power_uw``: total power and ``power_kind`` what it counts (for example
    ``"vectorless (OpenSTA default activity)"`` or ``"leakage only"``); ``warnings``: synthesis
    warnings by kind (``latch``, ``multiple_drivers``, ``combinational_loop``, ``undriven``, ...).
    ``None`` where a number could not be measured (say why in ``notes``).
    """

    liberty: str
    clock_ns: float
    area_um2: float
    cells: int
    delay_ns: float | None = None
    slack_ns: float | None = None
    power_uw: float | None = None
    power_kind: str = ""
    warnings: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class FpgaMetrics:
    """One design on an FPGA (Yosys ``synth_ice40`` + nextpnr-ice40): resources and clock.

    ``luts``: logic cells used as LUTs (``SB_LUT4``), ``ffs``: flip-flops (``SB_DFF*``),
    ``ram_blocks``: ``SB_RAM40_4K``, ``dsp_blocks``: ``SB_MAC16``, ``carry``: ``SB_CARRY``;
    ``fmax_mhz``: the maximum frequency nextpnr reports after place and route (``None`` for a
    design with no clocked path, or when place and route did not run: ``notes`` says why).
    """

    device: str
    luts: int
    ffs: int
    ram_blocks: int = 0
    dsp_blocks: int = 0
    carry: int = 0
    fmax_mhz: float | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Measurement:
    """What a flow made of one design: its metrics, or ``failure`` (one line: why not).

    ``limited``: a time or memory limit stopped a tool, so another run may finish: such a
    failure says nothing lasting about the design and is never cached (as the grader keeps
    no verdict of a run cut short)."""

    flow: str  # "asic" or "fpga"
    metrics: AsicMetrics | FpgaMetrics | None = None
    failure: str | None = None
    seconds: float = 0.0
    limited: bool = False

    @property
    def ok(self) -> bool:
        return self.metrics is not None and self.failure is None

    def to_dict(self) -> dict:
        metrics = self.metrics.to_dict() if self.metrics is not None else None
        return {"flow": self.flow, "metrics": metrics, "failure": self.failure, "seconds": self.seconds, "limited": self.limited}

    @classmethod
    def from_dict(cls, data: dict) -> Measurement:
        """The measurement ``to_dict`` wrote (a cache entry, a result file)."""
        raw = data.get("metrics")
        metrics: AsicMetrics | FpgaMetrics | None = None
        if raw is not None:
            kind = AsicMetrics if data["flow"] == "asic" else FpgaMetrics
            known = {k: v for k, v in raw.items() if k in kind.__dataclass_fields__}
            metrics = kind(**{**known, "notes": tuple(known.get("notes", ()))})
        return cls(data["flow"], metrics, data.get("failure"), float(data.get("seconds", 0.0)), bool(data.get("limited")))
