import os

import pytest
from cocotb_tools.runner import get_runner

verilog_sources = os.getenv("VERILOG_SOURCES").split()
toplevel_lang   = os.getenv("TOPLEVEL_LANG")
sim             = os.getenv("SIM", "icarus")
toplevel        = os.getenv("TOPLEVEL")
module          = os.getenv("MODULE")


def runner(POLY: int = 0x07, INIT: int = 0x00):
    parameters = {"POLY": POLY, "INIT": INIT}
    runner = get_runner(sim)
    runner.build(
        sources=verilog_sources,
        hdl_toplevel=toplevel,
        parameters=parameters,
        always=True,
        clean=True,
        verbose=True,
        timescale=("1ns", "1ps"),
        log_file="build.log",
    )
    runner.test(hdl_toplevel=toplevel, test_module=module, waves=False)


@pytest.mark.parametrize("POLY, INIT", [(0x07, 0x00), (0x1D, 0xFF), (0x31, 0x00), (0x9B, 0x5A)])
def test_crc8(POLY, INIT):
    runner(POLY=POLY, INIT=INIT)
