from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

import cocotb


async def setup(dut):
    """Start the clock, drive idle inputs and apply a two-cycle reset."""
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.wr_en.value = 0
    dut.rd_en.value = 0
    dut.wr_data.value = 0
    for _ in range(2):
        await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0


async def step(dut, wr_en=0, wr_data=0, rd_en=0):
    """Drive inputs at a falling edge and return at the next falling edge,
    after the rising edge that consumed them."""
    dut.wr_en.value = wr_en
    dut.wr_data.value = wr_data
    dut.rd_en.value = rd_en
    await FallingEdge(dut.clk)


def check_status(dut, exp_count, depth, where=""):
    count = int(dut.count.value)
    full = int(dut.full.value)
    empty = int(dut.empty.value)
    assert count == exp_count, f"{where}: count={count}, expected {exp_count}"
    assert full == int(exp_count == depth), f"{where}: full={full} with {exp_count}/{depth} entries"
    assert empty == int(exp_count == 0), f"{where}: empty={empty} with {exp_count}/{depth} entries"
