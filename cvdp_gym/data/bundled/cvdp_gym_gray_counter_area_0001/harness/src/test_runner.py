import os

import pytest
from cocotb_tools.runner import get_runner

verilog_sources = os.getenv("VERILOG_SOURCES").split()
toplevel_lang   = os.getenv("TOPLEVEL_LANG")
sim             = os.getenv("SIM", "icarus")
toplevel        = os.getenv("TOPLEVEL")
module          = os.getenv("MODULE")


def runner(WIDTH: int = 8):
    runner = get_runner(sim)
    runner.build(
        sources=verilog_sources,
        hdl_toplevel=toplevel,
        parameters={"WIDTH": WIDTH},
        always=True,
        clean=True,
        verbose=True,
        timescale=("1ns", "1ps"),
        log_file="build.log",
    )
    runner.test(hdl_toplevel=toplevel, test_module=module, waves=False)


@pytest.mark.parametrize("WIDTH", [3, 8])
def test_gray_counter(WIDTH):
    runner(WIDTH=WIDTH)
