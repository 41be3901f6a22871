import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge


def gray(value: int) -> int:
    return value ^ (value >> 1)


async def check(dut, width: int, count: int) -> None:
    await ReadOnly()
    got = (int(dut.bin_o.value), int(dut.gray_o.value))
    want = (count, gray(count))
    assert got == want, f"WIDTH={width}: (bin_o, gray_o) = {got}, expected {want}"
    await FallingEdge(dut.clk)


@cocotb.test()
async def test_counts_wraps_and_holds(dut):
    """Count with en, hold without it, wrap at 2^WIDTH, and reset in the middle."""
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    width = int(dut.WIDTH.value)
    dut.rst.value = 1
    dut.en.value = 0
    await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    count = 0
    await check(dut, width, count)
    rng = random.Random(width)
    for cycle in range(2 ** width + 40):
        enable = 1 if cycle < 2 ** width + 5 else rng.randrange(2)
        reset = 1 if cycle == 2 ** width + 20 else 0
        dut.en.value = enable
        dut.rst.value = reset
        await RisingEdge(dut.clk)
        count = 0 if reset else (count + enable) % (2 ** width)
        await check(dut, width, count)
