import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge


async def start(dut) -> int:
    """Start the clock, hold reset for two cycles; inputs change on falling edges."""
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.valid_i.value = 0
    dut.a_i.value = 0
    dut.b_i.value = 0
    for _ in range(2):
        await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    return int(dut.WIDTH.value)


async def step(dut, valid: int, a: int, b: int) -> tuple[int, int, int]:
    """Drive one cycle of inputs; the registered (sum_o, sat_o, valid_o) after the next edge."""
    dut.valid_i.value = valid
    dut.a_i.value = a
    dut.b_i.value = b
    await RisingEdge(dut.clk)
    await ReadOnly()
    outputs = (int(dut.sum_o.value), int(dut.sat_o.value), int(dut.valid_o.value))
    await FallingEdge(dut.clk)
    return outputs


def saturated(width: int, a: int, b: int) -> tuple[int, int]:
    top = (1 << width) - 1
    return (top, 1) if a + b > top else (a + b, 0)


@cocotb.test()
async def test_reset_clears_outputs(dut):
    """After reset every output is zero."""
    await start(dut)
    await ReadOnly()
    assert (int(dut.sum_o.value), int(dut.sat_o.value), int(dut.valid_o.value)) == (0, 0, 0)


@cocotb.test()
async def test_corners_and_random_sums(dut):
    """Sums that fit, the largest sum that fits, sums that overflow, and random pairs."""
    width = await start(dut)
    top = (1 << width) - 1
    pairs = [(0, 0), (1, 2), (top, 0), (top - 1, 1), (top, 1), (top, top), (1 << (width - 1), 1 << (width - 1))]
    rng = random.Random(width)
    pairs += [(rng.randrange(top + 1), rng.randrange(top + 1)) for _ in range(60)]
    for a, b in pairs:
        got = await step(dut, 1, a, b)
        want = (*saturated(width, a, b), 1)
        assert got == want, f"WIDTH={width}: {a} + {b} gave (sum, sat, valid) = {got}, expected {want}"


@cocotb.test()
async def test_outputs_hold_without_valid(dut):
    """sum_o and sat_o keep the last valid result; valid_o follows valid_i one cycle late."""
    width = await start(dut)
    top = (1 << width) - 1
    for a, b in ((top, 3), (2, 3)):
        await step(dut, 1, a, b)
        held = (*saturated(width, a, b), 0)
        for _ in range(3):
            got = await step(dut, 0, 1, 1)
            assert got == held, f"WIDTH={width}: outputs {got} while valid_i is low, expected {held}"
