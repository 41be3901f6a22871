import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge, Timer


async def reset_dut(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.sig_in.value = 0
    dut.rst_n.value = 0
    await Timer(12, unit="ns")
    await FallingEdge(dut.clk)
    dut.rst_n.value = 1


def check(dut, rise, fall, where):
    r = int(dut.rise_pulse.value)
    f = int(dut.fall_pulse.value)
    a = int(dut.any_edge.value)
    assert r == rise, f"{where}: rise_pulse={r}, expected {rise}"
    assert f == fall, f"{where}: fall_pulse={f}, expected {fall}"
    assert a == (rise | fall), f"{where}: any_edge={a}, expected {rise | fall}"


@cocotb.test()
async def test_reset_values(dut):
    """Outputs are low while and right after reset."""
    await reset_dut(dut)
    check(dut, 0, 0, "after reset")
    await FallingEdge(dut.clk)
    check(dut, 0, 0, "one idle cycle after reset")


@cocotb.test()
async def test_single_pulses(dut):
    """A rising then a falling transition each give exactly one one-cycle pulse."""
    await reset_dut(dut)
    await FallingEdge(dut.clk)
    dut.sig_in.value = 1
    await FallingEdge(dut.clk)
    check(dut, 1, 0, "cycle after rising transition")
    for i in range(3):
        await FallingEdge(dut.clk)
        check(dut, 0, 0, f"sig_in held high, cycle {i}")
    dut.sig_in.value = 0
    await FallingEdge(dut.clk)
    check(dut, 0, 1, "cycle after falling transition")
    await FallingEdge(dut.clk)
    check(dut, 0, 0, "sig_in held low")


@cocotb.test()
async def test_random_sequence(dut):
    """Random sig_in sequence checked cycle by cycle against a reference model."""
    await reset_dut(dut)
    rng = random.Random(7)
    prev = 0
    for cycle in range(200):
        cur = rng.randint(0, 1)
        dut.sig_in.value = cur
        await FallingEdge(dut.clk)
        check(dut, cur & (1 - prev), (1 - cur) & prev, f"cycle {cycle} (sig_in {prev}->{cur})")
        prev = cur


@cocotb.test()
async def test_async_reset(dut):
    """Asserting rst_n between clock edges clears a pending pulse immediately."""
    await reset_dut(dut)
    await FallingEdge(dut.clk)
    dut.sig_in.value = 1
    await FallingEdge(dut.clk)
    check(dut, 1, 0, "pulse before reset")
    dut.rst_n.value = 0
    await Timer(1, unit="ns")
    check(dut, 0, 0, "1 ns after rst_n asserted, no clock edge yet")
    await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    check(dut, 0, 0, "clocked while in reset")
    dut.rst_n.value = 1
    # sig_d was cleared, so the still-high sig_in is reported as a new rising edge.
    await FallingEdge(dut.clk)
    check(dut, 1, 0, "first edge after reset release with sig_in high")
    await FallingEdge(dut.clk)
    check(dut, 0, 0, "second edge after reset release")
