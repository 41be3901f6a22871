import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge


def next_crc(c, d, poly):
    x = c ^ d
    for _ in range(8):
        x = ((x << 1) ^ poly) & 0xFF if x & 0x80 else (x << 1) & 0xFF
    return x


def crc_of(msg, poly, init):
    c = init
    for b in msg:
        c = next_crc(c, b, poly)
    return c


async def setup(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.start.value = 0
    dut.data_valid.value = 0
    dut.data_in.value = 0
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    return int(dut.POLY.value), int(dut.INIT.value)


async def drive(dut, start, valid, data=0):
    dut.start.value = start
    dut.data_valid.value = valid
    dut.data_in.value = data
    await FallingEdge(dut.clk)


async def send(dut, msg, start_with_first, gaps=None):
    if not start_with_first:
        await drive(dut, 1, 0)
    for i, b in enumerate(msg):
        if gaps and i in gaps:
            await drive(dut, 0, 0, 0xA5)
        await drive(dut, int(start_with_first and i == 0), 1, b)
    await drive(dut, 0, 0)


@cocotb.test()
async def test_reset_value(dut):
    """After reset the CRC register holds INIT."""
    poly, init = await setup(dut)
    got = int(dut.crc.value)
    assert got == init, f"crc={got:#04x} after reset, expected INIT={init:#04x}"


@cocotb.test()
async def test_check_string(dut):
    """CRC of "123456789", with start before and together with the first byte."""
    poly, init = await setup(dut)
    msg = b"123456789"
    exp = crc_of(msg, poly, init)
    if (poly, init) == (0x07, 0x00):
        assert exp == 0xF4
    for start_with_first in (False, True):
        await send(dut, msg, start_with_first)
        got = int(dut.crc.value)
        assert got == exp, (
            f"POLY={poly:#04x} INIT={init:#04x} start {'with' if start_with_first else 'before'} "
            f"first byte: crc={got:#04x}, expected {exp:#04x}"
        )


@cocotb.test()
async def test_single_bytes(dut):
    """Every single-byte message, started together with its byte."""
    poly, init = await setup(dut)
    for b in range(256):
        await drive(dut, 1, 1, b)
        got = int(dut.crc.value)
        exp = next_crc(init, b, poly)
        assert got == exp, f"POLY={poly:#04x} INIT={init:#04x} byte {b:#04x}: crc={got:#04x}, expected {exp:#04x}"


@cocotb.test()
async def test_random_messages_with_gaps(dut):
    """Random messages with idle cycles inside; start and data_valid used both ways."""
    poly, init = await setup(dut)
    rng = random.Random(8)
    for m in range(12):
        msg = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 12)))
        gaps = {i for i in range(len(msg)) if rng.random() < 0.3}
        await send(dut, msg, bool(m % 2), gaps)
        got = int(dut.crc.value)
        exp = crc_of(msg, poly, init)
        assert got == exp, f"message {m} {msg.hex()}: crc={got:#04x}, expected {exp:#04x}"
        # The value holds while idle.
        await drive(dut, 0, 0, 0xFF)
        assert int(dut.crc.value) == exp, "crc changed while data_valid was low"
