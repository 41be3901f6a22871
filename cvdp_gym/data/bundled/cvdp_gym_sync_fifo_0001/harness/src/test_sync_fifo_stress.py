import random

import cocotb
from fifo_helpers import check_status, setup, step


@cocotb.test()
async def test_random_traffic(dut):
    """Constrained-random reads and writes checked cycle by cycle against a model."""
    depth = int(dut.DEPTH.value)
    width = int(dut.DATA_WIDTH.value)
    rng = random.Random(20240611 + depth)
    await setup(dut)
    model = []
    last = 0
    for cycle in range(400):
        # Bias towards writes in the first half and reads in the second half.
        p_wr = 0.7 if (cycle // 50) % 2 == 0 else 0.3
        wr = int(rng.random() < p_wr)
        rd = int(rng.random() < 1.0 - p_wr)
        data = rng.getrandbits(width)
        can_wr = len(model) < depth
        can_rd = len(model) > 0
        await step(dut, wr_en=wr, wr_data=data, rd_en=rd)
        if rd and can_rd:
            last = model.pop(0)
        if wr and can_wr:
            model.append(data)
        got = int(dut.rd_data.value)
        assert got == last, f"cycle {cycle}: rd_data={got:#x}, expected {last:#x}"
        check_status(dut, len(model), depth, f"cycle {cycle}")


@cocotb.test()
async def test_reset_mid_stream(dut):
    """A reset while the FIFO holds data empties it."""
    depth = int(dut.DEPTH.value)
    await setup(dut)
    for i in range(depth):
        await step(dut, wr_en=1, wr_data=i + 1)
    check_status(dut, depth, depth, "before reset")
    dut.rst.value = 1
    await step(dut)
    dut.rst.value = 0
    check_status(dut, 0, depth, "after mid-stream reset")
    assert int(dut.rd_data.value) == 0, "reset must clear rd_data"
    await step(dut, wr_en=1, wr_data=0x3)
    await step(dut, rd_en=1)
    assert int(dut.rd_data.value) == 0x3, "FIFO does not work after a mid-stream reset"
