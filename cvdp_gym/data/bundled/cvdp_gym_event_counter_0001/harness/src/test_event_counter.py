import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge, Timer


async def reset_dut(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    dut.en.value = 0
    dut.dir.value = 1
    dut.load.value = 0
    dut.load_val.value = 0
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0


def model_step(count, rst, load, load_val, en, direction):
    """Return (wrap before the edge, count after the edge)."""
    wrap = int(not rst and not load and en and ((direction and count == 255) or (not direction and count == 0)))
    if rst:
        nxt = 0
    elif load:
        nxt = load_val
    elif en:
        nxt = (count + (1 if direction else -1)) & 0xFF
    else:
        nxt = count
    return wrap, nxt


async def cycle(dut, count, rst=0, load=0, load_val=0, en=0, direction=1, where=""):
    dut.rst.value = rst
    dut.load.value = load
    dut.load_val.value = load_val
    dut.en.value = en
    dut.dir.value = direction
    await Timer(1, unit="ns")
    exp_wrap, nxt = model_step(count, rst, load, load_val, en, direction)
    got_wrap = int(dut.wrap.value)
    assert got_wrap == exp_wrap, (
        f"{where}: count={count} rst={rst} load={load} en={en} dir={direction}: wrap={got_wrap}, expected {exp_wrap}"
    )
    await FallingEdge(dut.clk)
    got = int(dut.count.value)
    assert got == nxt, (
        f"{where}: count={count} rst={rst} load={load} load_val={load_val} en={en} dir={direction}: "
        f"next count={got}, expected {nxt}"
    )
    return nxt


@cocotb.test()
async def test_up_down(dut):
    """Count up, hold, count down; original behaviour is preserved for dir=1."""
    await reset_dut(dut)
    assert int(dut.count.value) == 0, "count must be 0 after reset"
    count = 0
    for i in range(5):
        count = await cycle(dut, count, en=1, direction=1, where=f"up {i}")
    for i in range(3):
        count = await cycle(dut, count, en=0, direction=i % 2, where=f"hold {i}")
    for i in range(7):
        count = await cycle(dut, count, en=1, direction=0, where=f"down {i}")
    assert count == 254, f"model drifted: {count}"


@cocotb.test()
async def test_load_priority(dut):
    """load beats en, rst beats load."""
    await reset_dut(dut)
    count = 0
    count = await cycle(dut, count, load=1, load_val=0x80, en=1, direction=1, where="load with en")
    count = await cycle(dut, count, load=1, load_val=0x11, en=0, where="load without en")
    count = await cycle(dut, count, rst=1, load=1, load_val=0x22, en=1, where="rst with load")
    count = await cycle(dut, count, load=1, load_val=0xFE, en=1, direction=0, where="load while counting down")


@cocotb.test()
async def test_wrap(dut):
    """wrap is high for exactly the cycle before a wrap in either direction."""
    await reset_dut(dut)
    count = await cycle(dut, 0, load=1, load_val=0xFD, where="preload")
    for i in range(4):
        count = await cycle(dut, count, en=1, direction=1, where=f"wrap up {i}")
    assert count == 1
    count = await cycle(dut, count, load=1, load_val=0xFF, en=1, where="load at 255 must not flag wrap")
    count = await cycle(dut, count, en=0, direction=1, where="disabled at 255")
    for i in range(3):
        count = await cycle(dut, count, en=1, direction=0, where=f"down from 255 {i}")
    count = await cycle(dut, count, load=1, load_val=0x01, where="preload 1")
    for i in range(3):
        count = await cycle(dut, count, en=1, direction=0, where=f"wrap down {i}")
    assert count == 0xFE


@cocotb.test()
async def test_random(dut):
    """Random control sequence against the reference model."""
    await reset_dut(dut)
    rng = random.Random(4242)
    count = 0
    for i in range(250):
        count = await cycle(
            dut,
            count,
            rst=int(rng.random() < 0.02),
            load=int(rng.random() < 0.1),
            load_val=rng.choice([0, 1, 254, 255, rng.getrandbits(8)]),
            en=int(rng.random() < 0.8),
            direction=int(rng.random() < 0.5),
            where=f"random {i}",
        )
