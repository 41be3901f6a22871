import os

import pytest
from cocotb_tools.runner import get_runner

verilog_sources = os.getenv("VERILOG_SOURCES").split()
toplevel_lang   = os.getenv("TOPLEVEL_LANG")
sim             = os.getenv("SIM", "icarus")
toplevel        = os.getenv("TOPLEVEL")
module          = os.getenv("MODULE")


def runner(DATA_WIDTH: int = 8, DEPTH: int = 8):
    parameters = {"DATA_WIDTH": DATA_WIDTH, "DEPTH": DEPTH}
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


@pytest.mark.parametrize("DATA_WIDTH, DEPTH", [(8, 4), (16, 8), (4, 16)])
def test_sync_fifo(DATA_WIDTH, DEPTH):
    runner(DATA_WIDTH=DATA_WIDTH, DEPTH=DEPTH)
