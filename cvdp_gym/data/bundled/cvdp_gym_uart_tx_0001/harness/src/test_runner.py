import os

import pytest
from cocotb_tools.runner import get_runner

verilog_sources = os.getenv("VERILOG_SOURCES").split()
toplevel_lang   = os.getenv("TOPLEVEL_LANG")
sim             = os.getenv("SIM", "icarus")
toplevel        = os.getenv("TOPLEVEL")
module          = os.getenv("MODULE")


def runner(hdl_toplevel: str, test_module: str, parameters: dict):
    runner = get_runner(sim)
    runner.build(
        sources=verilog_sources,
        hdl_toplevel=hdl_toplevel,
        parameters=parameters,
        always=True,
        clean=True,
        verbose=True,
        timescale=("1ns", "1ps"),
        log_file="build.log",
    )
    runner.test(hdl_toplevel=hdl_toplevel, test_module=test_module, waves=False)


@pytest.mark.parametrize("CLKS_PER_BIT", [3, 8])
def test_baud_gen(CLKS_PER_BIT):
    runner("baud_gen", "test_baud_gen", {"CLKS_PER_BIT": CLKS_PER_BIT})


@pytest.mark.parametrize("CLKS_PER_BIT, PARITY_EN", [(4, 0), (4, 1), (7, 0), (5, 1)])
def test_uart_tx(CLKS_PER_BIT, PARITY_EN):
    runner(toplevel, module, {"CLKS_PER_BIT": CLKS_PER_BIT, "PARITY_EN": PARITY_EN})
