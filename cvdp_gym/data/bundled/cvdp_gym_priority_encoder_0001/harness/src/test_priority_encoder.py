import random

import cocotb
from cocotb.triggers import Timer


def expected(req: int):
    if req == 0:
        return 0, 0
    return req.bit_length() - 1, 1


async def apply_and_check(dut, req, n):
    dut.req.value = req
    await Timer(1, unit="ns")
    exp_idx, exp_valid = expected(req)
    idx = int(dut.idx.value)
    valid = int(dut.valid.value)
    assert valid == exp_valid, f"N={n}: req={req:0{n}b} -> valid={valid}, expected {exp_valid}"
    assert idx == exp_idx, f"N={n}: req={req:0{n}b} -> idx={idx}, expected {exp_idx}"


@cocotb.test()
async def test_no_request(dut):
    """All-zero input gives idx=0 and valid=0."""
    n = int(dut.N.value)
    await apply_and_check(dut, 0, n)


@cocotb.test()
async def test_one_hot(dut):
    """Each single request, including req[0], is reported with valid high."""
    n = int(dut.N.value)
    for i in range(n):
        await apply_and_check(dut, 1 << i, n)


@cocotb.test()
async def test_multiple_requests(dut):
    """With several requests active the highest index wins (exhaustive for small N)."""
    n = int(dut.N.value)
    if n <= 8:
        stimulus = range(2**n)
    else:
        rng = random.Random(1234)
        stimulus = [rng.getrandbits(n) for _ in range(400)]
        stimulus += [(1 << n) - 1, 0b101, 1 | (1 << (n - 1))]
    for req in stimulus:
        await apply_and_check(dut, req, n)
