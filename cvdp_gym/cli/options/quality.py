"""Whether and how passing answers' design quality is measured (area, timing, power, warnings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from cvdp_gym.grading.quality import QualitySettings


@dataclass(frozen=True)
class QualityOptions:
    """``--quality``, ``--liberty``, ``--clock-ns``, ``--fpga-device``, ``--fpga-package``."""

    quality: Annotated[str | None, typer.Option(help="Measure every passing answer's design against its reference: asic (Yosys + ABC to --liberty, OpenSTA timing and power) or fpga (Yosys synth_ice40 + nextpnr-ice40). Off by default.")] = None
    liberty: Annotated[str, typer.Option(help="The ASIC flow's standard-cell library: nangate45 or sky130hd (fetched with `cvdp-gym quality fetch NAME`) or a .lib/.lib.gz path.")] = "nangate45"
    clock_ns: Annotated[float, typer.Option(help="The clock period every design is timed at, in ns (the FPGA flow asks nextpnr for 1000/clock-ns MHz).")] = 10.0
    fpga_device: Annotated[str, typer.Option(help="nextpnr-ice40's device (hx8k, up5k, ...).")] = "hx8k"
    fpga_package: Annotated[str, typer.Option(help="nextpnr-ice40's package for --fpga-device.")] = "ct256"

    def settings(self, reward: str = "shaped") -> QualitySettings | None:
        """The quality settings these options name (None: quality off; the ``quality`` reward
        turns the ASIC flow on); a bad value is a ``ConfigError``."""
        from cvdp_gym.grading.quality import QualitySettings

        if self.quality is None and reward != "quality":
            return None
        return QualitySettings(
            flow=self.quality or "asic", liberty=self.liberty, clock_ns=self.clock_ns, device=self.fpga_device,
            package=self.fpga_package,
        )
