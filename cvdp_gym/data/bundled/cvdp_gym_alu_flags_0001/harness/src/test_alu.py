import random

import cocotb
from cocotb.triggers import Timer

NAMES = ["ADD", "SUB", "AND", "OR", "XOR", "SLL", "SRL", "SRA"]


def model(a, b, op, width):
    mask = (1 << width) - 1
    msb = 1 << (width - 1)
    shamt = b & (width - 1)
    carry = 0
    ovf = 0
    if op == 0:
        full = a + b
        res = full & mask
        carry = full >> width
        ovf = int((a & msb) == (b & msb) and (res & msb) != (a & msb))
    elif op == 1:
        res = (a - b) & mask
        carry = int(a < b)
        ovf = int((a & msb) != (b & msb) and (res & msb) != (a & msb))
    elif op == 2:
        res = a & b
    elif op == 3:
        res = a | b
    elif op == 4:
        res = a ^ b
    elif op == 5:
        res = (a << shamt) & mask
    elif op == 6:
        res = a >> shamt
    else:
        signed = a - (1 << width) if a & msb else a
        res = (signed >> shamt) & mask
    return res, int(res == 0), carry, ovf


async def check(dut, a, b, op, width):
    dut.a.value = a
    dut.b.value = b
    dut.op.value = op
    await Timer(1, unit="ns")
    exp = model(a, b, op, width)
    got = (int(dut.result.value), int(dut.zero.value), int(dut.carry.value), int(dut.overflow.value))
    assert got == exp, (
        f"WIDTH={width} {NAMES[op]} a={a:#x} b={b:#x}: (result, zero, carry, overflow)={got}, expected {exp}"
    )


@cocotb.test()
async def test_corner_cases(dut):
    """Every operation on boundary operands."""
    width = int(dut.WIDTH.value)
    mask = (1 << width) - 1
    msb = 1 << (width - 1)
    corners = [0, 1, msb - 1, msb, mask, mask - 1]
    for op in range(8):
        for a in corners:
            for b in corners + list(range(width)):
                await check(dut, a, b & mask, op, width)


@cocotb.test()
async def test_random(dut):
    """Random operands for every operation."""
    width = int(dut.WIDTH.value)
    rng = random.Random(31337 + width)
    for op in range(8):
        for _ in range(150):
            await check(dut, rng.getrandbits(width), rng.getrandbits(width), op, width)


@cocotb.test()
async def test_original_encodings(dut):
    """The four original operations keep their encodings 000-011."""
    width = int(dut.WIDTH.value)
    a, b = 0b1010 << (width - 4), 0b0110 << (width - 4)
    for op in range(4):
        await check(dut, a, b, op, width)
