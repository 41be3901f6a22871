import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge, Timer


async def reset_dut(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.en.value = 0
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0


@cocotb.test()
async def test_steady_enable(dut):
    """With en held high, tick is high in cycles CLKS_PER_BIT, 2*CLKS_PER_BIT, ..."""
    cpb = int(dut.CLKS_PER_BIT.value)
    await reset_dut(dut)
    dut.en.value = 1
    for cycle in range(1, 5 * cpb + 1):
        await Timer(1, unit="ns")
        exp = int(cycle % cpb == 0)
        got = int(dut.tick.value)
        assert got == exp, f"CLKS_PER_BIT={cpb}: enabled cycle {cycle}: tick={got}, expected {exp}"
        await FallingEdge(dut.clk)


@cocotb.test()
async def test_random_enable(dut):
    """tick matches a cycle-accurate model while en toggles randomly."""
    cpb = int(dut.CLKS_PER_BIT.value)
    await reset_dut(dut)
    rng = random.Random(99)
    cnt = 0
    en = 0
    for cycle in range(300):
        if rng.random() < (0.05 if en else 0.3):
            en = 1 - en
        dut.en.value = en
        await Timer(1, unit="ns")
        exp = int(en == 1 and cnt == cpb - 1)
        got = int(dut.tick.value)
        assert got == exp, f"cycle {cycle}: en={en} counter={cnt}: tick={got}, expected {exp}"
        await FallingEdge(dut.clk)
        # Model of the rising edge that has just happened.
        cnt = 0 if (not en or cnt == cpb - 1) else cnt + 1
